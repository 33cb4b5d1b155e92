"""The trailers of the commits Conveyor makes: written and read here alone (pure).

Every trust decision about a promotion or a release train — who asked for it, which digests it
moves, from which source commits, whether it is a rollback, which group it belongs to — reads
these lines of Conveyor's own commit (``trust.py`` decides whether a commit is Conveyor's), and
so do the version, image tag and release tag a later promotion of the same digest carries on. A
single-service promotion writes::

    Conveyor-Service / -Environment / -Digest / -Source / -Version [/ -Tag] [/ -Release]
    [/ -Requested-By] [/ -Kind: rollback]

and a release train::

    Conveyor-Train / -Environment [/ -Requested-By] [/ -Kind: rollback]
    then, per service in the order of its table: Conveyor-Service / -Digest / -Source
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SERVICE = "Conveyor-Service"
ENVIRONMENT = "Conveyor-Environment"
DIGEST = "Conveyor-Digest"
SOURCE = "Conveyor-Source"
VERSION = "Conveyor-Version"
TAG = "Conveyor-Tag"
RELEASE = "Conveyor-Release"  # the source repository's release tag (git tag) it came from
REQUESTED_BY = "Conveyor-Requested-By"
KIND = "Conveyor-Kind"
TRAIN = "Conveyor-Train"

ROLLBACK = "rollback"
UNKNOWN_SOURCE = "unknown"


@dataclass(frozen=True)
class Moved:
    """One service a commit moves: to which digest, built from which source commit."""

    service: str
    digest: str
    source_repo: str | None = None
    source_sha: str | None = None

    @property
    def source(self) -> str:
        return f"{self.source_repo or ''}@{self.source_sha or UNKNOWN_SOURCE}"


@dataclass(frozen=True)
class CommitTrailers:
    """The facts of one Conveyor commit, as its trailers state them."""

    environment: str
    moved: tuple[Moved, ...]
    version: str | None = None
    tag: str | None = None
    release_tag: str | None = None
    requester: str | None = None
    rollback: bool = False
    train: str | None = None  # the group of a release train

    def lines(self) -> list[str]:
        """The trailer lines, in the order Conveyor writes them."""
        optional = [(REQUESTED_BY, self.requester),
                    (KIND, ROLLBACK if self.rollback else None)]
        if self.train is not None:
            lines = [f"{TRAIN}: {self.train}", f"{ENVIRONMENT}: {self.environment}"]
            lines += [f"{key}: {value}" for key, value in optional if value]
            for move in self.moved:
                lines += [f"{SERVICE}: {move.service}", f"{DIGEST}: {move.digest}",
                          f"{SOURCE}: {move.source}"]
            return lines
        [move] = self.moved
        lines = [f"{SERVICE}: {move.service}", f"{ENVIRONMENT}: {self.environment}",
                 f"{DIGEST}: {move.digest}", f"{SOURCE}: {move.source}",
                 f"{VERSION}: {self.version or ''}"]
        return lines + [f"{key}: {value}" for key, value in
                        [(TAG, self.tag), (RELEASE, self.release_tag), *optional] if value]


def commit_message(title: str, body: Sequence[str], trailers: CommitTrailers) -> str:
    """``title``, the lines of ``body`` (if any), then the trailers as the last paragraph."""
    parts = [title, *(["\n".join(body)] if body else []), "\n".join(trailers.lines())]
    return "\n\n".join(parts) + "\n"


def parse_trailers(message: str) -> dict[str, list[str]]:
    """``Key: value`` lines of the message's last paragraph, every value of each key."""
    paragraphs = [p for p in message.replace("\r\n", "\n").strip().split("\n\n") if p.strip()]
    found: dict[str, list[str]] = {}
    if len(paragraphs) < 2:
        return found
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and " " not in key.strip():
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def read_trailers(message: str) -> CommitTrailers | None:
    """The facts a commit message's trailers state; None when they describe no promotion
    (no environment, no service, or services and digests that do not pair up)."""
    trailers = parse_trailers(message)
    environment = _first(trailers, ENVIRONMENT)
    services = trailers.get(SERVICE) or []
    digests = trailers.get(DIGEST) or []
    if not environment or not services or len(services) != len(digests):
        return None
    sources = trailers.get(SOURCE) or []
    moved = []
    for index, (service, digest) in enumerate(zip(services, digests, strict=True)):
        # a train names one source per service; a commit of an older layout named one in all
        source = sources[index] if index < len(sources) else (sources[0] if sources else "")
        repo, _, sha = source.partition("@")
        moved.append(Moved(service=service, digest=digest, source_repo=repo or None,
                           source_sha=sha if sha and sha != UNKNOWN_SOURCE else None))
    return CommitTrailers(
        environment=environment, moved=tuple(moved), version=_first(trailers, VERSION),
        tag=_first(trailers, TAG), release_tag=_first(trailers, RELEASE),
        requester=_first(trailers, REQUESTED_BY),
        rollback=_first(trailers, KIND) == ROLLBACK, train=_first(trailers, TRAIN))


def _first(trailers: dict[str, list[str]], key: str) -> str | None:
    values = trailers.get(key)
    return values[0] if values else None
