"""The hidden marker in promotion PR bodies: the facts Conveyor needs to rebuild its state.

`<!-- conveyor:{...json...} -->` — GitHub keeps HTML comments in bodies verbatim and does not
render them, so the marker survives edits of the visible text.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

MARKER_RE = re.compile(r"<!-- conveyor:(\{.*?\}) -->", re.S)
MARKER_VERSION = 1
# A release train lists every (service, digest) it moves; the body holding it is at most
# 65,536 characters, so the marker never needs more than that.
_MAX_MARKER = 64 * 1024


@dataclass(frozen=True)
class TrainMember:
    """One service a release train moves: what it sets, and what the file said before."""

    service: str
    digest: str
    tag: str | None
    version: str
    path: str
    previous_digest: str | None = None
    previous_tag: str | None = None
    source_sha: str | None = None


@dataclass(frozen=True)
class PromotionMarker:
    service: str
    environment: str
    digest: str
    tag: str | None
    version: str
    paths: tuple[str, ...]
    source_repo: str
    source_sha: str | None = None
    requester: str | None = None
    kind: str = "promotion"  # "promotion" | "rollback"
    commit: str | None = None  # the commit Conveyor made; a different head means a human pushed
    previous_digest: str | None = None
    previous_tag: str | None = None
    release_tag: str | None = None
    upstream_pr: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Release trains: `service` is the group's name (never a service's: the policy refuses
    # that), `digest` the train's identity (sha256 of its sorted digests), `kind` "train" or
    # "rollback", and `members` every service it moves.
    group: str | None = None
    members: tuple[TrainMember, ...] = ()

    @property
    def is_train(self) -> bool:
        """Whether it moves a group: a release train, or a train's rollback (``kind`` says
        "rollback" then, so it is never asked whether this is a train)."""
        return self.group is not None

    @property
    def is_rollback(self) -> bool:
        """Whether it goes back: a service's rollback or a train's."""
        return self.kind == "rollback"

    def render(self) -> str:
        data = asdict(self)
        data["paths"] = list(self.paths)
        data["members"] = [{k: v for k, v in asdict(m).items() if v not in (None, "")}
                           for m in self.members]
        data = {k: v for k, v in data.items() if v not in (None, {}, [])}
        data["v"] = MARKER_VERSION
        # "--" would end the HTML comment early; JSON escapes keep the text equivalent.
        text = json.dumps(data, sort_keys=True, separators=(",", ":")).replace("--", "-\\u002d")
        return f"<!-- conveyor:{text} -->"


def parse_marker(body: str | None) -> PromotionMarker | None:
    """The marker of a PR body, or None when absent or malformed (a hand-written PR)."""
    if not body:
        return None
    match = MARKER_RE.search(body[: 256 * 1024])
    if match is None or len(match.group(1)) > _MAX_MARKER:
        return None
    try:
        data = json.loads(match.group(1))
        return PromotionMarker(
            service=str(data["service"]),
            environment=str(data["environment"]),
            digest=str(data["digest"]),
            tag=_optional_str(data.get("tag")),
            version=str(data.get("version") or data.get("tag") or ""),
            paths=tuple(str(p) for p in data.get("paths", [])),
            source_repo=str(data.get("source_repo", "")),
            source_sha=_optional_str(data.get("source_sha")),
            requester=_optional_str(data.get("requester")),
            kind=str(data.get("kind", "promotion")),
            commit=_optional_str(data.get("commit")),
            previous_digest=_optional_str(data.get("previous_digest")),
            previous_tag=_optional_str(data.get("previous_tag")),
            release_tag=_optional_str(data.get("release_tag")),
            upstream_pr=int(data["upstream_pr"]) if data.get("upstream_pr") else None,
            extra=dict(data.get("extra") or {}),
            group=_optional_str(data.get("group")),
            members=tuple(_member(item) for item in data.get("members") or []),
        )
    except (ValueError, KeyError, TypeError):
        return None


def service_markers(marker: PromotionMarker) -> list[PromotionMarker]:
    """The marker itself, or one per service for a release train."""
    if not marker.is_train:
        return [marker]
    kind = "rollback" if marker.is_rollback else "promotion"
    return [PromotionMarker(
        service=member.service, environment=marker.environment, digest=member.digest,
        tag=member.tag, version=member.version, paths=(member.path,), source_repo="",
        source_sha=member.source_sha, requester=marker.requester, kind=kind,
        commit=marker.commit, previous_digest=member.previous_digest,
        previous_tag=member.previous_tag) for member in marker.members]


def _member(data: Any) -> TrainMember:
    if not isinstance(data, dict):
        raise TypeError("a train member is an object")
    return TrainMember(
        service=str(data["service"]), digest=str(data["digest"]),
        tag=_optional_str(data.get("tag")), version=str(data.get("version") or ""),
        path=str(data.get("path") or ""),
        previous_digest=_optional_str(data.get("previous_digest")),
        previous_tag=_optional_str(data.get("previous_tag")),
        source_sha=_optional_str(data.get("source_sha")),
    )


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def branch_name(environment: str, service: str, digest: str, *, rollback: bool = False) -> str:
    hex12 = digest.removeprefix("sha256:")[:12]
    return branch_prefix(environment, service, rollback=rollback) + hex12


def branch_prefix(environment: str, service: str, *, rollback: bool = False) -> str:
    root = f"conveyor/rollback/{environment}" if rollback else f"conveyor/{environment}"
    return f"{root}/{service}-"


def train_branch_name(environment: str, group: str, train_digest: str, *,
                      rollback: bool = False) -> str:
    hex12 = train_digest.removeprefix("sha256:")[:12]
    prefix = f"conveyor/rollback/{environment}" if rollback else f"conveyor/{environment}"
    return f"{prefix}/train-{group}-{hex12}"


def branch_environment(ref: str) -> str | None:
    """The environment a branch named by `branch_name` or `train_branch_name` promotes into
    (a rollback's too); None for any other branch."""
    parts = ref.split("/")
    if len(parts) == 4 and parts[:2] == ["conveyor", "rollback"]:
        return parts[2]
    if len(parts) == 3 and parts[0] == "conveyor":
        return parts[1]
    return None


def train_prefix(environment: str, group: str) -> str:
    return f"conveyor/{environment}/train-{group}-"
