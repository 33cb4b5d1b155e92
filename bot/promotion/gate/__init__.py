"""`conveyor/promotion-gate`: the facts of a pull request gathered (`pull_facts.py`,
`changes.py`, `build_changes.py`, `approvals.py`, `hold.py`), the verdict of `bot.domain.gate`
asked (`gatekeeper.py`) and posted as one check run per head commit (`checkrun.py`,
`render.py`). It imports evidence, opening (merging, provenance), authorship and the edges;
never trains, triggers, watching, the dashboard or commands.
"""
