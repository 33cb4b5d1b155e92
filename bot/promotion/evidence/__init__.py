"""Evidence from environments: deployment reports (`deployed.py`), the failure mark of a digest
(`failure_mark.py`), the search for a digest's evidence upstream (`finder.py`) and whether a
mark halts `promote: auto` (`halts.py`). It imports the domain, the manifests reader, the
GitHub edge and `bot.promotion.authorship`; the gate, trains and the watch use it.
"""
