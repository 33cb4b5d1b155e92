"""7. GitHub's content-creation budget: the writes of each path beside its floor
(`write_paths.py`), on a server that signs Conveyor's commits and on one that does not; then a
30-service release train against 30 single-service promotions of the same change, on the
bundled emulator (which answers 403 + Retry-After above 80 writes a minute or 500 an hour, as
GitHub does).

Time is virtual (the bot's rate limiter and the emulator share it), so a minute of pacing
costs no wall-clock minute; the figures are counts and virtual seconds.
"""

from __future__ import annotations

import asyncio
import math

from tests.flows.test_trains import MANY, image, issue, kustomization, many_services_files
from tests.harness import close_world, make_world

from .report import Section
from .write_paths import DASHBOARD, PATHS, play

CONTENT = ("POST", "PATCH", "PUT", "DELETE")


def peak(times: list[float], span: float) -> int:
    times = sorted(times)
    best, first = 0, 0
    for last, at in enumerate(times):
        while times[first] <= at - span:
            first += 1
        best = max(best, last - first + 1)
    return best


def pacing_floor(writes: int, per_minute: int = 80, per_hour: int = 500) -> float:
    """The least time `writes` content-creating requests take within GitHub's budget: each
    further 80 wait for the next minute, each further 500 for the next hour."""
    if writes <= 0:
        return 0.0
    return max(60.0 * (math.ceil(writes / per_minute) - 1),
               3600.0 * (math.ceil(writes / per_hour) - 1))


async def measure(*, train: bool, services: int) -> dict[str, float]:
    world = await make_world(files=many_services_files("1.0.0"))
    try:
        await world.emulator.push_files(world.repo, {
            f"apps/svc{i:02d}/staging.yaml": kustomization(image(f"svc{i:02d}", "2.0.0"))
            for i in range(MANY)}, message="Stage 2.0.0 everywhere")
        for i in range(MANY):
            name, version, digest = image(f"svc{i:02d}", "2.0.0")
            await world.emulator.publish_container("acme", name, digest, [version],
                                                   source_repo="acme/web")
        await world.settle()
        number = await issue(world)
        world.emulator.requests.reset()
        started = world.time.now()
        commands = (["/promote production --all"] if train else
                    [f"/promote svc{i:02d} 2.0.0 production" for i in range(services)])
        await asyncio.gather(*(world.emulator.comment(world.repo, number, "alice", text)
                               for text in commands))
        await world.settle(rounds=4000)
        writes = [e.at for e in world.emulator.requests.entries
                  if e.method in CONTENT and e.installation_id is not None]
        waited = sum(s.value for family in world.conveyor.ctx.metrics.github_wait_seconds.collect()
                     for s in family.samples
                     if s.name.endswith("_total") and s.labels["reason"] == "pacing")
        counted = [e for e in world.emulator.requests.entries if e.installation_id is not None]
        return {"prs": len(world.open_pulls()), "writes": len(writes),
                "requests": len(counted), "floor_seconds": pacing_floor(len(writes)),
                "peak_minute": peak(writes, 60), "peak_hour": peak(writes, 3600),
                "paced_seconds": round(waited, 1),
                "virtual_seconds": round(world.time.now() - started, 1),
                "refused": len(world.emulator.secondary.opened)}
    finally:
        await close_world(world)


async def path_rows(section: Section) -> None:
    """Each path's writes, on a server that signs Conveyor's commits and on one that does
    not, beside its floor and the writes named above it."""
    for path in PATHS:
        signed = await play(path, signing=True)
        unsigned = await play(path, signing=False)
        floor = len(path.writes.floor)
        above = [need.write for need in path.writes.above]
        extra = "; above it " + ", ".join(
            f"{m} {p.removeprefix('/repos/{owner}/{repo}')}{f' ({c})' if c else ''}"
            for m, p, c in above) if above else ""
        ok = signed == path.writes.expected(signing=True) and \
            unsigned == path.writes.expected(signing=False)
        receipts = sum(unsigned.values()) - sum(signed.values())
        section.add(
            f"writes: {path.writes.name}",
            f"{sum(signed.values())} (floor {floor}{extra}); {sum(unsigned.values())} where "
            f"GitHub does not sign Conveyor's commits (+{receipts} `conveyor/commit`)",
            target="floor + the writes named in docs/performance.md", ok=ok)
        section.data.setdefault("paths", {})[path.writes.name] = {
            "signed": sorted(f"{n}× {m} {p} {c}".strip() for (m, p, c), n in signed.items()),
            "unsigned": sorted(f"{n}× {m} {p} {c}".strip()
                               for (m, p, c), n in unsigned.items()),
            "floor": [f"{n.write[0]} {n.write[1]} {n.write[2]}".strip() + f": {n.why}"
                      for n in path.writes.floor],
            "above": [f"{n.write[0]} {n.write[1]} {n.write[2]}".strip() + f": {n.why}"
                      for n in (*path.writes.above, *path.writes.above_unsigned)],
        }
        if path.writes.name.endswith(": opened"):
            opened = sum(signed.values()) - signed[DASHBOARD.write]
            section.add("writes to open one promotion from a command (the dashboard's edit "
                        "apart: one per 5 s debounce, shared)",
                        f"{opened}: about {500 // opened} promotions an hour within 500",
                        target="≤ 7", ok=opened <= 7)


async def run(quick: bool) -> Section:
    services = 10 if quick else MANY
    section = Section(f"7. GitHub's content-creation budget: writes per path; {services} "
                      "services to production")
    await path_rows(section)
    rows = {"one release train": await measure(train=True, services=services),
            f"{services} single-service promotions": await measure(train=False,
                                                                   services=services)}
    for name, got in rows.items():
        floor = got["floor_seconds"]
        section.add(
            f"{name}: time against the pacing floor of its writes",
            f"{got['virtual_seconds']:.0f} s for {got['writes']:.0f} writes, floor "
            f"{floor:.0f} s ({got['requests']:.0f} requests in all, reads included, which "
            "are not paced)",
            target="≤ 1.2 × floor", ok=got["virtual_seconds"] <= 1.2 * floor)
        section.add(
            name,
            f"{got['prs']:.0f} PR(s), {got['writes']:.0f} writes; at most "
            f"{got['peak_minute']:.0f} in a minute and {got['peak_hour']:.0f} in an hour; "
            f"{got['paced_seconds']:.0f} s paced ({got['virtual_seconds']:.0f} s in all); "
            f"{got['refused']:.0f} secondary-limit 403s",
            target="≤ 80 a minute, ≤ 500 an hour, no 403",
            ok=got["peak_minute"] <= 80 and got["peak_hour"] <= 500 and got["refused"] == 0)
    section.data.update({name: got for name, got in rows.items()})
    return section
