"""Releases and packages: releases and their tags with the `release` webhooks, container
package versions with their `registry_package`/`package` payloads and attestations.

A resource family, peer of the others: it may import the store, the errors, faults and
limits, the route table, accounts, webhooks and the other families; never the driver, the
dispatcher or the composed `Ops`.
"""
