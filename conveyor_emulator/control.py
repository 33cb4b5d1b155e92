"""The control API under `/_emulator/`: faults, counters, violations, and acting as people."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aiohttp import web

from conveyor_emulator.errors import ApiError

if TYPE_CHECKING:
    from conveyor_emulator.driver.core import EmulatorCore

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
    "set_required_checks", "add_ruleset", "add_attestation", "add_workflow_run",
    "issue_manifest_code", "build_image",
}
READING = {"pulls", "file", "branches", "check_runs", "comments", "issues", "deployments",
           "statuses", "releases", "commit"}


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, default=str))


class ControlAPI:
    """The handlers of the control API, each reading or acting on one emulator."""

    def __init__(self, em: EmulatorCore) -> None:
        self.em = em

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/_emulator/faults", self.get_faults),
            web.patch("/_emulator/faults", self.set_faults),
            web.post("/_emulator/faults", self.set_faults),
            web.get("/_emulator/requests", self.get_requests),
            web.post("/_emulator/requests/reset", self.reset_requests),
            web.get("/_emulator/violations", self.get_violations),
            web.get("/_emulator/deliveries", self.get_deliveries),
            web.get("/_emulator/app", self.get_app_info),
            web.put("/_emulator/webhook_url", self.set_webhook_url),
            web.post("/_emulator/settle", self.settle),
            web.post("/_emulator/{kind:act|seed}/{name}", self.act),
            web.get("/_emulator/state/{name}", self.read),
        ]

    async def get_faults(self, request: web.Request) -> web.Response:
        return _json(self.em.faults.as_dict())

    async def set_faults(self, request: web.Request) -> web.Response:
        faults = self.em.faults
        body = await request.json()
        if not isinstance(body, dict):
            return _json({"message": "expected an object"}, 400)
        try:
            if body.pop("reset", False):
                faults.reset()
            faults.update(body)
        except (KeyError, ValueError, TypeError) as exc:
            return _json({"message": f"bad fault setting: {exc}"}, 400)
        return _json(faults.as_dict())

    async def get_requests(self, request: web.Request) -> web.Response:
        q, log = request.query, self.em.requests
        status = int(q["status"]) if "status" in q else None
        return _json({
            "total": len(log.entries),
            "count": log.count(q.get("method"), q.get("path"), status),
            "not_modified": sum(1 for e in log.entries if e.was_304),
            "by_kind": log.summary(),
        })

    async def reset_requests(self, request: web.Request) -> web.Response:
        self.em.reset_counters()
        return _json({"total": 0})

    async def get_violations(self, request: web.Request) -> web.Response:
        return _json({"violations": self.em.violations})

    async def get_deliveries(self, request: web.Request) -> web.Response:
        return _json([{
            "id": d.id, "guid": d.guid, "event": d.event, "action": d.action,
            "status_code": d.status_code, "redelivery": d.redelivery,
            "installation_id": d.installation_id, "repository_id": d.repository_id,
            "delivered_at": d.delivered_at.isoformat(), "duration": d.duration,
        } for d in self.em.deliveries])

    async def get_app_info(self, request: web.Request) -> web.Response:
        em = self.em
        return _json({"app_id": em.world.app_id, "slug": em.world.app_slug,
                      "api_url": em.base_url, "web_url": em.web_url,
                      "webhook_url": em.webhook_url,
                      "installations": sorted(em.world.installations)})

    async def set_webhook_url(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.em.webhook_url = body.get("url") if isinstance(body, dict) else None
        return _json({"webhook_url": self.em.webhook_url})

    async def settle(self, request: web.Request) -> web.Response:
        await self.em.settle()
        return _json({"settled": True})

    async def act(self, request: web.Request) -> web.Response:
        """An acting (`act`) or seeding (`seed`) method of the emulator, called with the
        request's JSON object as keyword arguments."""
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
        method = getattr(self.em, name)
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

    async def read(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in READING:
            return _json({"message": f"unknown reader {name}"}, 404)
        kwargs: dict[str, Any] = dict(request.query)
        if "number" in kwargs:
            kwargs["number"] = int(kwargs["number"])
        try:
            return _json({"result": getattr(self.em, name)(**kwargs)})
        except (TypeError, KeyError, ValueError) as exc:
            return _json({"message": f"{type(exc).__name__}: {exc}"}, 422)


def register(app: web.Application, em: EmulatorCore) -> None:
    app.add_routes(ControlAPI(em).routes())
