"""Tag policies: which release tags and image tags a service or environment admits.

``semver:<range>`` tests the version derived from the tag (see :func:`version_from_tag`)
against an npm-style range; ``regexp:<pattern>`` full-matches the tag (or its version);
``any`` admits every tag.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import nodesemver

from bot.domain.regex_safety import check_regex_safety

MAX_TAG_LENGTH = 128  # the OCI limit for an image tag; longer input is never admitted

TagKind = Literal["semver", "regexp", "any"]

_NUM = r"(?:0|[1-9]\d*)"
_PRE_ID = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
_SEMVER = (
    rf"{_NUM}\.{_NUM}\.{_NUM}"
    rf"(?:-{_PRE_ID}(?:\.{_PRE_ID})*)?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)
_SEMVER_RE = re.compile(_SEMVER)
# Lazy prefix: the version is the longest suffix, after a separator, that is a semver.
_TAG_RE = re.compile(rf"(?:(?P<prefix>.+?)[-/@])?v?(?P<version>{_SEMVER})")
_PLAIN_TAG_RE = re.compile(rf"v?(?P<version>{_SEMVER})")
_LEADING_V_RE = re.compile(r"v(?=\d)")

SortKey = tuple[int, int, int, tuple[Any, ...]]


def version_from_tag(tag: str) -> str:
    """``v1.4.2``, ``web-v1.4.2``, ``web/1.4.2``, ``web@1.4.2`` → ``1.4.2``.

    A tag that holds no semantic version is returned unchanged, except that a leading
    ``v`` directly followed by a digit is dropped (``v2024.01`` → ``2024.01``).
    """
    if len(tag) <= MAX_TAG_LENGTH * 2:
        match = _PLAIN_TAG_RE.fullmatch(tag) or _TAG_RE.fullmatch(tag)
        if match is not None:
            return match.group("version")
    if _LEADING_V_RE.match(tag):
        return tag[1:]
    return tag


def tag_prefix(tag: str) -> str | None:
    """The monorepo prefix of a release tag (``web`` for ``web-v1.4.2`` or ``web/1.4.2``),
    or None when the tag is a bare version or holds no semantic version."""
    if len(tag) > MAX_TAG_LENGTH * 2 or _PLAIN_TAG_RE.fullmatch(tag):
        return None
    match = _TAG_RE.fullmatch(tag)
    return match.group("prefix") if match is not None else None


def is_semver(version: str) -> bool:
    return _SEMVER_RE.fullmatch(version) is not None


def sort_key(tag: str) -> SortKey | None:
    """A key ordering tags by semantic version; ``None`` when the tag holds none.

    Build metadata is ignored, as semver precedence requires.
    """
    version = version_from_tag(tag)
    if not is_semver(version):
        return None
    core, _, rest = version.partition("+")[0].partition("-")
    major, minor, patch = (int(part) for part in core.split("."))
    if not rest:
        return (major, minor, patch, (1,))
    identifiers = tuple(
        (0, int(ident), "") if ident.isdigit() else (1, 0, ident) for ident in rest.split(".")
    )
    return (major, minor, patch, (0, identifiers))


def compare_versions(a: str, b: str) -> int | None:
    """-1, 0 or 1 by semver precedence; ``None`` when either tag holds no semantic version
    (the caller then orders by publish time)."""
    key_a, key_b = sort_key(a), sort_key(b)
    if key_a is None or key_b is None:
        return None
    return (key_a > key_b) - (key_a < key_b)


def is_newer(tag: str | None, than: str) -> bool:
    """Whether ``tag`` holds a newer semantic version than ``than``; no tag, or a tag without
    a semantic version, is not newer."""
    return bool(tag) and (compare_versions(tag or "", than) or 0) > 0


@lru_cache(maxsize=1024)
def _semver_range(text: str) -> Any:
    return nodesemver.make_range(text, False)


def _range_admits(range_text: str, version: str) -> bool:
    # include_prerelease stays off: a prerelease is admitted only when the range itself
    # names a prerelease of the same major.minor.patch (npm semantics).
    return bool(_semver_range(range_text).test(version, include_prerelease=False))


def _candidate_versions(parsed_range: Any) -> list[str]:
    candidates = ["0.0.0"]
    for comparator_set in parsed_range.set:
        for comparator in comparator_set:
            if comparator.semver is nodesemver.ANY:
                continue
            version = comparator.semver
            candidates.append(version.version)
            core = f"{version.major}.{version.minor}.{version.patch}"
            candidates.append(core)
            candidates.append(f"{version.major}.{version.minor}.{version.patch + 1}")
            if version.prerelease:
                candidates.append(f"{version.version}.0")
    return candidates


def validate_semver_range(text: str) -> None:
    """Raise ValueError unless ``text`` is a node-semver range that can match some version."""
    if len(text) > 256:
        raise ValueError("semver range is longer than 256 characters")
    try:
        parsed = _semver_range(text)
    except ValueError as exc:
        raise ValueError(f"invalid semver range {text!r}: {exc}") from None
    # The bounds of an interval are the comparators' versions or their successors, so
    # testing those finds a member whenever the range is satisfiable.
    if not any(parsed.test(v, include_prerelease=False) for v in _candidate_versions(parsed)):
        raise ValueError(f"semver range {text!r} matches no version")


@dataclass(frozen=True)
class TagPolicy:
    kind: TagKind
    pattern: str
    _regex: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def parse(cls, text: str) -> TagPolicy:
        value = text.strip()
        if value == "any":
            return cls("any", "")
        kind, sep, pattern = value.partition(":")
        if not sep or kind not in ("semver", "regexp"):
            raise ValueError(
                f'invalid tag policy {text!r}: use "semver:<range>", "regexp:<pattern>" or "any"'
            )
        if kind == "semver":
            validate_semver_range(pattern.strip())
            return cls("semver", pattern.strip())
        if not pattern:
            raise ValueError('regexp tag policy needs a pattern after "regexp:"')
        try:
            with warnings.catch_warnings():
                # e.g. "possible nested set": about future syntax, not this pattern's meaning
                warnings.simplefilter("ignore", FutureWarning)
                compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
        check_regex_safety(pattern)
        return cls("regexp", pattern, compiled)

    def admits(self, tag: str) -> bool:
        if not tag or len(tag) > MAX_TAG_LENGTH:
            return False
        if self.kind == "any":
            return True
        version = version_from_tag(tag)
        if self.kind == "semver":
            if not is_semver(version):
                return False
            try:
                return _range_admits(self.pattern, version)
            except ValueError:  # a TagPolicy built directly with a malformed range
                return False
        regex = self._regex if self._regex is not None else re.compile(self.pattern)
        return regex.fullmatch(tag) is not None or regex.fullmatch(version) is not None

    def __str__(self) -> str:
        return "any" if self.kind == "any" else f"{self.kind}:{self.pattern}"


DEFAULT_TAG_POLICY = TagPolicy("semver", "*")
