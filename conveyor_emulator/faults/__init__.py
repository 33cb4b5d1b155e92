"""Faults and limits: fault switches with a seeded RNG and rate-limit accounting
(`switches.py`), GitHub's size limits (`limits.py`), and the request log (`requestlog.py`).
It imports only GitHub's errors.
"""
