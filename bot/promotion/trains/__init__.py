"""Release trains: one PR that moves several services (`opener.py`, `body.py`), which trains
to open and when (`flows.py`), and groups whose release enters as one train (`together.py`).
It imports opening, evidence and authorship; never the gate.
"""
