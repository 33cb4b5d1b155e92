"""Running slash commands: each command's effect and the one reply that reports them.

The handler decides whether a comment is for Conveyor at all (not a bot, a deployment
repository, a command line, a user who may run commands); this module runs the parsed
commands in order and answers with one comment listing every outcome. A command that fails
says so in the reply — it never stops the commands after it and never goes unanswered.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from ..domain.commands import (
    HELP_TEXT,
    Command,
    CommandError,
    Help,
    Hold,
    Promote,
    PromoteExplicit,
    PromoteTrain,
    Recheck,
    Rollback,
    RollbackTrain,
    Status,
    Unhold,
)
from ..domain.gate import Verdict
from ..domain.policy import Policy
from ..domain.tags import version_from_tag
from ..domain.trains import ALL_GROUP, Period, previous_combination
from ..github.limits import fit
from ..github.repos import add_labels, comment, commit_for_ref, is_bot, remove_label
from ..names import GATE_CHECK, POLICY_PATH
from ..registry.errors import RegistryError
from ..text import error_text, escape_markdown, short_digest, shortened, unlinked
from .candidates import Candidate, Trigger, release_tag_variants
from .downstream import promote_downstream
from .flows import find_release
from .gatekeeper import HOLD_LABEL, HOLD_MARKER
from .marker import PromotionMarker, branch_name, parse_marker
from .merger import retry_stopped_merge
from .opener import Opener, OpenResult, find_pull_for_branch
from .policies import BrokenPolicy, DeploymentRepo
from .provenance import find_attestation, gather_provenance
from .rollback import choose_rollback, live_periods, read_history, rollback_note
from .status import render_status
from .train import TrainOpener, TrainResult
from .train_flows import promote_group
from .trust import opened_by_conveyor, trusted_marker
from .watch import Watcher

if TYPE_CHECKING:
    from ..services import Services

log = logging.getLogger(__name__)

__all__ = [
    "REPLY_MARKER",
    "Invocation",
    "Reply",
    "already_answered",
    "finish",
    "open_rollback_for",
    "permission_refusal",
    "permission_unknown",
    "policy_refusal",
    "run_commands",
    "watcher",
]

REPLY_MARKER = "<!-- conveyor:reply {comment_id} -->"
MAX_ECHO = 120


@dataclass(frozen=True)
class Invocation:
    """Where a command comment was written, and by whom."""

    repo: DeploymentRepo
    number: int
    is_pull: bool
    commenter: str
    comment_id: int

    @property
    def policy(self) -> Policy:
        return self.repo.policy


@dataclass
class Reply:
    """The one comment that answers a command comment: outcome blocks, then the help text
    when a command was unknown or malformed."""

    comment_id: int
    blocks: list[str] = field(default_factory=list)
    with_help: bool = False
    reevaluate: bool = False  # a command changed the hold: run the gate once it is posted

    def add(self, command: Command | CommandError | None, text: str) -> None:
        if command is None:
            self.blocks.append(text)
            return
        echo = f"**`{_echo(command.raw)}`**"
        self.blocks.append(f"{echo}\n\n{text}" if "\n" in text else f"{echo} {text}")

    def render(self) -> str:
        parts = [REPLY_MARKER.format(comment_id=self.comment_id), *self.blocks]
        if self.with_help:
            parts.append(HELP_TEXT)
        return fit("\n\n".join(parts))

    async def post(self, gh: GitHubAPI, repo: str, number: int) -> None:
        await comment(gh, repo, number, self.render())


async def already_answered(gh: GitHubAPI, repo: str, number: int, comment: dict[str, Any]
                           ) -> bool:
    """True when Conveyor has replied to this comment before (a redelivered event)."""
    marker = REPLY_MARKER.format(comment_id=comment["id"])
    since = comment.get("created_at")
    query = f"?since={since}&per_page=100" if since else "?per_page=100"
    async for item in gh.getiter(f"/repos/{repo}/issues/{number}/comments{query}"):
        if is_bot(item.get("user")) and marker in (item.get("body") or ""):
            return True
    return False


def permission_refusal(comment_id: int, commenter: str, repo: str, permission: str) -> str:
    reply = Reply(comment_id)
    having = "no access" if permission == "none" else f"{permission} access"
    reply.add(None, f"Sorry @{commenter}, Conveyor's commands can only be run by people with "
                    f"write, maintain or admin permission on {repo}; you have {having}. "
                    "Ask a maintainer to run the command for you.")
    return reply.render()


def permission_unknown(comment_id: int, commenter: str) -> str:
    reply = Reply(comment_id)
    reply.add(None, f"⚠️ Sorry @{commenter}, Conveyor could not check your permission on this "
                    "repository just now (GitHub did not answer), so nothing was run. Comment "
                    "again in a minute.")
    return reply.render()


def policy_refusal(comment_id: int, repo: BrokenPolicy) -> str:
    reply = Reply(comment_id)
    issues = repo.issues
    listed = "\n".join(f"- `{issue.path}` line {issue.line}: {escape_markdown(issue.message)}"
                       for issue in issues[:20])
    more = f"\n- … and {len(issues) - 20} more" if len(issues) > 20 else ""
    reply.add(None, f"❌ Conveyor cannot run commands in {repo.full_name}: `{POLICY_PATH}` on "
                    f"`{repo.default_branch}` is invalid and no earlier valid policy is known.\n\n"
                    f"{listed}{more}\n\nFix the file (the `conveyor/config-check` check shows "
                    "the same errors) and comment again.")
    return reply.render()


async def run_commands(services: Services, gh: GitHubAPI, where: Invocation,
                       parsed: Sequence[Command | CommandError]) -> Reply:
    """Run every command in order; return the reply (posted by the caller)."""
    runner = _Runner(services, gh, where, Reply(where.comment_id))
    if where.repo.issues:
        runner.reply.add(None, f"⚠️ `{POLICY_PATH}` on `{where.repo.default_branch}` is "
                               "invalid; the last valid policy is used until it is fixed.")
    for command in parsed:
        await runner.run(command)
    return runner.reply


async def finish(services: Services, gh: GitHubAPI, where: Invocation, reply: Reply) -> None:
    """Post the reply, then re-evaluate what the commands changed (a hold's reason is read
    from the reply, so the gate runs after it exists)."""
    await reply.post(gh, where.repo.full_name, where.number)
    if reply.reevaluate and where.is_pull:
        await services.gates.evaluate(gh, where.repo, where.number)


class _Runner:
    def __init__(self, services: Services, gh: GitHubAPI, where: Invocation, reply: Reply
                 ) -> None:
        self.services = services
        self.ctx = services.ctx
        self.gh = gh
        self.where = where
        self.reply = reply
        self._pr: dict[str, Any] | None = None
        self._markers: dict[tuple[str, str], PromotionMarker | None] = {}
        self._is_held: bool | None = None  # known once read, then as the commands change it

    @property
    def repo(self) -> str:
        return self.where.repo.full_name

    async def run(self, command: Command | CommandError) -> None:
        if isinstance(command, CommandError):
            self.reply.add(command, f"❌ {escape_markdown(command.message)}")
            self.reply.with_help = True
            return
        try:
            text = await self._dispatch(command)
        except RegistryError as exc:
            log.warning("command failed: %s", exc.message,
                        extra={"repository": self.repo, "number": self.where.number,
                               "command": command.name})
            text = (f"❌ {escape_markdown(exc.message)}. Comment the command again once the "
                    "registry answers.")
        except gidgethub.GitHubException as exc:
            log.exception("command failed", extra={"repository": self.repo,
                                                   "number": self.where.number,
                                                   "command": command.name})
            text = (f"⚠️ failed: GitHub answered {_github_error(exc)}, and the command stopped "
                    "there. Comment it again to retry.")
        except Exception as exc:
            log.exception("command failed", extra={"repository": self.repo,
                                                   "number": self.where.number,
                                                   "command": command.name})
            text = (f"⚠️ failed with an internal error ({type(exc).__name__}); it is in "
                    "Conveyor's logs. Comment the command again to retry.")
        self.reply.add(command, text)

    async def _dispatch(self, command: Command) -> str:
        if isinstance(command, Promote):
            return await self._promote_same_digest(command)
        if isinstance(command, PromoteExplicit):
            return await self._promote_explicit(command)
        if isinstance(command, PromoteTrain):
            return await self._promote_train(command)
        if isinstance(command, Rollback):
            return await self._rollback(command)
        if isinstance(command, RollbackTrain):
            return await self._rollback_train(command)
        if isinstance(command, Hold):
            return await self._hold(command)
        if isinstance(command, Unhold):
            return await self._unhold()
        if isinstance(command, Recheck):
            return await self._recheck()
        if isinstance(command, Status):
            return await self._status(command)
        if isinstance(command, Help):
            self.reply.with_help = True
            return "📖 Conveyor's commands are listed below."
        raise TypeError(f"no executor for /{command.name}")

    # -- the PR the comment is on ------------------------------------------------------------
    async def _pull(self) -> dict[str, Any]:
        if self._pr is None:
            self._pr = dict(await self.gh.getitem(f"/repos/{self.repo}/pulls/{self.where.number}"))
        return self._pr

    def _not_a_pull(self, command: str, what: str) -> str | None:
        if self.where.is_pull:
            return None
        return (f"❌ `/{command}` works on a pull request {what}; "
                f"#{self.where.number} is an issue.")

    # -- /promote <env> ----------------------------------------------------------------------
    async def _promote_same_digest(self, command: Promote) -> str:
        refusal = self._not_a_pull("promote <env>", "(a promotion PR)")
        if refusal:
            return (refusal + " Here, name the image: "
                    "`/promote <service> <tag-or-digest> <env>`.")
        pr = await self._pull()
        shown = parse_marker(pr.get("body"))
        target = command.environment
        if shown is not None and shown.is_train and opened_by_conveyor(self.ctx.bot_login, pr):
            return (f"ℹ️ #{self.where.number} is a release train of {shown.group}: "
                    f"`/promote {target} {shown.group if shown.group != ALL_GROUP else '--all'}`"
                    f" opens its train at the digests that hold evidence upstream of {target} "
                    "now.")
        trusted = await trusted_marker(self.gh, self.repo, pr, self.ctx.bot_login)
        if trusted is None:
            # A marker proves nothing: anyone can paste one into a pull request they opened.
            return (f"❌ #{self.where.number} is not a promotion PR Conveyor opened, so there is "
                    "no digest to carry on. Name the image instead: "
                    "`/promote <service> <tag-or-digest> <env>`.")
        marker = trusted[0]
        if pr.get("state") != "open" and not pr.get("merged"):
            return (f"❌ #{self.where.number} was closed without merging; promote from an open "
                    "or merged promotion PR, or name the image with "
                    "`/promote <service> <tag-or-digest> <env>`.")
        reachable = downstream_of(self.where.policy, marker.environment)
        if target not in reachable:
            return "❌ " + _unreachable(marker, target, reachable)
        results = await promote_downstream(
            self.ctx, self.gh, self.where.repo, marker, self.where.number,
            environments=[target], requester=self.where.commenter,
        )
        if not results:
            return f"❌ the service {marker.service} is no longer in the policy."
        _, result = results[0]
        return describe_result(result, marker.service, marker.version, target)

    # -- /promote <service> <tag-or-digest> <env> --------------------------------------------
    async def _promote_explicit(self, command: PromoteExplicit) -> str:
        policy = self.where.policy
        image = policy.services[command.service].image
        if command.is_digest:
            digest = command.ref
            found = await self.ctx.images.find_by_digest(image, digest)
            known = await self._marker_for(command.service, digest)
            if found is None and known is None:
                return (f"❌ no published version of `{image}` has the digest "
                        f"`{short_digest(digest)}`; check the digest, or promote by tag.")
            if found is not None and not found.manifest.is_index:
                index = await self.ctx.images.index_of(image, digest)
                if index is not None:
                    return (f"❌ `{short_digest(digest)}` is one platform of the multi-arch image "
                            f"`{image}:{index.tag}`; promote its index digest `{index.digest}` "
                            f"(or the tag `{index.tag}`) so every platform gets the same "
                            "image.")
            tag = (known.tag if known else None) or await self.ctx.images.tag_of(image, digest)
            if tag is None:
                return (f"❌ `{image}@{short_digest(digest)}` carries no tag; Conveyor writes a "
                        "tag beside the digest, so promote a tagged image.")
        else:
            variants = list(dict.fromkeys([command.ref, *release_tag_variants(command.ref)]))
            by_tag = await self.ctx.images.find_by_tags(image, variants)
            if by_tag is None:
                looked = ", ".join(f"`{v}`" for v in variants)
                return f"❌ `{image}` has no published image tagged {looked}."
            tag, digest = by_tag.tag, by_tag.digest
        candidate = await self._candidate(command.service, digest, tag, "command")
        provenance = await gather_provenance(self.gh, candidate, self.ctx.web_url)
        result = await Opener(self.ctx, self.gh, self.where.repo).open(
            candidate, command.environment, provenance=provenance, explicit=True)
        return describe_result(result, command.service, candidate.version, command.environment)

    async def _marker_for(self, service: str, digest: str) -> PromotionMarker | None:
        """The marker of an earlier promotion PR of this digest (any environment)."""
        if (service, digest) not in self._markers:
            self._markers[service, digest] = await self._find_marker(service, digest)
        return self._markers[service, digest]

    async def _find_marker(self, service: str, digest: str) -> PromotionMarker | None:
        """Provenance from an earlier promotion PR of this digest that Conveyor opened."""
        for environment in self.where.policy.environments:
            pr = await find_pull_for_branch(self.gh, self.repo,
                                            branch_name(environment, service, digest))
            trusted = await trusted_marker(self.gh, self.repo, pr, self.ctx.bot_login) \
                if pr else None
            if trusted is not None and trusted[0].digest == digest:
                return trusted[0]
        return None

    async def _candidate(self, service: str, digest: str, tag: str | None, trigger: Trigger
                         ) -> Candidate:
        """What is known about a digest: an earlier promotion's marker, the release whose tag
        names it, the commit its attestation or its image labels name."""
        policy = self.where.policy
        source = policy.services[service].source
        image = policy.services[service].image
        known = await self._marker_for(service, digest)
        source_sha = known.source_sha if known else None
        release_tag = known.release_tag if known else None
        release_url = None
        if tag and release_tag is None:
            release = await find_release(self.gh, source, service, tag)
            if release is not None:
                release_tag = str(release["tag_name"])
                release_url = release.get("html_url")
        if release_tag and source_sha is None:
            commit = await commit_for_ref(self.gh, source, release_tag)
            source_sha = str(commit["sha"]) if commit else None
        if source_sha is None:
            attested = await find_attestation(self.gh, source, digest)
            source_sha = attested.commit if attested else None
        if source_sha is None:
            labelled = await self.ctx.images.provenance(image, digest)
            if labelled.source_repo and labelled.source_repo.lower() == source.lower():
                source_sha = labelled.revision
        named = release_tag or tag
        version = version_from_tag(named) if named else short_digest(digest)
        return Candidate(
            service=service, image=image, digest=digest, tag=tag, version=version,
            source_repo=source, trigger=trigger, source_sha=source_sha,
            release_tag=release_tag, release_url=release_url,
            requester=self.where.commenter,
        )

    # -- /rollback ---------------------------------------------------------------------------
    async def _rollback(self, command: Rollback) -> str:
        return (await self.open_rollback(command))[1]

    async def open_rollback(self, command: Rollback) -> tuple[OpenResult | None, str]:
        """The rollback PR (None when refused) and the reply's text."""
        repo = self.where.repo
        policy = self.where.policy
        history, truncated = await read_history(self.gh, self.repo, repo.default_branch, policy,
                                                command.service, command.environment)
        wanted_digest = None
        if command.ref is not None and not command.is_digest:
            image = policy.services[command.service].image
            variants = list(dict.fromkeys([command.ref, *release_tag_variants(command.ref)]))
            found = await self.ctx.images.find_by_tags(image, variants)
            wanted_digest = found.digest if found else None
        choice = choose_rollback(live_periods(history, truncated=truncated), command.environment,
                                 command.service, command.ref, wanted_digest)
        if choice.period is None or choice.period.digest is None:
            return None, f"❌ {choice.refusal}"
        period = choice.period
        digest = period.digest
        assert digest is not None
        candidate = await self._candidate(command.service, digest, period.tag, "rollback")
        provenance = await gather_provenance(self.gh, candidate, self.ctx.web_url)
        result = await Opener(self.ctx, self.gh, repo).open(
            candidate, command.environment, provenance=provenance,
            explicit=True, rollback_note=rollback_note(period, command.environment))
        return result, describe_result(result, command.service, candidate.version,
                                       command.environment, rollback=True)

    # -- /promote <env> <group>, /promote <env> --all -----------------------------------------
    async def _promote_train(self, command: PromoteTrain) -> str:
        group = command.group or ALL_GROUP
        env = self.where.policy.environments[command.environment]
        if env.after is None:
            return (f"❌ {command.environment} is an entry environment: a train carries what "
                    "holds evidence in the environment before it, so name an environment with "
                    "`after:`.")

        async def candidate_for(service: str, tag: str | None, digest: str) -> Candidate:
            return await self._candidate(service, digest, tag, "command")

        result = await promote_group(self.ctx, self.gh, self.where.repo, group,
                                     command.environment, requester=self.where.commenter,
                                     candidate_for=candidate_for)
        return describe_train(result, group, command.environment)

    # -- /rollback <group> <env> -------------------------------------------------------------
    async def _rollback_train(self, command: RollbackTrain) -> str:
        repo = self.where.repo
        policy = self.where.policy
        services = policy.groups[command.group].services
        histories: dict[str, list[Period]] = {}
        links: dict[str, str] = {}
        for service in services:
            history, truncated = await read_history(self.gh, self.repo, repo.default_branch,
                                                    policy, service, command.environment)
            links.update((pin.sha, pin.url) for pin in history)
            histories[service] = [
                Period(p.digest, p.tag, p.start.sha, p.start.at.timestamp())
                for p in live_periods(history, truncated=truncated)]
        recent = await self.gh.getitem(
            f"/repos/{self.repo}/commits?sha={quote(repo.default_branch)}&per_page=100")
        choice = previous_combination(histories, command.environment,
                                      [str(commit["sha"]) for commit in recent])
        if choice.refusal is not None or choice.change_sha is None:
            return f"❌ {choice.refusal}"
        candidates = []
        for service, period in choice.moves.items():
            assert period.digest is not None
            candidates.append(await self._candidate(service, period.digest, period.tag,
                                                    "rollback"))
        sha = choice.change_sha
        url = links.get(sha) or f"{self.ctx.web_url}/{self.repo}/commit/{sha}"
        note = (f"**Rollback.** Goes back to the combination that ran in {command.environment} "
                f"before [`{sha[:7]}`]({url}), the group's most recent change there: each digest "
                f"ran in {command.environment} before, and that history is its evidence; the "
                f"approvals of {command.environment} still apply.")
        result = await TrainOpener(self.ctx, self.gh, repo).open(
            command.group, command.environment, candidates, requester=self.where.commenter,
            rollback_note=note)
        text = describe_train(result, command.group, command.environment, rollback=True)
        if choice.unchanged and result.action == "opened":
            text += (f" Not changed by `{sha[:7]}`, so left as they are: "
                     f"{', '.join(choice.unchanged)}.")
        return text

    # -- /hold, /unhold, /recheck ------------------------------------------------------------
    async def _open_pull_or_refusal(self, command: str) -> str | None:
        refusal = self._not_a_pull(command, "(the gate is a check on pull requests)")
        if refusal:
            return refusal
        pr = await self._pull()
        if pr.get("state") != "open":
            state = "merged" if pr.get("merged") else "closed"
            return f"❌ #{self.where.number} is {state}; the gate only runs on open pull requests."
        return None

    async def _hold(self, command: Hold) -> str:
        refusal = await self._open_pull_or_refusal("hold")
        if refusal:
            return refusal
        was_held = await self._held()
        await add_labels(self.gh, self.repo, self.where.number, [HOLD_LABEL])
        self._is_held = True
        self.reply.reevaluate = True
        # The gate reads the reason from the text after the marker, up to the end of the line,
        # and escapes it itself (its title is plain text): keep it as written, only without
        # mentions, references and HTML.
        reason = unlinked(" ".join(command.reason.split())).replace("<", "\\<")
        what = "still on hold, with this reason" if was_held else f"on hold (label `{HOLD_LABEL}`)"
        return (f"⏸️ {what}: `{GATE_CHECK}` fails until someone comments `/unhold`. "
                f"{HOLD_MARKER}" + (f" Reason: {reason}" if reason else ""))

    async def _unhold(self) -> str:
        refusal = await self._open_pull_or_refusal("unhold")
        if refusal:
            return refusal
        if not await self._held():
            cleared = await self._clear_failure_mark()
            if cleared is not None:
                self.reply.reevaluate = True
                return cleared
            return f"ℹ️ #{self.where.number} is not on hold; nothing to lift."
        await remove_label(self.gh, self.repo, self.where.number, HOLD_LABEL)
        self._is_held = False
        self.reply.reevaluate = True
        return f"▶️ hold lifted; `{GATE_CHECK}` is evaluated again without it."

    async def _clear_failure_mark(self) -> str | None:
        """`/unhold` on a promotion whose digest is marked failed upstream: a person decides
        that it may go on; the mark is cleared (the gate still asks for everything else)."""
        found = await trusted_marker(self.gh, self.repo, await self._pull(), self.ctx.bot_login)
        if found is None:
            return None
        marker = found[0]
        env = self.where.policy.environments.get(marker.environment)
        if env is None or env.after is None:
            return None
        mark = await watcher(self.services, self.gh, self.where.repo).clear(
            marker.service, env.after, marker.digest, self.where.commenter)
        if mark is None:
            return None
        return (f"▶️ the failure mark is cleared: {mark.title} — `{GATE_CHECK}` is evaluated "
                "again without it.")

    async def _held(self) -> bool:
        if self._is_held is None:
            pr = await self._pull()
            self._is_held = any(label.get("name") == HOLD_LABEL
                                for label in pr.get("labels") or [])
        return self._is_held

    async def _recheck(self) -> str:
        refusal = await self._open_pull_or_refusal("recheck")
        if refusal:
            return refusal
        gates = self.services.gates
        verdict = await gates.evaluate(self.gh, self.where.repo, self.where.number)
        if await retry_stopped_merge(self.ctx, self.gh, self.repo, self.where.number):
            return "Merged."
        if verdict is None:
            # An evaluation was already running; it re-runs once more. Compute the state here.
            facts = await gates.facts_of(self.gh, self.where.repo, await self.gh.getitem(
                f"/repos/{self.repo}/pulls/{self.where.number}"))
            verdict = await gates.verdict_for(self.gh, self.where.repo, facts)
        return describe_verdict(verdict)

    # -- /status -----------------------------------------------------------------------------
    async def _status(self, command: Status) -> str:
        rows = await self.services.status.collect(self.gh, self.where.repo)
        if command.group is not None:
            members = self.where.policy.groups[command.group].services
            rows = [row for row in rows if row.service in members]
        return render_status(rows, command.service)


async def open_rollback_for(services: Services, gh: GitHubAPI, repo: DeploymentRepo,
                            service: str, environment: str, number: int
                            ) -> tuple[OpenResult | None, str]:
    """What `/rollback <service> <environment>` on PR ``number`` does, asked by Conveyor
    itself (an automatic rollback): the PR, or None and why not."""
    where = Invocation(repo, number, True, services.ctx.bot_login, 0)
    command = Rollback(name="rollback", args=(service, environment), line=1,
                       raw=f"/rollback {service} {environment}", service=service,
                       environment=environment, ref=None)
    return await _Runner(services, gh, where, Reply(0)).open_rollback(command)


def watcher(services: Services, gh: GitHubAPI, repo: DeploymentRepo) -> Watcher:
    """The watch of one repository, rolling back through `/rollback` as Conveyor itself."""

    async def roll_back(service: str, environment: str, number: int
                        ) -> tuple[OpenResult | None, str]:
        return await open_rollback_for(services, gh, repo, service, environment, number)

    return Watcher(services.ctx, gh, repo, roll_back)


def downstream_of(policy: Policy, environment: str) -> list[str]:
    """Every environment reachable through `after:` from ``environment``, nearest first."""
    found: list[str] = []
    frontier = [environment]
    while frontier:
        following = [env.name for name in frontier for env in policy.downstream_of(name)
                     if env.name not in found and env.name != environment]
        found.extend(dict.fromkeys(following))
        frontier = following
    return found


def describe_train(result: TrainResult, group: str, environment: str, *,
                   rollback: bool = False) -> str:
    what = f"{'rollback' if rollback else 'train'} {group} to {environment}"
    left = ""
    if result.left_out:
        left = (" Left out, already at that digest: "
                + ", ".join(f"{service} `{version}`" for service, version in result.left_out)
                + ".")
    if result.action == "opened":
        moved = ", ".join(result.moved)
        merged = " It was merged right away (auto-merge)." if result.merged else ""
        superseded = (" Superseded: " + ", ".join(f"#{n}" for n in result.superseded) + "."
                      if result.superseded else "")
        return (f"✅ opened #{result.number}: {what} ({len(result.moved)} services: {moved})."
                f"{left}{superseded}{merged}")
    if result.action == "exists":
        return f"ℹ️ the {what} is already open: #{result.number}.{left}"
    if result.action == "live":
        return f"ℹ️ nothing to move: {result.message}; no pull request opened.{left}"
    return f"❌ not opened: {result.message}.{left}"


def _unreachable(marker: PromotionMarker, target: str, reachable: list[str]) -> str:
    if target == marker.environment:
        return (f"this PR already promotes {marker.service} {marker.version} to {target}; "
                "`/promote <env>` carries it to an environment after it.")
    after = (f"environments after {marker.environment}: {', '.join(reachable)}" if reachable
             else f"no environment comes after {marker.environment}")
    return (f"{target} does not come after {marker.environment} in the policy, so this PR's "
            f"digest cannot be promoted there from here ({after}).")


def describe_result(result: OpenResult, service: str, version: str, environment: str, *,
                    rollback: bool = False) -> str:
    what = f"{'rollback of' if rollback else 'promotion of'} {service} {version} to {environment}"
    if result.action == "opened":
        merged = " It was merged right away (auto-merge)." if result.merged else ""
        return f"✅ opened #{result.number}: {what}.{merged}"
    if result.action == "exists":
        return f"ℹ️ the {what} is already open: #{result.number}."
    if result.action == "live":
        return f"ℹ️ {result.markdown()}; nothing to open."
    if result.action == "skipped":
        return f"⏭️ not opened: {result.markdown()}."
    return f"❌ not opened: {result.markdown()}."


def describe_verdict(verdict: Verdict) -> str:
    state = verdict.conclusion or verdict.status.replace("_", " ")
    icon = {"success": "✅", "failure": "❌", "action_required": "✋"}.get(state, "⏳")
    return (f"🔄 re-evaluated `{GATE_CHECK}`: {icon} **{state}** — "
            f"{escape_markdown(verdict.title)}")


def _github_error(exc: gidgethub.GitHubException) -> str:
    status = getattr(exc, "status_code", None)
    code = f"{int(status)} " if status is not None else ""
    return f"{code}({escape_markdown(error_text(exc))})"


def _echo(raw: str) -> str:
    return shortened(raw.replace("`", "'"), MAX_ECHO)

