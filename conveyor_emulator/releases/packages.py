"""Container packages, their webhook payloads, and artifact attestation bundles."""

from __future__ import annotations

from collections.abc import Sequence

from conveyor_emulator.accounts import shapes_accounts
from conveyor_emulator.sigstore.authority import RunIdentity
from conveyor_emulator.store.state import JSON, Attestation, Package, PackageVersion, Repo, iso
from conveyor_emulator.store.world import World


def add_version(world: World, owner: str, name: str, digest: str, tags: Sequence[str],
                source_repo: str | None, author: str) -> tuple[Package, PackageVersion]:
    """Record a pushed manifest; a tag lives on one version only, like in a registry."""
    key = (owner.lower(), name.lower())
    now = world.now()
    pkg = world.packages.get(key)
    if pkg is None:
        pkg = Package(world.next_id(), name, world.account(owner).login, source_repo, now)
        world.packages[key] = pkg
    if source_repo and not pkg.source_repo:
        pkg.source_repo = source_repo
    for other in pkg.versions:
        if other.name != digest:
            other.tags = [t for t in other.tags if t not in tags]
    ver = next((v for v in pkg.versions if v.name == digest), None)
    if ver is None:
        ver = PackageVersion(world.next_id(), digest, list(tags), now, now, author)
        pkg.versions.append(ver)
    else:
        ver.tags = list(dict.fromkeys([*ver.tags, *tags]))
        ver.updated_at = now
    return pkg, ver


def event_body(world: World, pkg: Package, ver: PackageVersion, tag: str, *,
               revision: str | None, event: str) -> JSON:
    """The `registry_package` / `package` object of a published container version."""
    owner = world.account(pkg.owner)
    owner_json = shapes_accounts.user(world, owner)
    html = f"{world.web_url}/{pkg.owner}/{pkg.name}/pkgs/container/{pkg.name}"
    source_url = f"{world.web_url}/{pkg.source_repo}" if pkg.source_repo else ""
    all_labels = {"org.opencontainers.image.source": source_url}
    if revision:
        all_labels["org.opencontainers.image.revision"] = revision
    # GHCR sends the untagged per-platform versions of a multi-arch push with an unknown
    # creation time (@octokit/webhooks-examples, `package` published, container_metadata)
    created = iso(ver.created_at) if tag else "0001-01-01T00:00:00Z"
    version: JSON = {
        "id": ver.id,
        "version": ver.name,
        "name": ver.name,
        "description": "",
        "summary": "",
        "body": "",
        "body_html": "",
        "html_url": f"{html}/{ver.id}",
        "target_commitish": "",
        "target_oid": revision or "",
        "created_at": created,
        "updated_at": iso(ver.updated_at),
        "metadata": [],
        "container_metadata": {
            "tag": {"name": tag, "digest": ver.name},
            "labels": {
                "description": "", "source": source_url, "revision": revision or "",
                "image_url": source_url, "licenses": "", "all_labels": all_labels,
            },
            "manifest": {
                "digest": ver.name,
                "media_type": "application/vnd.oci.image.manifest.v1+json",
                "uri": f"repositories/{pkg.owner}/{pkg.name}/manifests/{ver.name}",
                "size": 1024, "config": {}, "layers": [],
            },
        },
        "package_files": [],
        "installation_command": f"docker pull ghcr.io/{pkg.owner.lower()}/{pkg.name}"
                                + (f":{tag}" if tag else f"@{ver.name}"),
        "package_url": f"ghcr.io/{pkg.owner.lower()}/{pkg.name}" + (f":{tag}" if tag else ""),
        "author": shapes_accounts.user(world, ver.author),
    }
    namespace = pkg.source_repo or pkg.owner
    registry = None
    if event == "package":
        registry = {
            "about_url": "https://docs.github.com/packages/learn-github-packages/"
                         "introduction-to-github-packages",
            "name": "GitHub CONTAINER registry", "type": "CONTAINER",
            "url": f"https://ghcr.io/{pkg.owner.lower()}", "vendor": "GitHub Inc",
        }
    return {
        "id": pkg.id,
        "name": pkg.name,
        "namespace": namespace,
        "description": None,
        "ecosystem": "CONTAINER",
        "package_type": "CONTAINER",
        "html_url": html,
        "created_at": iso(pkg.created_at),
        "updated_at": iso(ver.updated_at),
        "owner": owner_json,
        "package_version": version,
        "registry": registry,
    }


def provenance_statement(world: World, repo: Repo, digest: str, *, commit: str,
                         workflow_path: str, ref: str, run_id: int) -> JSON:
    """The in-toto SLSA v1 provenance statement `actions/attest-build-provenance` writes for
    an image built by `repo`'s workflow."""
    algo, _, value = digest.partition(":")
    source = f"{world.web_url}/{repo.full_name}"
    return {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": f"ghcr.io/{repo.full_name.lower()}", "digest": {algo: value}}],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {
            "buildDefinition": {
                "buildType": "https://actions.github.io/buildtypes/workflow/v1",
                "externalParameters": {"workflow": {
                    "repository": source, "path": workflow_path, "ref": ref}},
                "internalParameters": {"github": {"event_name": "push",
                                                  "repository_id": str(repo.id)}},
                "resolvedDependencies": [{"uri": f"git+{source}@{ref}",
                                          "digest": {"gitCommit": commit}}],
            },
            "runDetails": {
                "builder": {"id": f"{source}/{workflow_path}@{ref}"},
                "metadata": {"invocationId": f"{source}/actions/runs/{run_id}/attempts/1"},
            },
        },
    }


def workflow_run(world: World, repo: Repo, *, commit: str, workflow_path: str, ref: str,
                 run_id: int, signer: str | None = None) -> RunIdentity:
    """The claims of the OIDC token of `repo`'s run: what its signing certificate carries.
    `signer` (`owner/repo/path@ref`) names a reusable workflow of another repository."""
    return RunIdentity(
        server_url=world.web_url, repository=repo.full_name, repository_id=repo.id,
        owner_id=world.account(repo.owner).id, workflow_path=workflow_path, ref=ref,
        sha=commit, run_id=run_id, visibility="private" if repo.private else "public",
        reusable_workflow=signer)


def attestation_bundle(world: World, repo: Repo, digest: str, *, commit: str,
                       workflow_path: str, ref: str, run_id: int, signer: str | None = None,
                       statement: JSON | None = None) -> Attestation:
    """An artifact attestation of `digest` made by `repo`'s workflow, signed by the Sigstore
    instance GitHub uses for the repository (GitHub's own for a private one)."""
    statement = statement or provenance_statement(world, repo, digest, commit=commit,
                                                  workflow_path=workflow_path, ref=ref,
                                                  run_id=run_id)
    run = workflow_run(world, repo, commit=commit, workflow_path=workflow_path, ref=ref,
                       run_id=run_id, signer=signer)
    bundle = world.sigstore.for_repository(repo.private).sign(statement, run, world.now())
    return Attestation(world.next_id(), repo.full_name, digest, bundle,
                       str(statement.get("predicateType")))
