"""Small syntactic checks for names written in the policy file."""

from __future__ import annotations

import re
import string

NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62})")
# GitHub logins: 1-39 characters, alphanumerics and single inner hyphens.
LOGIN_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
TEAM_RE = re.compile(rf"@(?P<org>{LOGIN_RE.pattern})/(?P<team>[A-Za-z0-9_-][A-Za-z0-9_.-]{{0,99}})")
REPO_RE = re.compile(rf"(?P<owner>{LOGIN_RE.pattern})/(?P<repo>[A-Za-z0-9_.-]{{1,100}})")
_LABEL = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_DOMAIN = rf"{_LABEL}(?:\.{_LABEL})*(?::[0-9]+)?"
# Upper case is accepted: names compare case-insensitively (GHCR owners are spelled either way).
_COMPONENT = r"[A-Za-z0-9]+(?:(?:[._]|__|-+)[A-Za-z0-9]+)*"
# An image name as in the distribution reference grammar, without tag or digest.
IMAGE_RE = re.compile(rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*")
IMAGE_PREFIX_RE = re.compile(rf"{_DOMAIN}(?:/{_COMPONENT})*/?")
PLACEHOLDERS = frozenset({"service", "env"})
RESERVED_ENVIRONMENT_NAMES = frozenset({"rollback"})


def name_problem(name: str, what: str) -> str | None:
    if NAME_RE.fullmatch(name) is None or ".." in name or name.endswith("."):
        return (
            f"invalid {what} name {name!r}: use 1-63 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return None


def approver_problem(approver: str) -> str | None:
    if approver.startswith("@"):
        if TEAM_RE.fullmatch(approver) is None:
            return f"invalid team {approver!r}: write a team as @org/team-slug"
        return None
    if LOGIN_RE.fullmatch(approver) is None:
        return (
            f"invalid GitHub login {approver!r}: up to 39 letters, digits or single hyphens, "
            "not starting or ending with a hyphen (teams are written @org/team-slug)"
        )
    return None


def repository_problem(text: str) -> str | None:
    match = REPO_RE.fullmatch(text)
    if match is None or match["repo"] in (".", ".."):
        return f"invalid repository {text!r}: write it as owner/repo"
    return None


def image_problem(image: str) -> str | None:
    if "@" in image or ":" in image.split("/")[-1]:
        return f"image {image!r} must be a name without tag or digest, such as ghcr.io/acme/web"
    if len(image) > 255 or IMAGE_RE.fullmatch(image) is None:
        return f"invalid image name {image!r}: expected a name such as ghcr.io/acme/web"
    return None


def image_prefix_problem(prefix: str) -> str | None:
    if len(prefix) > 255 or IMAGE_PREFIX_RE.fullmatch(prefix) is None:
        return (
            f"invalid image prefix {prefix!r}: expected a registry and optional path, "
            "such as ghcr.io/acme/"
        )
    return None


def _unknown_placeholder(text: str) -> str | None:
    """The first ``{field}`` of ``text`` that is not a known placeholder; ValueError for broken
    braces anywhere in it (checked before any field is judged)."""
    fields = list(string.Formatter().parse(text))
    for _, field_name, spec, conversion in fields:
        if field_name is not None and (field_name not in PLACEHOLDERS or spec or conversion):
            return field_name
    return None


def placeholder_problem(template: str) -> str | None:
    try:
        unknown = _unknown_placeholder(template)
    except ValueError as exc:
        return f"invalid path template {template!r}: {exc} (write literal braces as {{{{ }}}})"
    if unknown is not None:
        return (
            f"unknown placeholder {{{unknown}}} in path {template!r}: "
            "only {service} and {env} are allowed"
        )
    return None


def context_pattern_problem(pattern: str) -> str | None:
    """A ``deployed_context``: literal text, ``{service}``, ``{env}`` and ``*`` wildcards."""
    try:
        unknown = _unknown_placeholder(pattern)
    except ValueError as exc:
        return f"invalid context {pattern!r}: {exc} (write literal braces as {{{{ }}}})"
    if unknown is not None:
        return (
            f"unknown placeholder {{{unknown}}} in {pattern!r}: only {{service}}, {{env}} "
            "and * are allowed"
        )
    return None


def reporter_problem(login: str) -> str | None:
    """A user login, or a GitHub App written as ``<slug>[bot]``."""
    if LOGIN_RE.fullmatch(login.removesuffix("[bot]")) is None:
        return (
            f"invalid login {login!r}: a GitHub user login, or an app as <app-slug>[bot] "
            "(such as argocd-notifications[bot])"
        )
    return None


def fill_template(template: str, service: str, env: str) -> str:
    return template.format(service=service, env=env)


def path_problem(path: str) -> str | None:
    """Paths are relative to the repository root and may not leave it."""
    if not path:
        return "path is empty"
    if "\x00" in path:
        return f"path {path!r} contains a NUL character"
    if "\\" in path:
        return f"path {path!r} contains a backslash: use '/' between directories"
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        return f"path {path!r} contains a control character"
    if path.startswith("/"):
        return f"path {path!r} is absolute: write it relative to the repository root"
    if len(path) > 1024:
        return "path is longer than 1024 characters"
    segments = path.split("/")
    if ".." in segments:
        return f"path {path!r} leaves the repository: '..' is not allowed"
    if "" in segments or "." in segments:
        return f"path {path!r} has an empty or '.' segment: write it as a/b/file.yaml"
    return None
