"""GitHub's JSON for the app and its installations."""

from __future__ import annotations

from conveyor_emulator.accounts.shapes_accounts import user
from conveyor_emulator.store.node_ids import node_id
from conveyor_emulator.store.state import JSON, Installation, iso
from conveyor_emulator.store.world import World


def app(world: World, app_id: int | None = None) -> JSON:
    created = "2024-01-01T00:00:00Z"
    owner = next((a for a in world.accounts.values() if a.type == "Organization"), None)
    app_id = world.app_id if app_id is None else app_id
    slug = world.app_slug if app_id == world.app_id else world.other_apps[app_id]
    return {
        "id": app_id,
        "slug": slug,
        "client_id": f"Iv1.{app_id:016x}",
        "node_id": node_id("App", app_id),
        "owner": user(world, owner or world.account("conveyor-dev")),
        "name": slug.capitalize(),
        "description": "",
        "external_url": world.web_url,
        "html_url": f"{world.web_url}/apps/{slug}",
        "created_at": created,
        "updated_at": created,
        "permissions": {
            "checks": "write", "contents": "write", "deployments": "write",
            "issues": "write", "metadata": "read", "packages": "read",
            "pull_requests": "write", "statuses": "read", "members": "read",
            "attestations": "read", "actions": "read",
        },
        # only names every webhook schema's enum admits (merge_group and package are not)
        "events": ["check_run", "check_suite", "deployment", "deployment_status", "issues",
                   "issue_comment", "pull_request", "pull_request_review", "push",
                   "registry_package", "release", "status"],
        "installations_count": len(world.installations),
    }


def installation(world: World, inst: Installation) -> JSON:
    acct = world.account(inst.account)
    account = user(world, acct)
    # GitHub's description types `account` as simple-user *and* enterprise (allOf)
    account.update({"name": acct.name or acct.login, "slug": acct.login.lower(),
                    "description": None, "website_url": None,
                    "created_at": iso(acct.created_at or inst.created_at),
                    "updated_at": iso(acct.created_at or inst.created_at)})
    return {
        "id": inst.id,
        "account": account,
        "repository_selection": "all" if inst.repo_ids is None else "selected",
        "access_tokens_url": f"{world.api_url}/app/installations/{inst.id}/access_tokens",
        "repositories_url": f"{world.api_url}/installation/repositories",
        "html_url": f"{world.web_url}/settings/installations/{inst.id}",
        "app_id": world.app_id,
        "app_slug": world.app_slug,
        "client_id": f"Iv1.{world.app_id:016x}",
        "target_id": acct.id,
        "target_type": "Organization" if acct.type == "Organization" else "User",
        "permissions": dict(inst.permissions),
        "events": list(inst.events),
        "created_at": iso(inst.created_at),
        "updated_at": iso(inst.created_at),
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
    }
