"""GitHub's JSON for users and organizations."""

from __future__ import annotations

from conveyor_emulator.store.state import JSON, Account, iso
from conveyor_emulator.store.world import World


def user(world: World, login: str | Account) -> JSON:
    acct = login if isinstance(login, Account) else world.account(login)
    slug = acct.login.removesuffix("[bot]")
    api = world.api_url
    base = f"{api}/users/{acct.login}"
    html = f"{world.web_url}/apps/{slug}" if acct.type == "Bot" else f"{world.web_url}/{acct.login}"
    return {
        "login": acct.login,
        "id": acct.id,
        "node_id": acct.node_id,
        "avatar_url": f"{world.web_url}/avatars/{acct.id}",
        "gravatar_id": "",
        "url": base,
        "html_url": html,
        "followers_url": f"{base}/followers",
        "following_url": f"{base}/following{{/other_user}}",
        "gists_url": f"{base}/gists{{/gist_id}}",
        "starred_url": f"{base}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{base}/subscriptions",
        "organizations_url": f"{base}/orgs",
        "repos_url": f"{base}/repos",
        "events_url": f"{base}/events{{/privacy}}",
        "received_events_url": f"{base}/received_events",
        "type": acct.type,
        "user_view_type": "public",
        "site_admin": False,
    }


def public_user(world: World, acct: Account) -> JSON:
    out = user(world, acct)
    created = iso(acct.created_at or world.now())
    out.update({
        "name": acct.name, "company": None, "blog": "", "location": None,
        "email": acct.email, "hireable": None, "bio": None, "twitter_username": None,
        "public_repos": sum(1 for r in world.repos.values()
                            if r.owner.lower() == acct.login.lower() and not r.private),
        "public_gists": 0, "followers": 0, "following": 0,
        "created_at": created, "updated_at": created,
    })
    return out


def organization(world: World, acct: Account) -> JSON:
    base = f"{world.api_url}/orgs/{acct.login}"
    return {
        "login": acct.login, "id": acct.id, "node_id": acct.node_id, "url": base,
        "repos_url": f"{base}/repos", "events_url": f"{base}/events",
        "hooks_url": f"{base}/hooks", "issues_url": f"{base}/issues",
        "members_url": f"{base}/members{{/member}}",
        "public_members_url": f"{base}/public_members{{/member}}",
        "avatar_url": f"{world.web_url}/avatars/{acct.id}", "description": None,
    }
