"""Repository archives: `GET /repos/{owner}/{repo}/tarball/{ref}` and its download.

GitHub answers the API request with `302 Found` and a `Location` on its download host
(`codeload.github.com`; `https://HOST/_codeload/...` on GitHub Enterprise Server), carrying a
short-lived token for private repositories ("Download a repository archive (tar)",
docs.github.com/rest/repos/contents#download-a-repository-archive-tar). Only the API request
counts against the rate limit; the download is served by another host and is not an API call,
so the emulator serves it outside `/api/v3`, unlogged and unmetered, like its GHES layout.
The archive is what `git archive --format=tar.gz` makes: a pax global header whose comment is
the commit sha, every path below `<owner>-<repo>-<7 hex>/`.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import time

from aiohttp import web

from conveyor_emulator.errors import not_found
from conveyor_emulator.routing import Ctx, Reply, Router
from conveyor_emulator.store.gitstore import SYMLINK_MODE
from conveyor_emulator.store.state import ArchiveLink, Repo
from conveyor_emulator.store.world import World

router = Router()
R = "/repos/{owner}/{repo}"
DOWNLOAD_PREFIX = "/_codeload"
DOWNLOAD_TTL = 300.0  # GitHub's archive links expire after five minutes


def _redirect(ctx: Ctx, ref: str) -> Reply:
    repo = ctx.repo
    sha = repo.resolve(ref)
    if sha is None:
        raise not_found()
    token = ctx.world.random_token("AAR")
    now = time.monotonic()
    links = ctx.world.archive_links
    for stale in [key for key, value in links.items() if value.expires < now]:
        del links[stale]
    links[token] = ArchiveLink(repo.full_name, sha, now + DOWNLOAD_TTL)
    location = (f"{ctx.world.web_url}{DOWNLOAD_PREFIX}/{repo.full_name}/legacy.tar.gz/"
                f"{ref}?token={token}")
    return Reply(302, None, {"Location": location})


@router.add("GET", R + "/tarball/{ref}")
async def tarball(ctx: Ctx) -> Reply:
    return _redirect(ctx, ctx.params["ref"])


def archive(repo: Repo, sha: str) -> bytes:
    commit = repo.store.commit(sha)
    assert commit is not None
    prefix = f"{repo.owner}-{repo.name}-{sha[:7]}/"
    stamp = int(commit.committer.date.timestamp())
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT,
                      pax_headers={"comment": sha}) as tar:
        top = tarfile.TarInfo(prefix)
        top.type, top.mode, top.mtime = tarfile.DIRTYPE, 0o775, stamp
        tar.addfile(top)
        for path, entry in repo.store.walk(commit.tree):
            info = tarfile.TarInfo(prefix + path + ("/" if entry.type == "tree" else ""))
            info.mtime = stamp
            if entry.type == "tree":
                info.type, info.mode = tarfile.DIRTYPE, 0o775
                tar.addfile(info)
                continue
            blob = repo.store.blob(entry.sha)
            data = blob.data if blob else b""
            if entry.mode == SYMLINK_MODE:
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, data.decode(), 0o777
                tar.addfile(info)
                continue
            info.size, info.mode = len(data), 0o775 if entry.mode == "100755" else 0o664
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=stamp)


def register_downloads(app: web.Application, world: World) -> None:
    async def download(request: web.Request) -> web.Response:
        found = world.archive_links.get(request.query.get("token", ""))
        name = f"{request.match_info['owner']}/{request.match_info['repo']}"
        if found is None or found.expires < time.monotonic() or found.repo.lower() != \
                name.lower():
            return web.Response(status=404, text="404: Not Found")
        repo = world.repos.get(found.repo.lower())
        if repo is None:
            return web.Response(status=404, text="404: Not Found")
        body = archive(repo, found.sha)
        return web.Response(body=body, content_type="application/x-gzip", headers={
            "Content-Disposition": f"attachment; filename={repo.owner}-{repo.name}-"
                                   f"{found.sha[:7]}.tar.gz"})

    app.router.add_get(DOWNLOAD_PREFIX + "/{owner}/{repo}/legacy.tar.gz/{ref:.*}", download)
