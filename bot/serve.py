"""`python -m bot serve`: the production webhook server."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from aiohttp import web

from .handlers import build_router
from .logs import configure_logging, register_secret
from .server import create_app
from .settings import load_settings
from .tasks import background_tasks

log = logging.getLogger(__name__)


def run_server() -> int:
    settings = load_settings()
    configure_logging(settings.log_level)
    register_secret(settings.webhook_secret)
    register_secret(settings.private_key.strip())
    redis_password = urlsplit(settings.redis_url).password if settings.redis_url else None
    if redis_password:
        register_secret(redis_password)
    app = create_app(settings, build_router(), background=background_tasks)
    log.info(
        "conveyor listening",
        extra={"host": settings.host, "port": settings.port, "api_url": settings.api_url},
    )
    web.run_app(
        app,
        host=settings.host,
        port=settings.port,
        print=None,
        shutdown_timeout=settings.shutdown_grace + 5,
        access_log=None,
    )
    return 0
