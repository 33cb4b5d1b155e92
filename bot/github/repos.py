"""Typed helpers for the few GitHub calls used everywhere.

Files and commits read at a commit sha are kept in the app's `ShaStore` and served without any
request; everything else goes through gidgethub's ETag cache.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.github.client import sha_store
from bot.github.immutable import SHA
from bot.github.refusals import or_none

MAX_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class RepoFile:
    path: str
    text: str
    sha: str  # blob sha, needed to update the file


class FileTooLarge(Exception):
    pass


class UnreadableFile(Exception):
    """A path GitHub holds whose text cannot be read; ``str()`` says why."""


def content_path(path: str) -> str:
    return quote(path.lstrip("/"), safe="/")


async def get_file(gh: GitHubAPI, full_name: str, path: str, ref: str | None = None, *,
                   strict: bool = False) -> RepoFile | None:
    """A file's text at `ref` (default branch when None), or None when it does not exist.

    A path that is not a regular file or is not UTF-8 is None too, and one over 1 MB raises
    FileTooLarge, unless `strict`: then both raise UnreadableFile with the reason (the gate must
    not skip it).
    """
    url = f"/repos/{full_name}/contents/{content_path(path)}"
    known = sha_store(gh).responses
    immutable_key = (full_name.lower(), path, ref) if ref and SHA.fullmatch(ref) else None
    if immutable_key is not None and immutable_key in known:
        cached: RepoFile | None = known[immutable_key]
        return cached
    try:
        data = await gh.getitem(url + (f"?ref={quote(ref, safe='')}" if ref else ""))
    except gidgethub.BadRequest as exc:
        if exc.status_code == 404:
            if immutable_key is not None:
                known[immutable_key] = None
            return None
        if exc.status_code == 403 and "too large" in str(exc):
            if strict:
                raise UnreadableFile("larger than the 1 MB GitHub returns through the contents "
                                     "API") from exc
            raise FileTooLarge(f"{path} is larger than {MAX_FILE_BYTES} bytes") from exc
        raise
    if not isinstance(data, dict) or data.get("type") != "file":
        if strict:
            kind = data.get("type") if isinstance(data, dict) else "dir"
            raise UnreadableFile(f"not a regular file (GitHub calls it a {kind})")
        return None
    if strict and str(data.get("path", path)) != path.strip("/"):
        # The contents API follows a symlink to the file it names.
        raise UnreadableFile(f"a symbolic link to {data.get('path')}")
    if int(data.get("size", 0)) > MAX_FILE_BYTES:
        if strict:
            raise UnreadableFile(f"larger than {MAX_FILE_BYTES} bytes")
        raise FileTooLarge(f"{path} is larger than {MAX_FILE_BYTES} bytes")
    try:
        raw = base64.b64decode(data.get("content", ""))
        text = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        if strict:
            raise UnreadableFile(_undecodable(raw if isinstance(exc, UnicodeDecodeError)
                                              else b"")) from exc
        return None
    result = RepoFile(path=path, text=text, sha=str(data["sha"]))
    if immutable_key is not None:
        known[immutable_key] = result
    return result


def _undecodable(raw: bytes) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "not UTF-8 (it starts with a UTF-16 byte order mark)"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
    return "its content is not valid Base64"


async def branch_head(gh: GitHubAPI, full_name: str, branch: str) -> str:
    data = await gh.getitem(f"/repos/{full_name}/git/ref/heads/{quote(branch, safe='/')}")
    return str(data["object"]["sha"])


async def get_repository(gh: GitHubAPI, full_name: str) -> dict[str, Any]:
    data: dict[str, Any] = await gh.getitem(f"/repos/{full_name}")
    return data


async def commit_for_ref(gh: GitHubAPI, full_name: str, ref: str) -> dict[str, Any] | None:
    """The commit a branch, tag (annotated too) or sha names; None when unknown."""
    known = sha_store(gh).responses
    key = (full_name.lower(), "commit", ref)
    if SHA.fullmatch(ref) and key in known:
        hit: dict[str, Any] = known[key]
        return hit
    data: dict[str, Any] | None = await or_none(gh.getitem(
        f"/repos/{full_name}/commits/{quote(ref, safe='')}",
        extra_headers={"accept": "application/vnd.github+json"},
    ), 404, 422)
    if data is None:
        return None
    data.pop("files", None)  # can be large; callers need the commit, not its diff
    known[(full_name.lower(), "commit", str(data["sha"]))] = data
    return data


async def add_labels(gh: GitHubAPI, full_name: str, number: int, labels: list[str]) -> None:
    await gh.post(f"/repos/{full_name}/issues/{number}/labels", data={"labels": labels})


async def remove_label(gh: GitHubAPI, full_name: str, number: int, label: str) -> None:
    await or_none(gh.delete(f"/repos/{full_name}/issues/{number}/labels/{quote(label, safe='')}"),
                  404)


async def comment(gh: GitHubAPI, full_name: str, number: int, body: str) -> dict[str, Any]:
    data: dict[str, Any] = await gh.post(
        f"/repos/{full_name}/issues/{number}/comments", data={"body": body}
    )
    return data


async def write_comment(gh: GitHubAPI, full_name: str, number: int, body: str, *,
                        replacing: Mapping[str, Any] | None) -> None:
    """Post `body` on issue or pull request `number`, or edit `replacing` (Conveyor's comment
    found there earlier) to it; an edit that would change nothing is not sent."""
    if replacing is None:
        await comment(gh, full_name, number, body)
    elif str(replacing.get("body") or "").replace("\r\n", "\n") != body:
        await gh.patch(f"/repos/{full_name}/issues/comments/{replacing['id']}", data={"body": body})


# the permissions that let a person run Conveyor's commands and approve without a list
WRITE_PERMISSIONS = ("admin", "maintain", "write")


async def permission_of(gh: GitHubAPI, full_name: str, user: str) -> str:
    """The user's permission on the repository: admin, maintain, write, triage, read or none."""
    data = await or_none(
        gh.getitem(f"/repos/{full_name}/collaborators/{quote(user, safe='')}/permission"), 404)
    if data is None:
        return "none"
    role = str(data.get("role_name") or "")
    return role if role in ("admin", "maintain", "write", "triage", "read") else str(
        data.get("permission", "none")
    )


async def is_team_member(gh: GitHubAPI, org: str, team: str, user: str) -> bool:
    data = await or_none(
        gh.getitem(f"/orgs/{org}/teams/{team}/memberships/{quote(user, safe='')}"), 404)
    return data is not None and data.get("state") == "active"


def is_bot(user: dict[str, Any] | None) -> bool:
    if not user:
        return False
    return user.get("type") == "Bot" or str(user.get("login", "")).endswith("[bot]")
