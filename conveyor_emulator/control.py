"""The control API under `/_emulator/`: faults, counters, violations, and acting as people."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aiohttp import web

from .ops import ApiError

if TYPE_CHECKING:
    from .emulator import Emulator

# POST /_emulator/act/<name> with the keyword arguments of the Emulator method of that name.
ACTIONS = {
    "push_files", "create_branch", "create_tag", "publish_release", "publish_container",
    "open_pull", "open_issue", "comment", "edit_comment", "review", "dismiss_review",
    "merge_pull", "close_pull", "add_labels", "create_deployment", "set_deployment_status",
    "set_status", "rerequest_check_run", "request_check_run_action", "rerequest_check_suite",
    "merge_group", "send_event", "redeliver", "notify_installation", "add_installation_repos",
}
SEEDING = {
    "add_user", "add_org", "add_team", "add_repo", "set_permission", "install",
    "set_required_checks", "add_attestation", "add_workflow_run", "issue_manifest_code",
    "build_image",
}
READING = {"pulls", "file", "branches", "check_runs", "comments", "issues", "deployments",
           "statuses", "releases", "commit"}


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, default=str))


def register(app: web.Application, em: Emulator) -> None:
    routes = web.RouteTableDef()

    @routes.get("/_emulator/faults")
    async def get_faults(request: web.Request) -> web.Response:
        return _json(em.faults.as_dict())

    @routes.route("PATCH", "/_emulator/faults")
    @routes.post("/_emulator/faults")
    async def set_faults(request: web.Request) -> web.Response:
        body = await request.json()
        if not isinstance(body, dict):
            return _json({"message": "expected an object"}, 400)
        try:
            if body.pop("reset", False):
                em.faults.reset()
            em.faults.update(body)
        except (KeyError, ValueError, TypeError) as exc:
            return _json({"message": f"bad fault setting: {exc}"}, 400)
        return _json(em.faults.as_dict())

    @routes.get("/_emulator/requests")
    async def get_requests(request: web.Request) -> web.Response:
        q = request.query
        status = int(q["status"]) if "status" in q else None
        return _json({
            "total": len(em.requests.entries),
            "count": em.requests.count(q.get("method"), q.get("path"), status),
            "not_modified": sum(1 for e in em.requests.entries if e.was_304),
            "by_kind": em.requests.summary(),
        })

    @routes.post("/_emulator/requests/reset")
    async def reset_requests(request: web.Request) -> web.Response:
        em.reset_counters()
        return _json({"total": 0})

    @routes.get("/_emulator/violations")
    async def get_violations(request: web.Request) -> web.Response:
        return _json({"violations": em.violations})

    @routes.get("/_emulator/deliveries")
    async def get_deliveries(request: web.Request) -> web.Response:
        return _json([{
            "id": d.id, "guid": d.guid, "event": d.event, "action": d.action,
            "status_code": d.status_code, "redelivery": d.redelivery,
            "installation_id": d.installation_id, "repository_id": d.repository_id,
            "delivered_at": d.delivered_at.isoformat(), "duration": d.duration,
        } for d in em.deliveries])

    @routes.get("/_emulator/app")
    async def get_app_info(request: web.Request) -> web.Response:
        return _json({"app_id": em.world.app_id, "slug": em.world.app_slug,
                      "api_url": em.base_url, "web_url": em.web_url,
                      "webhook_url": em.webhook_url,
                      "installations": sorted(em.world.installations)})

    @routes.route("PUT", "/_emulator/webhook_url")
    async def set_webhook_url(request: web.Request) -> web.Response:
        body = await request.json()
        em.webhook_url = body.get("url") if isinstance(body, dict) else None
        return _json({"webhook_url": em.webhook_url})

    @routes.post("/_emulator/settle")
    async def settle(request: web.Request) -> web.Response:
        await em.settle()
        return _json({"settled": True})

    @routes.post("/_emulator/{kind:act|seed}/{name}")
    async def act(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        allowed = ACTIONS if request.match_info["kind"] == "act" else SEEDING
        if name not in allowed:
            return _json({"message": f"unknown action {name}"}, 404)
        try:
            kwargs = await request.json() if request.can_read_body else {}
        except ValueError:
            return _json({"message": "Problems parsing JSON"}, 400)
        if not isinstance(kwargs, dict):
            return _json({"message": "expected an object of keyword arguments"}, 400)
        method = getattr(em, name)
        try:
            result = method(**kwargs)
            if hasattr(result, "__await__"):
                result = await result
        except ApiError as exc:
            return _json({"message": exc.message}, exc.status)
        except (TypeError, KeyError, ValueError) as exc:
            return _json({"message": f"{type(exc).__name__}: {exc}"}, 422)
        if name == "add_repo":
            result = {"full_name": result.full_name, "id": result.id}
        return _json({"result": result})

    @routes.get("/_emulator/state/{name}")
    async def read(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in READING:
            return _json({"message": f"unknown reader {name}"}, 404)
        kwargs: dict[str, Any] = dict(request.query)
        if "number" in kwargs:
            kwargs["number"] = int(kwargs["number"])
        try:
            return _json({"result": getattr(em, name)(**kwargs)})
        except (TypeError, KeyError, ValueError) as exc:
            return _json({"message": f"{type(exc).__name__}: {exc}"}, 422)

    app.add_routes(routes)
