"""What must hold at the end of a fault run, whatever happened during it.

- every single-service promotion (service, environment, digest) has exactly one PR; every
  release train (group and digest set) one PR; no two PRs of one rollback branch were ever
  open at once, there are no more rollback PRs than rollbacks asked for or reported, and none
  is left open (staging merges them);
- no `conveyor/` branch is left without an open or a merged PR;
- staging runs the last release of every service (its file pins it) and merged it once, and
  no PR is left open there (it merges its own);
- production has exactly one open single-service PR per service, for that same digest; at
  most one release train of the group is open;
- every open PR has its gate, and the gate is the right verdict (`action_required`: only the
  approval is missing); no commit carries two check runs of one name by the app;
- every command comment got one reply at most (exactly one where deliveries survive a
  killed process: on Redis);
- no request was sent inside a secondary-limit window its credentials had been told of, and
  the emulator saw no request GitHub would refuse.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from itertools import pairwise
from typing import Any

from bot.domain.promotions.marker import PromotionMarker, parse_marker
from bot.names import GATE_CHECK
from bot.promotion.commands.replies import REPLY_MARKER
from bot.sandbox.demo import DEPLOY_REPO
from conveyor_emulator import Emulator
from tests.reliability.fault_drive import GROUP, Record

STAGING_FILES = {"web": "apps/web/overlays/staging/kustomization.yaml",
                 "api": "charts/api/values-staging.yaml",
                 "worker": "apps/worker/staging.yaml"}

# A request already on its way when another one was told to wait arrives inside the window
# without the bot having known: only what arrives later than this after it opened was sent
# by a bot that knew. Windows belong to credentials, as GitHub counts them ("Rate limits for
# GitHub Apps"): an installation's token (`installation:<id>`) or the app's JWT (`app`, which
# mints the tokens); the emulator keys them so and a window binds only its own key. The
# emulator's own stalls after the window opened are added: it stamps an arrival when it gets
# to the request, which a loaded machine can delay past this.
IN_FLIGHT = 0.25
# After a restart the replicas reconnect to Redis within their retry backoff (redis-py's, at
# most a few tenths of a second) and a hold told meanwhile stayed in the replica's memory.
REDIS_BACK = 2.0


def conveyor_prs(emulator: Emulator) -> list[tuple[dict[str, Any], PromotionMarker]]:
    return [(pr, marker) for pr in emulator.pulls(DEPLOY_REPO, state="all")
            if str(pr["head"]["ref"]).startswith("conveyor/")
            and (marker := parse_marker(pr.get("body"))) is not None]


def check(emulator: Emulator, record: Record, *, replies_survive: bool,
          redis_away: Sequence[tuple[float, float]] = ()) -> list[str]:
    prs = conveyor_prs(emulator)
    return [*exactly_once(emulator, prs, record), *end_state(emulator, prs, record),
            *gates(emulator, prs), *replies(emulator, record, replies_survive),
            *[f"sent inside a secondary-limit window: {hit.method} {hit.path}, "
              f"{hit.at - opened:.2f} s after it opened"
              for hit, opened in sent_inside_windows(emulator, redis_away)[:5]],
            *[f"emulator: {v}" for v in emulator.violations[:5]]]


def exactly_once(emulator: Emulator, prs: list[tuple[dict[str, Any], PromotionMarker]],
                 record: Record) -> list[str]:
    problems: list[str] = []
    singles = Counter((m.service, m.environment, m.digest) for _pr, m in prs
                      if m.kind == "promotion" and not m.is_train)
    problems += [f"{n} PRs for {key}" for key, n in singles.items() if n > 1]
    trains = Counter(str(pr["head"]["ref"]) for pr, m in prs if m.is_train)
    problems += [f"{n} PRs for the train {branch}" for branch, n in trains.items() if n > 1]
    rollbacks = [(pr, m) for pr, m in prs if m.kind == "rollback" and not m.is_train]
    asked = record.done["rollback"] + record.done["failure report"]
    if len(rollbacks) > asked:
        problems.append(f"{len(rollbacks)} rollback PRs for {asked} rollbacks asked or reported")
    problems += [f"rollback #{pr['number']} left open" for pr, _m in rollbacks
                 if pr["state"] == "open"]
    problems += overlapping(pr for pr, _m in rollbacks)
    owned = {pr["head"]["ref"] for pr in emulator.pulls(DEPLOY_REPO, state="all")
             if pr["state"] == "open" or pr.get("merged")}
    problems += [f"branch {b} has no open or merged PR" for b in emulator.branches(DEPLOY_REPO)
                 if b.startswith("conveyor/") and b not in owned]
    return problems


def overlapping(pulls: Any) -> list[str]:
    """PRs of one branch that were open at the same time."""
    by_branch: dict[str, list[tuple[datetime, datetime | None, int]]] = {}
    for pr in pulls:
        closed = pr.get("closed_at")
        by_branch.setdefault(str(pr["head"]["ref"]), []).append((
            datetime.fromisoformat(str(pr["created_at"]).replace("Z", "+00:00")),
            datetime.fromisoformat(str(closed).replace("Z", "+00:00")) if closed else None,
            int(pr["number"])))
    problems = []
    for branch, spans in by_branch.items():
        spans.sort()
        for (_start, end, number), (start, _end, later) in pairwise(spans):
            if end is None or start < end:
                problems.append(f"#{number} and #{later} of {branch} were open at once")
    return problems


def end_state(emulator: Emulator, prs: list[tuple[dict[str, Any], PromotionMarker]],
              record: Record) -> list[str]:
    problems: list[str] = []
    merged_staging = {(m.service, m.digest) for pr, m in prs
                      if m.environment == "staging" and m.kind == "promotion" and pr.get("merged")}
    for service, digests in record.released.items():
        latest = digests[-1]
        text = emulator.file(DEPLOY_REPO, STAGING_FILES[service]) or ""
        if latest not in text:
            problems.append(f"staging does not run {service}'s last release {latest[:19]}")
        if (service, latest) not in merged_staging:
            problems.append(f"staging never merged {service}'s last release {latest[:19]}")
        open_prs = [m.digest for pr, m in prs if pr["state"] == "open" and m.service == service
                    and m.environment == "production" and m.kind == "promotion"]
        if open_prs != [latest]:
            problems.append(f"production PRs of {service}: {[d[:19] for d in open_prs]}, "
                            f"wanted [{latest[:19]}]")
    problems += [f"#{pr['number']} ({m.service}) left open in staging, which merges its own"
                 for pr, m in prs if m.environment == "staging" and pr["state"] == "open"]
    trains = [pr["number"] for pr, m in prs if m.is_train and m.group == GROUP
              and m.environment == "production" and pr["state"] == "open"]
    if len(trains) > 1:
        problems.append(f"{len(trains)} trains of {GROUP} open: {trains}")
    return problems


def gates(emulator: Emulator, prs: list[tuple[dict[str, Any], PromotionMarker]]) -> list[str]:
    problems: list[str] = []
    for pr, marker in prs:
        sha = str(pr["head"]["sha"])
        runs = [run for run in emulator.check_runs(DEPLOY_REPO, sha)
                if (run.get("app") or {}).get("slug") == emulator.world.app_slug]
        problems += [f"{n} check runs {name} on #{pr['number']}'s head"
                     for name, n in Counter(run["name"] for run in runs).items() if n > 1]
        if pr["state"] != "open":
            continue
        gate = [run for run in runs if run["name"] == GATE_CHECK]
        if not gate:
            problems.append(f"#{pr['number']} ({marker.service}) has no gate")
        elif gate[-1]["conclusion"] != "action_required":
            problems.append(f"the gate of #{pr['number']} ({marker.service}) is "
                            f"{gate[-1]['status']}/{gate[-1]['conclusion']}, wanted "
                            "action_required")
    return problems


def replies(emulator: Emulator, record: Record, survive: bool) -> list[str]:
    """Each command comment answered once (at most once where a killed process takes its
    acknowledged deliveries with it: in memory)."""
    if record.issue is None:
        return []
    bodies = [str(c.get("body") or "") for c in emulator.comments(DEPLOY_REPO, record.issue)]
    problems = []
    for comment_id in record.commands:
        marker = REPLY_MARKER.format(comment_id=comment_id)
        n = sum(1 for body in bodies if marker in body)
        if n > 1 or (survive and n == 0):
            problems.append(f"command comment {comment_id} answered {n} times")
    return problems


def sent_inside_windows(emulator: Emulator, redis_away: Sequence[tuple[float, float]] = ()
                        ) -> list[tuple[Any, float]]:
    """Requests that arrived inside a window later than `IN_FLIGHT` after it opened, not
    counting the time the emulator's loop stalled meanwhile (`Emulator.stalls`). A window
    opened while Redis was away (`redis_away`: killed, back) binds only the replica that was
    told of it until the replicas share state again (the documented degraded mode of
    `bot/redisq/ratelimit.py`), so requests in it are not counted: another replica could not
    know."""
    found = []
    for hit in emulator.secondary.inside:
        opened = max((start for key, start, until in emulator.secondary.opened
                      if key == hit.key and start <= hit.at < until), default=None)
        if opened is None \
                or hit.at - opened <= IN_FLIGHT + emulator.stalls.within(opened, hit.at):
            continue
        if any(away <= opened <= back + REDIS_BACK for away, back in redis_away):
            continue
        found.append((hit, opened))
    return found


def writes(emulator: Emulator) -> int:
    """Requests that changed a repository, answered so far: the run is still moving while
    this grows (an idle resync only reads; its GraphQL query is a POST that writes nothing,
    and minting a token changes no repository)."""
    return sum(1 for entry in emulator.requests.entries
               if entry.method in ("POST", "PATCH", "PUT", "DELETE") and entry.status < 400
               and "/repos/" in entry.url_path)
