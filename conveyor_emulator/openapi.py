"""Checks requests and responses against GitHub's REST description, and webhook payloads
against GitHub's webhook schemas (trimmed copies shipped as this package's data, made by
`python -m conveyor_emulator.make_trimmed`).

jsonschema is imported lazily: it is a test dependency, and `python -m bot sandbox` runs
without it unless validation is asked for.
"""

from __future__ import annotations

import json
import os
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

REST_FILE = "github-rest.trimmed.json"
WEBHOOKS_FILE = "github-webhooks.trimmed.json"
ENV_DIR = "CONVEYOR_EMULATOR_OPENAPI_DIR"

# event-action keys of every webhook the emulator can emit
WEBHOOK_KEYS = {
    "pull-request-opened", "pull-request-synchronize", "pull-request-closed",
    "pull-request-reopened", "pull-request-labeled", "pull-request-unlabeled",
    "pull-request-edited", "pull-request-review-submitted", "pull-request-review-dismissed",
    "issue-comment-created", "issue-comment-edited", "issues-opened", "issues-closed",
    "issues-reopened", "issues-edited", "check-run-created", "check-run-completed",
    "check-run-rerequested", "check-run-requested-action", "check-suite-requested",
    "check-suite-rerequested", "status", "deployment-created", "deployment-status-created",
    "push", "release-published", "release-released", "release-created",
    "release-prereleased", "registry-package-published", "package-published",
    "installation-created", "installation-repositories-added", "installation-repositories-removed",
    "merge-group-checks-requested",
}


def default_dir() -> Traversable:
    """`CONVEYOR_EMULATOR_OPENAPI_DIR` when set, else the copies shipped with the package."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env)
    return files(__package__)


def _nullable(node: Any) -> Any:
    """OpenAPI 3.0 `nullable: true` → JSON Schema `null` alternatives."""
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable(v) for k, v in node.items()}
    if out.pop("nullable", False) is True:
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
            if isinstance(out.get("enum"), list) and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _closest(errors: Any) -> Any:
    """Among the errors of anyOf/oneOf alternatives, the first of the alternative with the
    fewest errors (the one the instance was most likely meant to be)."""
    by_branch: dict[Any, list[Any]] = {}
    for error in errors:
        branch = error.relative_schema_path[0] if error.relative_schema_path else None
        by_branch.setdefault(branch, []).append(error)
    return min(by_branch.values(),
               key=lambda group: (group[0].validator == "type", len(group)))[0]


def _pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


class OpenAPIValidator:
    def __init__(self, rest: dict[str, Any], webhooks: dict[str, Any]) -> None:
        from referencing import Registry
        from referencing.jsonschema import DRAFT202012

        self.rest = _nullable(rest) if not rest.get("openapi", "").startswith("3.1") else rest
        self.webhooks = webhooks
        self.registry: Any = Registry().with_resources([
            ("urn:github-rest", DRAFT202012.create_resource(self.rest)),
            ("urn:github-webhooks", DRAFT202012.create_resource(self.webhooks)),
        ])
        self._validators: dict[str, Any] = {}

    @classmethod
    def load(cls, directory: Traversable | None = None) -> OpenAPIValidator:
        folder = directory or default_dir()
        try:
            rest = json.loads((folder / REST_FILE).read_text(encoding="utf-8"))
            hooks = json.loads((folder / WEBHOOKS_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise RuntimeError(
                f"OpenAPI validation needs {REST_FILE} and {WEBHOOKS_FILE} in {folder} "
                f"(set {ENV_DIR}, or run python -m conveyor_emulator.make_trimmed)") from exc
        return cls(rest, hooks)

    # -- plumbing --------------------------------------------------------------------------------
    def _validator(self, uri: str) -> Any:
        found = self._validators.get(uri)
        if found is None:
            from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

            found = Draft202012Validator({"$ref": uri}, registry=self.registry)
            self._validators[uri] = found
        return found

    def _errors(self, uri: str, instance: Any, label: str) -> list[str]:
        validator = self._validator(uri)
        out = []
        for error in validator.iter_errors(instance):
            # for anyOf/oneOf, report the alternative that came closest
            while error.context:
                error = _closest(error.context)
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            out.append(f"{label}: {where}: {error.message[:300]}")
            if len(out) >= 5:
                break
        return out

    def operation(self, method: str, template: str) -> dict[str, Any] | None:
        item = self.rest.get("paths", {}).get(template)
        if not isinstance(item, dict):
            return None
        op = item.get(method.lower())
        return op if isinstance(op, dict) else None

    def _parameters(self, template: str, op: dict[str, Any]) -> list[dict[str, Any]]:
        params = []
        item = self.rest["paths"][template]
        for param in [*item.get("parameters", []), *op.get("parameters", [])]:
            if "$ref" in param:
                name = param["$ref"].rsplit("/", 1)[-1]
                param = self.rest["components"]["parameters"][name]
            params.append(param)
        return params

    # -- checks ----------------------------------------------------------------------------------
    def check_request(self, method: str, template: str, params: dict[str, str],
                      query: dict[str, str], body: Any) -> list[str]:
        label = f"{method} {template} request"
        op = self.operation(method, template)
        if op is None:
            return [f"{label}: not in GitHub's REST description"]
        out = []
        for param in self._parameters(template, op):
            where, name = param.get("in"), param.get("name")
            if where == "path" and name not in params:
                out.append(f"{label}: path parameter {name} missing")
            if where == "query" and param.get("required") and name not in query:
                out.append(f"{label}: required query parameter {name} missing")
        known = {p.get("name") for p in self._parameters(template, op) if p.get("in") == "query"}
        if method == "GET":
            # GitHub paginates every list, though a few list operations (user package
            # versions) are described without the two parameters
            known |= {"page", "per_page"}
        for name in query:
            if name not in known:
                out.append(f"{label}: undocumented query parameter {name}")
        request_body = op.get("requestBody")
        if isinstance(request_body, dict):
            content = request_body.get("content", {})
            if "application/json" in content:
                if body is None:
                    if request_body.get("required"):
                        out.append(f"{label}: JSON body required")
                else:
                    uri = "urn:github-rest#/" + _pointer(
                        "paths", template, method.lower(), "requestBody", "content",
                        "application/json", "schema")
                    out.extend(self._errors(uri, body, label))
        elif body not in (None, {}, []):
            out.append(f"{label}: body sent to an operation that takes none")
        return out

    def check_response(self, method: str, template: str, status: int, body: Any) -> list[str]:
        label = f"{method} {template} {status}"
        op = self.operation(method, template)
        if op is None:
            return [f"{label}: not in GitHub's REST description"]
        responses = op.get("responses", {})
        key = str(status) if str(status) in responses else (
            "default" if "default" in responses else None)
        if key is None:
            if status >= 400:
                # GitHub documents few error codes per operation; every error uses basic-error
                if isinstance(body, dict) and isinstance(body.get("message"), str):
                    return []
                return [f"{label}: error response without a message"]
            return [f"{label}: status not documented"]
        response = responses[key]
        base: tuple[str, ...]
        if "$ref" in response:
            name = response["$ref"].rsplit("/", 1)[-1]
            base = ("components", "responses", name)
            response = self.rest["components"]["responses"][name]
        else:
            base = ("paths", template, method.lower(), "responses", key)
        content = response.get("content", {})
        if "application/json" not in content:
            if status >= 400 and isinstance(body, dict) and isinstance(body.get("message"), str):
                return []  # documented without a body, but GitHub's errors always carry one
            if body not in (None, {}, ""):
                return [f"{label}: body on a response documented without one"]
            return []
        if "schema" not in content["application/json"]:
            return []
        uri = "urn:github-rest#/" + _pointer(*base, "content", "application/json", "schema")
        if isinstance(body, list) and len(body) > 2:
            # every item of a list has the same shape; checking the ends keeps pages fast
            body = [body[0], body[-1]]
        return self._errors(uri, body, label)

    def check_webhook(self, event: str, payload: dict[str, Any]) -> list[str]:
        action = payload.get("action")
        key = event.replace("_", "-") + (f"-{action}".replace("_", "-")
                                         if isinstance(action, str) else "")
        if key not in self.webhooks.get("webhooks", {}):
            key = event.replace("_", "-")
        hook = self.webhooks.get("webhooks", {}).get(key)
        label = f"webhook {event}.{action}" if action else f"webhook {event}"
        if hook is None:
            return [f"{label}: no schema in GitHub's webhook description"]
        uri = "urn:github-webhooks#/" + _pointer(
            "webhooks", key, "post", "requestBody", "content", "application/json", "schema")
        return self._errors(uri, payload, label)
