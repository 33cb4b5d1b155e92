"""Redelivering failed webhook deliveries: GitHub never retries on its own.

Lists the app's recent deliveries (app JWT), finds those whose every attempt failed and asks
GitHub to send them again — bounded per run, each delivery asked for once.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

import cachetools
import gidgethub
from gidgethub.abc import GitHubAPI

log = logging.getLogger(__name__)

MAX_DELIVERIES = 1000


class Redeliverer:
    def __init__(self, *, window: timedelta = timedelta(hours=3), per_run: int = 25) -> None:
        self.window = window
        self.per_run = per_run
        self._asked: cachetools.TTLCache[str, bool] = cachetools.TTLCache(
            maxsize=10_000, ttl=int(window.total_seconds()) * 2)

    async def run(self, app: GitHubAPI, now: datetime) -> int:
        since = now - self.window
        attempts: dict[str, list[dict[str, Any]]] = {}
        seen = 0
        async for delivery in app.getiter("/app/hook/deliveries?per_page=100"):
            delivered = datetime.fromisoformat(
                str(delivery["delivered_at"]).replace("Z", "+00:00"))
            seen += 1
            if delivered < since or seen > MAX_DELIVERIES:
                break
            attempts.setdefault(str(delivery["guid"]), []).append(delivery)
        asked = 0
        for guid, tries in attempts.items():
            if asked >= self.per_run:
                break
            if guid in self._asked or any(_succeeded(t) for t in tries):
                continue
            latest = max(tries, key=lambda t: str(t["delivered_at"]))
            try:
                await app.post(f"/app/hook/deliveries/{latest['id']}/attempts", data=b"")
            except gidgethub.GitHubException as exc:
                log.warning("redelivery request failed", extra={"guid": guid, "error": str(exc)})
                continue
            self._asked[guid] = True
            asked += 1
            log.info("asked GitHub to redeliver a failed delivery",
                     extra={"guid": guid, "event": latest.get("event"),
                            "status_code": latest.get("status_code")})
        return asked


def _succeeded(delivery: dict[str, Any]) -> bool:
    code = delivery.get("status_code")
    return isinstance(code, int) and 200 <= code < 300

