"""Checks, statuses and deployments: check runs and suites, commit statuses, required
contexts, deployments and their statuses: JSON, state changes with webhooks, routes.

A resource family, peer of the others: it may import the store, the errors, faults and
limits, the route table, accounts, webhooks and the other families; never the driver, the
dispatcher or the composed `Ops`.
"""
