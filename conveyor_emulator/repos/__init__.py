"""Repositories and git: contents, commits, refs, trees, archives, their JSON and routes, and
the `push` webhook's payload.

A resource family, peer of the others: it may import the store, the errors, faults and
limits, the route table, accounts, webhooks and the other families; never the driver, the
dispatcher or the composed `Ops`.
"""
