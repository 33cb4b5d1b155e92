"""The GitHub App itself: installations, tokens, hook deliveries and the manifest flow."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from conveyor_emulator.accounts import shapes_accounts
from conveyor_emulator.apps import manifests, shapes_apps
from conveyor_emulator.apps.auth import generate_private_key
from conveyor_emulator.errors import ApiError, not_found
from conveyor_emulator.events.webhooks import Delivery
from conveyor_emulator.repos import shapes_repos
from conveyor_emulator.routing import Ctx, Reply, Router
from conveyor_emulator.store import node_ids
from conveyor_emulator.store.state import JSON, ManifestApp, Repo, Token

router = Router()
TOKEN_TTL = 3600.0


@router.add("GET", "/app", auth="jwt")
async def get_app(ctx: Ctx) -> Reply:
    return Reply(200, shapes_apps.app(ctx.world))


@router.add("GET", "/app/installations", auth="jwt")
async def list_installations(ctx: Ctx) -> Reply:
    items = sorted(ctx.world.installations.values(), key=lambda i: i.id)
    return ctx.page([shapes_apps.installation(ctx.world, i) for i in items])


@router.add("GET", "/app/installations/{installation_id}", auth="jwt")
async def get_installation(ctx: Ctx) -> Reply:
    inst = ctx.world.installations.get(ctx.int_param("installation_id"))
    if inst is None:
        raise not_found()
    return Reply(200, shapes_apps.installation(ctx.world, inst))


@router.add("POST", "/app/installations/{installation_id}/access_tokens", auth="jwt")
async def create_token(ctx: Ctx) -> Reply:
    world = ctx.world
    inst = world.installations.get(ctx.int_param("installation_id"))
    if inst is None:
        raise not_found()
    body = ctx.body if isinstance(ctx.body, dict) else {}
    allowed = {r.id: r for r in world.installation_repos(inst)}
    repo_ids: set[int] | None = None
    if body.get("repositories") or body.get("repository_ids"):
        repo_ids = set()
        for name in body.get("repositories") or []:
            match = next((r for r in allowed.values() if r.name.lower() == str(name).lower()),
                         None)
            if match is None:
                raise ApiError(422, "There is at least one repository that does not exist or "
                                    "is not accessible to the parent installation.")
            repo_ids.add(match.id)
        for rid in body.get("repository_ids") or []:
            if rid not in allowed:
                raise ApiError(422, "There is at least one repository that does not exist or is "
                                    "not accessible to the parent installation.")
            repo_ids.add(int(rid))
    permissions = dict(inst.permissions)
    requested = body.get("permissions")
    if isinstance(requested, dict):
        for key, level in requested.items():
            have = inst.permissions.get(key)
            if have is None or (have == "read" and level in ("write", "admin")):
                raise ApiError(422, "The permissions requested are not granted to this "
                                    "installation.")
        permissions = {str(k): str(v) for k, v in requested.items()}
    ttl = ctx.world.token_ttl
    value = world.random_token("ghs_")
    expires = time.time() + float(ttl)
    world.tokens[value] = Token(value, inst.id, repo_ids, permissions, expires)
    repos = [r for r in allowed.values() if repo_ids is None or r.id in repo_ids]
    out: JSON = {
        "token": value,
        "expires_at": datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "permissions": permissions,
        "repository_selection": "all" if repo_ids is None and inst.repo_ids is None
        else "selected",
    }
    if repo_ids is not None:
        out["repositories"] = [shapes_repos.repository(world, r) for r in repos]
    return Reply(201, out)


@router.add("GET", "/repos/{owner}/{repo}/installation", auth="jwt")
async def repo_installation(ctx: Ctx) -> Reply:
    repo = ctx.world.repo(ctx.params["owner"], ctx.params["repo"])
    inst = ctx.world.installation_for(repo) if repo else None
    if inst is None:
        raise not_found()
    return Reply(200, shapes_apps.installation(ctx.world, inst))


@router.add("GET", "/installation/repositories")
async def installation_repositories(ctx: Ctx) -> Reply:
    assert ctx.installation is not None and ctx.token is not None
    repos = [r for r in ctx.world.installation_repos(ctx.installation)
             if ctx.token.repo_ids is None or r.id in ctx.token.repo_ids]
    repos.sort(key=lambda r: r.id)
    selection = "all" if ctx.installation.repo_ids is None else "selected"
    return ctx.page([_repo_with_permissions(ctx, r) for r in repos], wrap="repositories",
                    extra={"repository_selection": selection})


def _repo_with_permissions(ctx: Ctx, repo: Repo) -> JSON:
    out = shapes_repos.repository(ctx.world, repo)
    out["permissions"] = {"admin": False, "maintain": False, "push": True, "triage": True,
                          "pull": True}
    return out


def delivery_item(d: Delivery) -> JSON:
    return {
        "id": d.id, "guid": d.guid,
        "delivered_at": d.delivered_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "redelivery": d.redelivery, "duration": round(d.duration, 3),
        "status": d.status, "status_code": d.status_code, "event": d.event,
        "action": d.action, "installation_id": d.installation_id,
        "repository_id": d.repository_id, "throttled_at": None,
    }


@router.add("GET", "/app/hook/deliveries", auth="jwt")
async def list_deliveries(ctx: Ctx) -> Reply:
    """Cursor pagination: newest first; `cursor` is the id to continue below."""
    hooks = ctx.ops.hooks
    try:
        per_page = max(1, min(100, int(ctx.query.get("per_page", "30"))))
    except ValueError as exc:
        raise ApiError(422, "Validation Failed") from exc
    items = sorted(hooks.deliveries, key=lambda d: d.id, reverse=True)
    cursor = ctx.query.get("cursor")
    if cursor:
        try:
            below = int(cursor)
        except ValueError as exc:
            raise ApiError(422, "Validation Failed") from exc
        items = [d for d in items if d.id < below]
    page = items[:per_page]
    headers: dict[str, str] = {}
    if len(items) > per_page:
        url = ctx.request.url.with_query({**ctx.request.query, "cursor": str(page[-1].id),
                                          "per_page": str(per_page)})
        headers["Link"] = f'<{url}>; rel="next"'
    return Reply(200, [delivery_item(d) for d in page], headers)


def _delivery_or_404(ctx: Ctx) -> Delivery:
    did = ctx.int_param("delivery_id")
    found = next((d for d in ctx.ops.hooks.deliveries if d.id == did), None)
    if found is None:
        raise not_found()
    return found


@router.add("GET", "/app/hook/deliveries/{delivery_id}", auth="jwt")
async def get_delivery(ctx: Ctx) -> Reply:
    d = _delivery_or_404(ctx)
    out = delivery_item(d)
    out["url"] = ctx.ops.hooks.url or ""
    out["request"] = {"headers": d.request_headers, "payload": d.payload}
    out["response"] = {"headers": d.response_headers, "payload": d.response_body}
    return Reply(200, out)


@router.add("POST", "/app/hook/deliveries/{delivery_id}/attempts", auth="jwt")
async def redeliver(ctx: Ctx) -> Reply:
    d = _delivery_or_404(ctx)
    ctx.ops.hooks.redeliver_later(d.id)
    return Reply(202, {})


@router.add("POST", "/app-manifests/{code}/conversions", auth="none")
async def manifest_conversion(ctx: Ctx) -> Reply:
    world = ctx.world
    code = ctx.params["code"]
    manifest = world.manifest_codes.pop(code, None)
    if manifest is None:
        raise not_found()
    manifests.check(manifest)
    pem, public = generate_private_key()
    app_id = world.next_id()
    name = str(manifest.get("name") or "conveyor")
    slug = name.lower().replace(" ", "-")
    owner = next((a.login for a in world.accounts.values() if a.type == "Organization"),
                 "conveyor-dev")
    created = ManifestApp(app_id, slug, name, f"Iv1.{app_id:016x}", world.random_hex(40),
                          world.random_hex(40), pem, public, owner, manifest)
    world.manifest_apps[slug] = created
    now = world.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    perms = manifest.get("default_permissions") or {}
    events = manifest.get("default_events") or []
    return Reply(201, {
        "id": app_id, "slug": slug, "node_id": node_ids.node_id("App", app_id),
        "client_id": created.client_id, "client_secret": created.client_secret,
        "webhook_secret": created.webhook_secret, "pem": pem, "name": name,
        "owner": shapes_accounts.user(world, owner), "description": manifest.get("description"),
        "external_url": manifest.get("url") or world.web_url,
        "html_url": f"{world.web_url}/apps/{slug}", "created_at": now, "updated_at": now,
        "permissions": perms, "events": events,
    })
