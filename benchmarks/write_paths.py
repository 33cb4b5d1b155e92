"""Writes per path: the content-creating requests (`POST`, `PATCH`, `PUT`, `DELETE`) each of
Conveyor's paths makes on GitHub, beside the floor of that path.

GitHub allows an installation about 80 content-creating requests a minute and 500 an hour, so
the writes a promotion costs are the product's throughput. Each path is played over HTTP on the
bundled emulator (`tests/harness.py`: the real bot, every request checked against GitHub's
description) in the demo organisation, where staging also rolls back on a failure report; the
writes are those of the installation, from a quiet start until nothing is left to do (the
dashboard's debounce and the delivery read fired).

The floor of a path is the writes the product's contract cannot do without on GitHub, each with
its reason (`Need.why`); a write above it is listed in `ABOVE` with the reason it is made.
`tests/flows/test_write_budget.py` asserts every path's writes exactly, on a server that signs
Conveyor's commits (github.com) and on one that does not (GitHub Enterprise Server without web
commit signing).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bot.names import CONFIG_CHECK, GATE_CHECK, RECEIPT_CHECK
from bot.promotion.resync.reconcile import resync_installation
from bot.sandbox.demo import DEMO_FILES, DEMO_POLICY, ORG
from conveyor_emulator.faults.requestlog import RequestEntry
from tests.flows.gitops import ArgoCD
from tests.harness import World, close_world, make_world

CONTENT = ("POST", "PATCH", "PUT", "DELETE")
R = "/repos/{owner}/{repo}"
CHECK_RUNS = R + "/check-runs"
CHECK_RUN = R + "/check-runs/{check_run_id}"
FAILURE_MARK = "conveyor/reported-failing (web in staging)"

Write = tuple[str, str, str]  # method, route template, the check run's name (else "")


@dataclass(frozen=True)
class Need:
    write: Write
    why: str


BRANCH = Need(("POST", R + "/git/refs", ""),
              "the branch: a commit through the contents API needs a branch that exists")
FILE_COMMIT = Need(("PUT", R + "/contents/{path}", ""), "the one commit that changes the file")
GIT_COMMIT = Need(("POST", R + "/git/commits", ""),
                  "the one commit changing every file of the train")
PULL = Need(("POST", R + "/pulls", ""), "the pull request")
LABELS = Need(("POST", R + "/issues/{issue_number}/labels", ""),
              "its labels (`conveyor`, `env/<env>`, and `train` or `rollback`): `POST /pulls` "
              "takes no labels (title, head, head_repo, base, body, maintainer_can_modify, "
              "draft, issue)")
GATE = Need(("POST", CHECK_RUNS, GATE_CHECK),
            "the gate on the new head: a required check, and GitHub refuses a merge without it")
GATE_PASSES = Need(("PATCH", CHECK_RUN, GATE_CHECK),
                   "the gate turns success once evidence, soak and approval hold")
MERGE = Need(("PUT", R + "/pulls/{pull_number}/merge", ""),
             "the merge (`auto_merge` of an ungated environment)")
CONFIG_PR = Need(("POST", CHECK_RUNS, CONFIG_CHECK),
                 "`conveyor/config-check` on the pull request that waits for a person")
CONFIG_PUSH = Need(("POST", CHECK_RUNS, CONFIG_CHECK),
                   "`conveyor/config-check` on the push to the default branch (the merge)")
DEPLOYMENT = Need(("POST", R + "/deployments", ""),
                  "the source repository's deployment of the commit in the environment")
DEPLOYMENT_STATUS = Need(("POST", R + "/deployments/{deployment_id}/statuses", ""),
                         "its `success` status linking the promotion (a deployment is created "
                         "without one)")
SOURCE_COMMENT = Need(("POST", R + "/issues/{issue_number}/comments", ""),
                      "the comment on the source pull request naming where its commit runs")
SOURCE_COMMENT_EDIT = Need(("PATCH", R + "/issues/comments/{comment_id}", ""),
                           "that comment, edited as the commit reaches the next environment")
DASHBOARD = Need(("PATCH", R + "/issues/{issue_number}", ""),
                 "the dashboard issue: what runs where changed (one edit after a merge, with "
                 "the delivery figures read again)")
DASHBOARD_OPENED = Need(("PATCH", R + "/issues/{issue_number}", ""),
                        "the dashboard issue: an open promotion appears beside its service")
REPLY = Need(("POST", R + "/issues/{issue_number}/comments", ""),
             "the reply to the command")
MARK = Need(("POST", CHECK_RUNS, FAILURE_MARK),
            "the mark that the digest was reported failing (later environments' gates read "
            "it)")
WATCH_COMMENT = Need(("POST", R + "/issues/{issue_number}/comments", ""),
                     "the comment on the promotion that caused the rollback")
GATE_FAILS = Need(("PATCH", CHECK_RUN, GATE_CHECK),
                  "the gate of the digest's open promotion to production fails: reported "
                  "failing in staging")

# Writes above a floor, each with why it is made.
TREE = Need(("POST", R + "/git/trees", ""),
            "the tree of the train's commit (every changed file inline, GitHub writes the "
            "blobs): REST makes a commit of several files in two requests, tree and commit. "
            "GraphQL's `createCommitOnBranch` makes it in one on an existing branch; Conveyor "
            "writes through REST alone (one client, one rate-limit state, one API description "
            "to check every request against), and a train's one extra write is shared by all "
            "the services it moves")
RECEIPT = Need(("POST", CHECK_RUNS, RECEIPT_CHECK),
               "the commit's receipt `conveyor/commit`, only where GitHub did not sign the "
               "commit (a GitHub Enterprise Server without web commit signing): there it is "
               "the only proof that the commit is Conveyor's")
MARK_OUTCOME = Need(("PATCH", CHECK_RUN, FAILURE_MARK),
                    "the mark again, with the rollback's number: it is written `pending` "
                    "before the rollback is opened, so that a restart in between finishes the "
                    "rollback instead of losing it or opening a second one")
GATE_SOAKED = Need(("PATCH", CHECK_RUN, GATE_CHECK),
                   "the gate when the soak ends before the approval: `in_progress` (soaking "
                   "until …) becomes `action_required` (only the approval is missing), so that "
                   "approvers see it is theirs to give")


@dataclass(frozen=True)
class PathWrites:
    """One path: its name, its floor, the writes above it (with their reasons) on a server
    that signs Conveyor's commits and on one that does not, and how it is played."""

    name: str
    floor: tuple[Need, ...]
    above: tuple[Need, ...]
    above_unsigned: tuple[Need, ...]

    def expected(self, *, signing: bool) -> Counter[Write]:
        extra = self.above if signing else self.above + self.above_unsigned
        return Counter(need.write for need in (*self.floor, *extra))


def writes(entries: Sequence[RequestEntry]) -> Counter[Write]:
    """The installation's content-creating requests (its app-level token request apart)."""
    return Counter((e.method, e.path, e.check_name) for e in entries
                   if e.method in CONTENT and e.installation_id is not None)


def described(found: Counter[Write]) -> str:
    return ", ".join(f"{n}× {m} {p.removeprefix(R)}{f' ({c})' if c else ''}"
                     for (m, p, c), n in sorted(found.items()))


# -- the world --------------------------------------------------------------------------------
POLICY = DEMO_POLICY.replace(
    "    auto_merge: true\n",
    "    auto_merge: true\n    on_failure: rollback\n    watch: 1h\n"
    "    deployed_context: argocd/{service}-{env}\n    deployed_by: [\"argocd[bot]\"]\n", 1)
ARGOCD = "argocd"
SRE = "dave"
RESYNC_INTERVAL = timedelta(minutes=10)


async def start(*, signing: bool | None = None) -> World:
    """The demo organisation whose staging rolls back on a failure report from Argo CD."""
    world = await make_world(files={**DEMO_FILES, ".github/conveyor.yml": POLICY},
                             signing=signing)
    ArgoCD(world, app_slug=ARGOCD).install()
    return world


async def quiesce(world: World) -> None:
    """Settle, firing the timers due within a minute (the dashboard's debounce, the delivery
    read after a merge) one time after the other, as they come due, until none is left."""
    for _ in range(100):
        await world.settle()
        soon = [when for when in world.conveyor.ctx.scheduler.pending().values()
                if when <= world.clock.now + timedelta(seconds=60)]
        if not soon:
            return
        world.clock.now = max(world.clock.now, min(soon))
        world.conveyor.ctx.scheduler.fire_due()
    raise RuntimeError("the world did not settle")


async def ship(world: World, service: str, version: str) -> None:
    """A source pull request merged, then CI publishes the image and the release."""
    source = f"{ORG}/{service}"
    branch = f"feature/{version}"
    await world.emulator.push_files(source, {"CHANGELOG.md": f"# {version}\n"}, branch=branch,
                                    author="alice", message=f"Prepare {version}")
    pr = await world.emulator.open_pull(source, branch, title=f"Prepare {version}",
                                        author="alice")
    await world.emulator.merge_pull(source, int(pr["number"]), user="bob")
    await world.settle()
    await world.release(service, version)
    await quiesce(world)


async def argo_reports(world: World, service: str, sha: str, state: str = "success") -> None:
    await ArgoCD(world, app_slug=ARGOCD).status(f"{service}-staging", sha, state)
    await quiesce(world)


async def command(world: World, number: int, text: str, user: str = "bob") -> None:
    await world.emulator.comment(world.repo, number, user, text)
    await quiesce(world)


async def through_approval_and_merge(world: World, title: str) -> None:
    """The soak ends, an SRE approves and merges."""
    pr = world.pull(title, state="open")
    world.clock.advance(minutes=31)
    world.conveyor.ctx.scheduler.fire_due()
    await quiesce(world)
    await world.emulator.review(world.repo, int(pr["number"]), SRE, "APPROVE")
    await quiesce(world)
    await world.emulator.merge_pull(world.repo, int(pr["number"]), user=SRE)
    await quiesce(world)


def staging_pr(world: World, service: str, version: str) -> dict[str, Any]:
    return world.pull(f"Promote {service} {version} to staging")


Step = Callable[[World], Awaitable[None]]


async def measured(world: World, step: Step) -> Counter[Write]:
    await quiesce(world)
    world.emulator.requests.reset()
    await step(world)
    await quiesce(world)
    return writes(world.emulator.requests.entries)


# -- the paths --------------------------------------------------------------------------------
async def release_to_entry(world: World) -> Counter[Write]:
    """web 1.1.0 released: its staging PR opened and auto-merged, and what the merge sets off."""
    await ship(world, "web", "1.0.0")
    return await measured(world, lambda w: ship(w, "web", "1.1.0"))


async def promote_opened(world: World) -> Counter[Write]:
    """`/promote production` on web 1.1.0's merged staging PR, once Argo CD reported it."""
    await ship(world, "web", "1.1.0")
    staging = staging_pr(world, "web", "1.1.0")
    await argo_reports(world, "web", staging["merge_commit_sha"])
    return await measured(world, lambda w: command(w, int(staging["number"]),
                                                   "/promote production"))


async def promote_through_merge(world: World) -> Counter[Write]:
    """The same promotion, then its soak, an approval and the merge."""
    await ship(world, "web", "1.1.0")
    staging = staging_pr(world, "web", "1.1.0")
    await argo_reports(world, "web", staging["merge_commit_sha"])

    async def step(w: World) -> None:
        await command(w, int(staging["number"]), "/promote production")
        await through_approval_and_merge(w, "Promote web 1.1.0 to production")
    return await measured(world, step)


async def train_through_merge(world: World) -> Counter[Write]:
    """`/promote production storefront` (web and api) in an issue, soak, approval, merge."""
    await ship(world, "web", "1.1.0")
    await ship(world, "api", "1.1.0")
    head = world.emulator.commit(world.repo, "main")["sha"]
    await argo_reports(world, "web", head)
    await argo_reports(world, "api", head)
    created = await world.emulator.open_issue(world.repo, "Release the storefront",
                                              author="alice")
    await quiesce(world)

    async def step(w: World) -> None:
        await command(w, int(created["number"]), "/promote production storefront")
        await through_approval_and_merge(w, "Promote storefront to production (2 services)")
    return await measured(world, step)


async def rollback_command(world: World) -> Counter[Write]:
    """`/rollback web staging` after 1.1.0: back to 1.0.0, auto-merged."""
    await ship(world, "web", "1.0.0")
    await ship(world, "web", "1.1.0")
    created = await world.emulator.open_issue(world.repo, "web 1.1.0 is slow", author="alice")
    await quiesce(world)
    return await measured(world, lambda w: command(w, int(created["number"]),
                                                   "/rollback web staging"))


async def failure_rollback(world: World) -> Counter[Write]:
    """Argo CD reports web 1.1.0 failing in staging ten minutes after its merge, while its
    promotion to production is open: the rollback is opened and merged by itself."""
    await ship(world, "web", "1.0.0")
    await ship(world, "web", "1.1.0")
    staging = staging_pr(world, "web", "1.1.0")
    await argo_reports(world, "web", staging["merge_commit_sha"])
    await command(world, int(staging["number"]), "/promote production")
    world.clock.advance(minutes=10)
    return await measured(world, lambda w: argo_reports(w, "web", staging["merge_commit_sha"],
                                                        "failure"))


async def idle_hour(world: World) -> Counter[Write]:
    """Six resyncs ten minutes apart, no event: an open gated promotion and the dashboard."""
    await ship(world, "web", "1.1.0")
    staging = staging_pr(world, "web", "1.1.0")
    await argo_reports(world, "web", staging["merge_commit_sha"])
    await command(world, int(staging["number"]), "/promote production")
    installation = world.demo.installation_id
    gh = await world.conveyor.ctx.clients.installation(installation)

    async def resyncs(w: World) -> None:
        for _ in range(6):
            w.clock.now += RESYNC_INTERVAL
            await resync_installation(w.conveyor.capabilities.resync, gh, installation)
            await quiesce(w)
    await resyncs(world)  # the first resyncs tidy up (merged promotions' branches)
    return await measured(world, resyncs)


Play = Callable[[World], Awaitable[Counter[Write]]]


@dataclass(frozen=True)
class Path:
    writes: PathWrites
    play: Play


PATHS: tuple[Path, ...] = (
    Path(PathWrites(
        "release → entry-environment PR with auto-merge",
        floor=(BRANCH, FILE_COMMIT, PULL, LABELS, GATE, MERGE, CONFIG_PUSH, DEPLOYMENT,
               DEPLOYMENT_STATUS, SOURCE_COMMENT, DASHBOARD),
        above=(), above_unsigned=(RECEIPT,)), release_to_entry),
    Path(PathWrites(
        "`/promote` to a gated environment: opened",
        floor=(REPLY, BRANCH, FILE_COMMIT, PULL, LABELS, GATE, CONFIG_PR, DASHBOARD_OPENED),
        above=(), above_unsigned=(RECEIPT,)), promote_opened),
    Path(PathWrites(
        "`/promote` to a gated environment through soak, approval and merge",
        floor=(REPLY, BRANCH, FILE_COMMIT, PULL, LABELS, GATE, CONFIG_PR, DASHBOARD_OPENED,
               GATE_PASSES, CONFIG_PUSH, DEPLOYMENT, DEPLOYMENT_STATUS, SOURCE_COMMENT_EDIT,
               DASHBOARD),
        above=(GATE_SOAKED,), above_unsigned=(RECEIPT,)), promote_through_merge),
    Path(PathWrites(
        "release train of 2 services to production, through soak, approval and merge",
        floor=(REPLY, GIT_COMMIT, BRANCH, PULL, LABELS, GATE, CONFIG_PR, DASHBOARD_OPENED,
               GATE_PASSES, CONFIG_PUSH, DEPLOYMENT, DEPLOYMENT_STATUS, SOURCE_COMMENT_EDIT,
               DEPLOYMENT, DEPLOYMENT_STATUS, SOURCE_COMMENT_EDIT, DASHBOARD),
        above=(TREE, GATE_SOAKED), above_unsigned=(RECEIPT,)), train_through_merge),
    Path(PathWrites(
        "`/rollback` of the entry environment (auto-merged)",
        floor=(REPLY, BRANCH, FILE_COMMIT, PULL, LABELS, GATE, MERGE, CONFIG_PUSH,
               DEPLOYMENT_STATUS, SOURCE_COMMENT_EDIT, DASHBOARD),
        above=(), above_unsigned=(RECEIPT,)), rollback_command),
    Path(PathWrites(
        "failure report → automatic rollback (`on_failure: rollback`)",
        floor=(MARK, BRANCH, FILE_COMMIT, PULL, LABELS, GATE, MERGE, WATCH_COMMENT,
               GATE_FAILS, CONFIG_PUSH, DEPLOYMENT_STATUS, SOURCE_COMMENT_EDIT, DASHBOARD),
        above=(MARK_OUTCOME,), above_unsigned=(RECEIPT,)), failure_rollback),
    Path(PathWrites("an idle hour: six resyncs, no event", floor=(), above=(),
                    above_unsigned=()), idle_hour),
)


async def play(path: Path, *, signing: bool | None = None) -> Counter[Write]:
    world = await start(signing=signing)
    try:
        found = await path.play(world)
        if world.emulator.violations:
            raise RuntimeError(f"requests GitHub would refuse: {world.emulator.violations}")
        return found
    finally:
        await close_world(world)
