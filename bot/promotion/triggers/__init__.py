"""What an event sets in motion: an image event becomes promotion PRs (`flows.py`), a merged
promotion opens the next environments and re-runs open gates (`downstream.py`), a published
image becomes promotions (`packages.py`), and what is
done with a PR opened into an ungated `auto_merge` environment: its gate posted, then merged
(`merging.py`, handed to the openers). It imports the gate, trains, opening, evidence and
authorship.
"""
