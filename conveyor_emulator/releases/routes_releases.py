"""Releases, container packages, artifact attestations and workflow runs."""

from __future__ import annotations

from conveyor_emulator.checks import shapes_checks
from conveyor_emulator.errors import ApiError, not_found
from conveyor_emulator.releases import shapes_releases
from conveyor_emulator.routing import Ctx, Reply, Router
from conveyor_emulator.store.state import JSON, Attestation, Package

router = Router()
R = "/repos/{owner}/{repo}"


@router.add("GET", R + "/releases")
async def list_releases(ctx: Ctx) -> Reply:
    items = sorted(ctx.repo.releases, key=lambda r: (r.created_at, r.id), reverse=True)
    return ctx.page([shapes_releases.release(ctx.world, ctx.repo, r) for r in items])


@router.add("GET", R + "/releases/tags/{tag}")
async def release_by_tag(ctx: Ctx) -> Reply:
    tag = ctx.params["tag"]
    rel = next((r for r in reversed(ctx.repo.releases) if r.tag_name == tag and not r.draft),
               None)
    if rel is None:
        raise not_found()
    return Reply(200, shapes_releases.release(ctx.world, ctx.repo, rel))


@router.add("GET", R + "/releases/{release_id}")
async def get_release(ctx: Ctx) -> Reply:
    rid = ctx.int_param("release_id")
    rel = next((r for r in ctx.repo.releases if r.id == rid), None)
    if rel is None:
        raise not_found()
    return Reply(200, shapes_releases.release(ctx.world, ctx.repo, rel))


def _package(ctx: Ctx, owner: str) -> Package:
    if ctx.params["package_type"] != "container":
        raise not_found()
    acct = ctx.world.find_account(owner)
    is_org = acct is not None and acct.type == "Organization"
    if acct is None or is_org != ("org" in ctx.params):
        raise ApiError(404, "Package not found.")
    inst = ctx.installation
    if inst is None or inst.account.lower() != owner.lower():
        raise not_found()
    pkg = ctx.world.packages.get((owner.lower(), ctx.params["package_name"].lower()))
    if pkg is None:
        raise ApiError(404, "Package not found.")
    return pkg


async def _versions(ctx: Ctx, owner: str) -> Reply:
    pkg = _package(ctx, owner)
    versions = sorted(pkg.versions, key=lambda v: (v.created_at, v.id), reverse=True)
    return ctx.page([shapes_releases.package_version(ctx.world, pkg, v) for v in versions])


async def _version(ctx: Ctx, owner: str) -> Reply:
    pkg = _package(ctx, owner)
    vid = ctx.int_param("package_version_id")
    ver = next((v for v in pkg.versions if v.id == vid), None)
    if ver is None:
        raise not_found()
    return Reply(200, shapes_releases.package_version(ctx.world, pkg, ver))


@router.add("GET", "/orgs/{org}/packages/{package_type}/{package_name}/versions")
async def org_versions(ctx: Ctx) -> Reply:
    return await _versions(ctx, ctx.params["org"])


@router.add("GET", "/orgs/{org}/packages/{package_type}/{package_name}/versions/"
                   "{package_version_id}")
async def org_version(ctx: Ctx) -> Reply:
    return await _version(ctx, ctx.params["org"])


@router.add("GET", "/users/{username}/packages/{package_type}/{package_name}/versions")
async def user_versions(ctx: Ctx) -> Reply:
    return await _versions(ctx, ctx.params["username"])


@router.add("GET", "/users/{username}/packages/{package_type}/{package_name}/versions/"
                   "{package_version_id}")
async def user_version(ctx: Ctx) -> Reply:
    return await _version(ctx, ctx.params["username"])


def _attestation(ctx: Ctx, att: Attestation, repository_id: int) -> JSON:
    return {"bundle": att.bundle, "repository_id": repository_id,
            "bundle_url": f"{ctx.world.web_url}/attestations/{att.id}/bundle.json"}


# "List attestations": `predicate_type` "accepts `provenance`, `sbom`, `release`, or freeform
# text for custom predicate types" (GitHub's REST description of the endpoint).
PREDICATE_TYPES = {
    "provenance": ("https://slsa.dev/provenance/v1", "https://slsa.dev/provenance/v0.2"),
    "sbom": ("https://spdx.dev/Document/v2.3", "https://spdx.dev/Document/v2.2",
             "https://cyclonedx.org/bom"),
    "release": ("https://in-toto.io/attestation/release/v0.1",),
}


def _of_type(ctx: Ctx, att: Attestation) -> bool:
    wanted = ctx.query.get("predicate_type")
    if not wanted:
        return True
    return att.predicate_type in PREDICATE_TYPES.get(wanted, (wanted,))


@router.add("GET", R + "/attestations/{subject_digest}")
async def repo_attestations(ctx: Ctx) -> Reply:
    digest = ctx.params["subject_digest"]
    items = [a for a in ctx.repo.attestations if a.digest == digest and _of_type(ctx, a)]
    if not items:
        raise not_found()
    reply = ctx.page([_attestation(ctx, a, ctx.repo.id) for a in items])
    reply.body = {"attestations": reply.body}
    return reply


@router.add("GET", "/orgs/{org}/attestations/{subject_digest}")
async def org_attestations(ctx: Ctx) -> Reply:
    org = ctx.params["org"]
    inst = ctx.installation
    if inst is None or inst.account.lower() != org.lower():
        raise not_found()
    digest = ctx.params["subject_digest"]
    items = [
        _attestation(ctx, a, repo.id)
        for repo in ctx.world.repos.values() if repo.owner.lower() == org.lower()
        for a in repo.attestations if a.digest == digest and _of_type(ctx, a)
    ]
    if not items:
        raise not_found()
    reply = ctx.page(items)
    reply.body = {"attestations": reply.body}
    return reply


@router.add("GET", R + "/actions/runs")
async def list_runs(ctx: Ctx) -> Reply:
    runs = list(reversed(ctx.repo.workflow_runs))
    for key in ("head_sha", "event", "status"):
        value = ctx.query.get(key)
        if value:
            runs = [r for r in runs if getattr(r, key) == value
                    or (key == "status" and r.conclusion == value)]
    branch = ctx.query.get("branch")
    if branch:
        runs = [r for r in runs if r.head_branch == branch]
    return ctx.page([shapes_checks.workflow_run(ctx.world, ctx.repo, r) for r in runs],
                    wrap="workflow_runs")


@router.add("GET", R + "/actions/runs/{run_id}")
async def get_run(ctx: Ctx) -> Reply:
    rid = ctx.int_param("run_id")
    run = next((r for r in ctx.repo.workflow_runs if r.id == rid), None)
    if run is None:
        raise not_found()
    return Reply(200, shapes_checks.workflow_run(ctx.world, ctx.repo, run))
