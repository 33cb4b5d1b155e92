"""Orchestration on GitHub: everything that reads a deployment repository and writes pull
requests, check runs and comments. The modules directly here are shared by every capability:
which repositories are deployment repositories and their policy (`policies.py`), the renders
of their environments (`builds.py`: Kustomize builds and Helm charts) and what a promotion's
edit changes in them (`effects.py`). The capabilities are the subpackages,
each below the ones that use it: authorship, evidence, opening, history, the gate, trains,
triggers, watching, the dashboard, commands, the resync (and the config check beside them);
`tests/test_import_graph.py` holds the order.
"""
