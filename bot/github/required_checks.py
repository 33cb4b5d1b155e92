"""What a branch requires: the status checks of its branch protection and its rulesets, and the
rulesets' up-to-date and last-push settings.

Both reads need only `metadata: read` (every app has it): "Get a branch" shows the protection's
`required_status_checks.checks` with the `app_id` each must come from, and "Get rules for a
branch" the active rules of every ruleset that applies, `required_status_checks` with an
`integration_id` and `strict_required_status_checks_policy`, `pull_request` with
`require_last_push_approval`. "Get a branch" does not show branch protection's `strict` or its
review settings ("Get branch protection" does, with `administration: read`): only that it
applies. A server without rulesets (GitHub Enterprise Server before 3.11) answers the second
404: it has none. Both are conditional requests, so an unchanged answer costs a `304`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import gidgethub
from gidgethub.abc import GitHubAPI

from bot.domain.enforcement import BranchRules, RequiredCheck

RULES_PAGE = 100


async def branch_rules(gh: GitHubAPI, full_name: str, branch: str) -> BranchRules:
    """Every status check ``branch`` of ``full_name`` requires, with the app each must come
    from, whether branch protection applies, and whether a ruleset requires approval of the
    most recent reviewable push."""
    name = quote(branch, safe="")
    data = await gh.getitem(f"/repos/{full_name}/branches/{name}")
    protection = data.get("protection") or {}
    status_checks = protection.get("required_status_checks") or {}
    checks = status_checks.get("checks")
    if checks is None:  # an answer without `checks` names contexts only: any source
        checks = [{"context": context} for context in status_checks.get("contexts") or []]
    found = [RequiredCheck(str(item.get("context") or ""), _app(item.get("app_id")),
                           "branch protection") for item in checks if isinstance(item, dict)]
    protected = protection.get("enabled") is True or bool(found)
    last_push = False
    try:
        async for rule in gh.getiter(
                f"/repos/{full_name}/rules/branches/{name}?per_page={RULES_PAGE}"):
            found += _ruleset_checks(rule)
            last_push = last_push or _last_push_approval(rule)
    except gidgethub.BadRequest as exc:
        if exc.status_code != 404:
            raise
    return BranchRules(tuple(check for check in found if check.context), protected, last_push)


def _ruleset_checks(rule: Any) -> list[RequiredCheck]:
    if not isinstance(rule, dict) or rule.get("type") != "required_status_checks":
        return []
    where = f"ruleset {rule.get('ruleset_id')}"
    parameters = rule.get("parameters") or {}
    up_to_date = parameters.get("strict_required_status_checks_policy") is True
    listed = parameters.get("required_status_checks") or []
    return [RequiredCheck(str(item.get("context") or ""), _app(item.get("integration_id")),
                          where, up_to_date) for item in listed if isinstance(item, dict)]


def _last_push_approval(rule: Any) -> bool:
    return isinstance(rule, dict) and rule.get("type") == "pull_request" and (
        (rule.get("parameters") or {}).get("require_last_push_approval") is True)


def _app(value: Any) -> int | None:
    """An app id; null, absent or -1 (branch protection's "any app") is any source."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None
