"""Webhook handlers, one module per event family, composed into one router."""

from __future__ import annotations

from gidgethub import routing


def build_router() -> routing.Router:
    return routing.Router()
