"""What Conveyor wrote and how it knows: the `conveyor/commit` receipt on each of its commits
GitHub did not sign (`receipts.py`), and what it trusts about a pull request because only
Conveyor can have written it (`trust.py`, reading the marker and the trailers of
`bot.domain.promotions`). It imports the GitHub edge and the runtime, nothing else of
`bot.promotion`.
"""
