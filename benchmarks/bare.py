"""The baseline server of the acknowledgement benchmark: `python -m benchmarks.bare PORT PATH`.

The least any webhook receiver does: read the body and answer 202. Same aiohttp, same event
loop policy and no access log, like `python -m bot serve`. It imports nothing of the bot, so
that it starts in a fraction of the bot's time.
"""

from __future__ import annotations

import sys

from aiohttp import web


async def accept(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(status=202)


async def healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def main(argv: list[str]) -> int:
    app = web.Application(client_max_size=25 * 1024 * 1024 + 1)
    app.router.add_post(argv[1], accept)
    app.router.add_get("/healthz", healthz)
    web.run_app(app, host="127.0.0.1", port=int(argv[0]), print=None, access_log=None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
