"""The verdict of `conveyor/promotion-gate`: the gate's facts and answer as plain values
(`model.py`), the conditions on one changed image (`evidence.py`) and on reviews
(`reviews.py`), and the checklist assembled and judged (`verdict.py`). Pure: it imports only
`bot.domain` and `bot.text`.
"""
