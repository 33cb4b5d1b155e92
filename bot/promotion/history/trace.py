"""Forward traceability: a merged promotion is reported back to the source repository.

For the source commit of the promoted image Conveyor keeps
- one GitHub deployment per (commit, environment) in the source repository, whose latest
  status is `success` with `log_url` = the promotion PR (the Environments view of the source
  repository then shows which commit each environment runs), and
- one comment on each source pull request that introduced the commit, edited in place as the
  commit reaches each environment. Its hidden marker holds what was shipped where, so the
  comment can be rebuilt from GitHub alone.

"success" here means "merged into the deployment repository"; the cluster's own sync is
reported in the deployment repository by Argo CD or Flux (see docs/traceability.md).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.domain.promotions.marker import PromotionMarker
from bot.github.refusals import or_none
from bot.github.repos import commit_for_ref, write_comment
from bot.text import short_digest

if TYPE_CHECKING:
    from bot.runtime.context import Context

log = logging.getLogger(__name__)

TRACE_MARKER_RE = re.compile(r"<!-- conveyor:trace (\[.*?\]) -->", re.S)
PAYLOAD_KIND = "conveyor-promotion"


@dataclass(frozen=True)
class Shipment:
    """One service's image of the commit reaching one environment of a deployment repo."""

    deploy_repo: str
    service: str
    environment: str
    number: int  # the promotion PR
    url: str
    version: str
    digest: str
    at: str  # ISO time of the merge
    kind: str = "promotion"

    @property
    def key(self) -> tuple[str, str, str]:
        return self.deploy_repo.lower(), self.service, self.environment


@dataclass(frozen=True)
class TracedPromotion:
    """A merged promotion PR, reduced to what the source repository is told."""

    deploy_repo: str
    number: int
    url: str
    merged_at: str
    marker: PromotionMarker
    source_repo: str
    source_sha: str

    def shipment(self) -> Shipment:
        return Shipment(
            deploy_repo=self.deploy_repo, service=self.marker.service,
            environment=self.marker.environment, number=self.number, url=self.url,
            version=self.marker.version, digest=self.marker.digest, at=self.merged_at,
            kind=self.marker.kind,
        )

    @property
    def reference(self) -> str:
        return f"{self.deploy_repo}#{self.number}"


def deployment_request(promotion: TracedPromotion) -> dict[str, Any]:
    marker = promotion.marker
    verb = "Rolled back" if marker.is_rollback else "Promoted"
    return {
        "ref": promotion.source_sha,
        "environment": marker.environment,
        "description": f"{verb} {marker.service} {marker.version} in {promotion.reference}"[:140],
        "payload": {
            "conveyor": PAYLOAD_KIND,
            "service": marker.service,
            "version": marker.version,
            "digest": marker.digest,
            "promotion_pr": promotion.url,
            "deployment_repo": promotion.deploy_repo,
        },
        "required_contexts": [],
        "auto_merge": False,
        "transient_environment": False,
    }


def status_request(promotion: TracedPromotion) -> dict[str, Any]:
    return {
        "state": "success",
        "log_url": promotion.url,
        "description": f"Merged in {promotion.reference}"[:140],
        "auto_inactive": True,
    }


async def record_deployment(gh: GitHubAPI, promotion: TracedPromotion) -> int:
    """The one deployment of (commit, environment), with a success status linking the PR.

    An existing deployment is reused; it gets a new status only when its latest one is not
    already a success for this PR (a redelivery changes nothing; a rollback to a commit that
    ran here before marks it live again)."""
    full_name = promotion.source_repo
    env = promotion.marker.environment
    existing = await gh.getitem(f"/repos/{full_name}/deployments?sha={promotion.source_sha}"
                                f"&environment={quote(env, safe='')}&per_page=100")
    ours = [d for d in existing or [] if d.get("sha") == promotion.source_sha
            and d.get("environment") == env]
    if ours:
        deployment = min(ours, key=lambda d: int(d["id"]))
        statuses = await gh.getitem(
            f"/repos/{full_name}/deployments/{deployment['id']}/statuses?per_page=1")
        latest = statuses[0] if statuses else None
        if latest and latest.get("state") == "success" and \
                (latest.get("log_url") or latest.get("target_url")) == promotion.url:
            return int(deployment["id"])
    else:
        deployment = await gh.post(f"/repos/{full_name}/deployments",
                                   data=deployment_request(promotion))
    await gh.post(f"/repos/{full_name}/deployments/{deployment['id']}/statuses",
                  data=status_request(promotion))
    log.info("deployment recorded in the source repository",
             extra={"repository": full_name, "sha": promotion.source_sha, "env": env,
                    "deployment": deployment["id"], "pull": promotion.number})
    return int(deployment["id"])


def parse_shipments(body: str | None) -> list[Shipment] | None:
    """The shipments recorded in a trace comment, or None when it is not one."""
    match = TRACE_MARKER_RE.search(body or "")
    if match is None:
        return None
    try:
        items = json.loads(match.group(1))
        return [Shipment(**{k: v for k, v in item.items()
                            if k in Shipment.__dataclass_fields__}) for item in items]
    except (ValueError, TypeError):
        return []


def merge_shipments(known: Sequence[Shipment], new: Shipment) -> list[Shipment]:
    """One entry per (deployment repo, service, environment): the latest promotion wins."""
    kept = [s for s in known if s.key != new.key]
    return sorted([*kept, new], key=lambda s: (s.at, s.number))


def render_trace_comment(source_sha: str, shipments: Sequence[Shipment]) -> str:
    """`Shipped web 1.4.2 to staging in acme/deploy#42, to production in acme/deploy#45.`"""
    lines = []
    groups: dict[tuple[str, str], list[Shipment]] = {}
    for shipment in shipments:
        groups.setdefault((shipment.service, shipment.version), []).append(shipment)
    for (service, version), items in groups.items():
        steps = []
        for item in items:
            back = " (rollback)" if item.kind == "rollback" else ""
            steps.append(f"to {item.environment} in {item.deploy_repo}#{item.number}{back}")
        lines.append(f"Shipped **{service} {version}** (`{short_digest(items[0].digest)}`) "
                     f"{', '.join(steps)}.")
    data = json.dumps([asdict(s) for s in shipments], sort_keys=True, separators=(",", ":"))
    data = data.replace("--", "-\\u002d")
    return "\n".join([
        f"🚢 Commit {source_sha[:12]} of this pull request is on its way:",
        "",
        *[f"- {line}" for line in lines],
        "",
        "<sub>Kept current by Conveyor as the commit reaches each environment.</sub>",
        "",
        f"<!-- conveyor:trace {data} -->",
    ])


async def source_pulls(gh: GitHubAPI, full_name: str, sha: str) -> list[dict[str, Any]]:
    """Pull requests that introduced the commit: merged ones when there are any."""
    pulls = await or_none(gh.getitem(f"/repos/{full_name}/commits/{sha}/pulls?per_page=100"),
                          404, 422)
    merged = [pr for pr in pulls or [] if pr.get("merged_at")]
    return merged or list(pulls or [])


async def update_pull_comment(ctx: Context, gh: GitHubAPI, promotion: TracedPromotion,
                              number: int) -> None:
    """Create or edit the one trace comment on source PR `number`."""
    full_name = promotion.source_repo
    async with ctx.locks.hold(f"trace:{full_name}#{number}"):
        found: dict[str, Any] | None = None
        known: list[Shipment] = []
        async for item in gh.getiter(f"/repos/{full_name}/issues/{number}/comments?per_page=100"):
            shipments = parse_shipments(item.get("body"))
            author = str((item.get("user") or {}).get("login") or "")
            if shipments is None or (ctx.bot_login and author.lower() != ctx.bot_login.lower()):
                continue
            found, known = item, shipments
            break
        body = render_trace_comment(promotion.source_sha,
                                    merge_shipments(known, promotion.shipment()))
        await write_comment(gh, full_name, number, body, replacing=found)


async def source_commit(gh: GitHubAPI, marker: PromotionMarker, source_repo: str) -> str | None:
    """The marker's source commit, else the commit its release tag names."""
    if marker.source_sha:
        return marker.source_sha
    if marker.release_tag:
        commit = await commit_for_ref(gh, source_repo, marker.release_tag)
        return str(commit["sha"]) if commit else None
    return None


async def report_promotion(ctx: Context, gh: GitHubAPI, promotion: TracedPromotion) -> None:
    """Deployment and PR comments for one merged promotion (each step idempotent)."""
    await record_deployment(gh, promotion)
    for pr in await source_pulls(gh, promotion.source_repo, promotion.source_sha):
        await update_pull_comment(ctx, gh, promotion, int(pr["number"]))
