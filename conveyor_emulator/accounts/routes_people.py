"""Users, collaborator permissions and team memberships."""

from __future__ import annotations

from conveyor_emulator.accounts import shapes_accounts
from conveyor_emulator.errors import not_found
from conveyor_emulator.routing import Ctx, Reply, Router

router = Router()
ROLE_NAMES = {"admin": "admin", "maintain": "maintain", "write": "write", "triage": "triage",
              "read": "read", "none": "none"}
LEGACY = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read",
          "read": "read", "none": "none"}


@router.add("GET", "/users/{username}")
async def get_user(ctx: Ctx) -> Reply:
    acct = ctx.world.find_account(ctx.params["username"])
    if acct is None:
        raise not_found()
    return Reply(200, shapes_accounts.public_user(ctx.world, acct))


@router.add("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission")
async def permission(ctx: Ctx) -> Reply:
    login = ctx.params["username"]
    acct = ctx.world.find_account(login)
    if acct is None:
        raise not_found()
    perm = ctx.world.permission(ctx.repo, acct.login)
    user = shapes_accounts.user(ctx.world, acct)
    level = ["read", "triage", "write", "maintain", "admin"]
    idx = level.index(perm) if perm in level else -1
    user["permissions"] = {"admin": idx >= 4, "maintain": idx >= 3, "push": idx >= 2,
                           "triage": idx >= 1, "pull": idx >= 0}
    user["role_name"] = ROLE_NAMES.get(perm, perm)
    return Reply(200, {"permission": LEGACY.get(perm, perm), "role_name": ROLE_NAMES.get(perm,
                                                                                         perm),
                       "user": user})


@router.add("GET", "/orgs/{org}/teams/{team_slug}/memberships/{username}")
async def team_membership(ctx: Ctx) -> Reply:
    org, slug, login = ctx.params["org"], ctx.params["team_slug"], ctx.params["username"]
    team = ctx.world.teams.get((org.lower(), slug.lower()))
    if team is None or login.lower() not in {m.lower() for m in team.members}:
        raise not_found()
    return Reply(200, {
        "url": f"{ctx.world.api_url}/organizations/{org}/team/{team.id}/memberships/{login}",
        "role": "member", "state": "active"})
