"""Pull requests: opening, merging and reviewing with their webhooks, what a merge would do
now (`pull_merge.py`), and the routes.

A resource family, peer of the others: it may import the store, the errors, faults and
limits, the route table, accounts, webhooks and the other families; never the driver, the
dispatcher or the composed `Ops`.
"""
