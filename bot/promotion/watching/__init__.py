"""After the merge: a trusted failure report within `watch` and the rollback it starts
(`watch.py`, `rollback.py`), and the delivery figures of each repository (`delivery.py`,
`delivery_board.py`). It imports triggers (release times), history, evidence, opening and
authorship.
"""
