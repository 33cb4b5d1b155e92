"""Issues, labels, comments, reactions and reviews: their JSON, state changes with webhooks,
and routes. The pull request's JSON lives here too, as GitHub serves pulls as issues.

A resource family, peer of the others: it may import the store, the errors, faults and
limits, the route table, accounts, webhooks and the other families; never the driver, the
dispatcher or the composed `Ops`.
"""
