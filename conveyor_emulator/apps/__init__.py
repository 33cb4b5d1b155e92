"""The app and its installations: JWTs and installation tokens (`auth.py`), the app's JSON and
routes, the manifest flow's check of events against permissions, the permission each route
needs, and the operations GitHub refuses to installation tokens (with their data files).

A resource family, peer of the others: it may import the store, the errors, faults and
limits, the route table, accounts, webhooks and the other families; never the driver, the
dispatcher or the composed `Ops`.
"""
