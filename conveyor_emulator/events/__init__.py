"""Webhooks: the payload envelope, signatures and emitting (`ops_core.py`, the base of every
family's state changes), and the signed deliveries sent in order (`webhooks.py`). A peer of
the resource families, whose JSON shapes its payloads use; like them it never imports the
driver, the dispatcher or the composed `Ops`.
"""
