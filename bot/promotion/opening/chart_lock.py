"""An umbrella chart's `Chart.lock`: Helm installs the dependency versions the lock file
records, so a promotion that edits `Chart.yaml` alone would leave the lock saying the old
version (and digest). Such a promotion is refused with what to do instead."""

from __future__ import annotations

from gidgethub.abc import GitHubAPI

from bot.domain.policy import Service
from bot.domain.promotions.refusals import chart_lock_path, chart_lock_refusal
from bot.github.repos import get_file


async def lock_refusal(gh: GitHubAPI, full_name: str, service: Service, path: str,
                       ref: str | None) -> str | None:
    """Why editing ``path`` would leave a stale `Chart.lock` beside it, or None."""
    lock = chart_lock_path(service, path)
    if lock is None or await get_file(gh, full_name, lock, ref) is None:
        return None
    return chart_lock_refusal(service, lock)
