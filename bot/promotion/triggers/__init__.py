"""What an event sets in motion: an image event becomes promotion PRs (`flows.py`), a merged
promotion opens the next environments and re-runs open gates (`downstream.py`). It imports
the gate, trains, opening, evidence and authorship.
"""
