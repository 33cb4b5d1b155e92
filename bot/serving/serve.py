"""`python -m bot serve`: the production webhook server."""

from __future__ import annotations

import gc
import logging
import socket
from urllib.parse import urlsplit

from aiohttp import web

from bot.attestations.trustfile import SETTING as SIGSTORE_TRUST
from bot.render.tool import chart_rendering_text, rendering_text
from bot.runtime.logs import configure_logging, register_secret
from bot.runtime.settings import Settings, SettingsError, check_trust_roots, load_settings
from bot.serving.fork import fork_workers
from bot.serving.front import create_intake_app, workers_of

log = logging.getLogger(__name__)

LISTEN_BACKLOG = 128


def listening_socket(host: str, port: int) -> socket.socket:
    """Bind and listen before anything else starts, so that a bad HOST or a port in use is one
    clear settings error instead of a traceback after the first GitHub calls."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise SettingsError(f"HOST {host!r} is not an address to listen on: {reason}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        raise SettingsError(f"HOST/PORT: cannot listen on {where}: {exc.strerror or exc}") \
            from None
    return sock


async def freeze_startup_heap(_app: web.Application) -> None:
    """What start-up made (modules, the app, its settings) lives as long as the process:
    frozen, a full collection no longer walks it. A full collection over those ~60,000 objects
    held the event loop for 25-40 ms, in the middle of a burst of deliveries. Reference counts
    still free what is let go of; a cycle made before this point and dropped later is kept."""
    gc.collect()
    gc.freeze()


def keep_secrets_out_of_logs(settings: Settings) -> None:
    register_secret(settings.webhook_secret)
    register_secret(settings.private_key.strip())
    redis_password = urlsplit(settings.redis_url).password if settings.redis_url else None
    if redis_password:
        register_secret(redis_password)


def run_server() -> int:
    """In memory mode, two processes: this one answers GitHub (`bot.serving.front`), the other
    runs the work (`bot.serving.workers`), forked from this one once its settings are read and
    its socket listens, before anything else starts (`bot.serving.fork`). With Redis, one: the
    answer waits for Redis to store the delivery, and replicas share the work."""
    # the roots of CONVEYOR_SIGSTORE_TRUST are checked where attestations are verified: in this
    # process with Redis, else in the workers process, which exits 2 naming the file
    settings = load_settings(check_roots=False)
    if settings.redis_url and settings.sigstore_trust is not None:
        check_trust_roots(settings.sigstore_trust)
    configure_logging(settings.log_level)
    keep_secrets_out_of_logs(settings)
    sock = listening_socket(settings.host, settings.port)
    if settings.redis_url:
        app = one_process_app(settings)
    else:
        app = create_intake_app(settings, fork_workers(settings, sock))
    app.on_startup.append(freeze_startup_heap)
    log.info("conveyor listening",
             extra={"host": settings.host, "port": sock.getsockname()[1],
                    "api_url": settings.api_url, "processes": 1 if settings.redis_url else 2,
                    "rendering": rendering_text(settings.kustomize),
                    "chart_rendering": chart_rendering_text(settings.helm),
                    "sigstore_roots": f"{settings.sigstore_trust.origin} ({SIGSTORE_TRUST})"
                    if settings.sigstore_trust else "TUF: Sigstore public-good and GitHub"})
    web.run_app(
        app,
        sock=sock,
        print=None,
        shutdown_timeout=settings.shutdown_grace + 5,
        access_log=None,
    )
    if settings.redis_url or not workers_of(app).ended_early:
        return 0
    return 2 if workers_of(app).exit_code == 2 else 1  # 2: the workers refused the settings


def one_process_app(settings: Settings) -> web.Application:
    # imported here: the intake process of memory mode loads no handler and no client
    from bot.runtime import offload
    from bot.serving.server import create_app
    from bot.serving.tasks import background_tasks

    worker = offload.start()
    log.debug("offload process started", extra={"pid": worker})
    return create_app(settings, background=background_tasks, serve_while_starting=True)
