"""GitHub's JSON for releases and container packages."""

from __future__ import annotations

from conveyor_emulator.accounts.shapes_accounts import user
from conveyor_emulator.repos.shapes_repos import repository
from conveyor_emulator.store.node_ids import node_id
from conveyor_emulator.store.state import JSON, Package, PackageVersion, Release, Repo, iso
from conveyor_emulator.store.world import World


def release(world: World, repo: Repo, rel: Release) -> JSON:
    api = f"{world.api_url}/repos/{repo.full_name}"
    html = f"{world.web_url}/{repo.full_name}"
    return {
        "url": f"{api}/releases/{rel.id}",
        "html_url": f"{html}/releases/tag/{rel.tag_name}",
        "assets_url": f"{api}/releases/{rel.id}/assets",
        "upload_url": f"{world.web_url}/uploads/repos/{repo.full_name}/releases/{rel.id}"
                      "/assets{?name,label}",
        "tarball_url": f"{api}/tarball/{rel.tag_name}",
        "zipball_url": f"{api}/zipball/{rel.tag_name}",
        "id": rel.id,
        "node_id": node_id("Release", rel.id),
        "tag_name": rel.tag_name,
        "target_commitish": rel.target_commitish,
        "name": rel.name,
        "body": rel.body,
        "draft": rel.draft,
        "prerelease": rel.prerelease,
        "immutable": False,
        "created_at": iso(rel.created_at),
        "updated_at": iso(rel.published_at or rel.created_at),
        "published_at": iso(rel.published_at),
        "author": user(world, rel.author),
        "assets": [],
    }


def package(world: World, pkg: Package) -> JSON:
    owner = world.account(pkg.owner)
    kind = "orgs" if owner.type == "Organization" else "users"
    out: JSON = {
        "id": pkg.id,
        "name": pkg.name,
        "package_type": "container",
        "url": f"{world.api_url}/{kind}/{pkg.owner}/packages/container/{pkg.name}",
        "html_url": f"{world.web_url}/{kind}/{pkg.owner}/packages/container/package/{pkg.name}",
        "version_count": len(pkg.versions),
        "visibility": "public",
        "owner": user(world, owner),
        "created_at": iso(pkg.created_at),
        "updated_at": iso(pkg.versions[-1].updated_at if pkg.versions else pkg.created_at),
    }
    if pkg.source_repo:
        src = world.repos.get(pkg.source_repo.lower())
        if src:
            out["repository"] = repository(world, src)
    return out


def package_version(world: World, pkg: Package, ver: PackageVersion) -> JSON:
    owner = world.account(pkg.owner)
    kind = "orgs" if owner.type == "Organization" else "users"
    html_kind = "orgs" if owner.type == "Organization" else "users"
    base = f"{world.web_url}/{html_kind}/{pkg.owner}/packages/container"
    return {
        "id": ver.id,
        "name": ver.name,
        "url": f"{world.api_url}/{kind}/{pkg.owner}/packages/container/{pkg.name}"
               f"/versions/{ver.id}",
        "package_html_url": f"{base}/package/{pkg.name}",
        "html_url": f"{base}/{pkg.name}/{ver.id}",
        "created_at": iso(ver.created_at),
        "updated_at": iso(ver.updated_at),
        "metadata": {"package_type": "container", "container": {"tags": list(ver.tags)}},
    }
