"""Receipts: the check run Conveyor posts on every commit it makes.

Only this app can create a check run under its own name, and Conveyor posts `conveyor/commit`
on no commit but those it has just made. So a commit attributed to the app's bot that carries
this app's receipt is Conveyor's own — on a GitHub Enterprise Server that does not sign the
commits an app makes through the API as much as on github.com, where GitHub's signature is a
second proof. A receipt, once there, never goes away: it is kept by sha.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.github.checks import check_output, check_run, create_check_run, is_own
from bot.github.client import sha_store
from bot.names import RECEIPT_CHECK

if TYPE_CHECKING:
    from bot.runtime.context import Context


async def post_receipt(ctx: Context, gh: GitHubAPI, repo: str, sha: str, what: str) -> None:
    """Mark ``sha`` as a commit Conveyor made (``what``: one line saying which)."""
    await create_check_run(gh, repo, sha, check_run(
        RECEIPT_CHECK, check_output("Made by Conveyor", f"{what}\n\nConveyor made this commit; "
                                    "this check run is how it knows its own commits."),
        conclusion="neutral", completed_at=ctx.clock(), external_id=sha))
    sha_store(gh).responses[(repo.lower(), "receipt", sha)] = True


async def has_receipt(gh: GitHubAPI, repo: str, sha: str, bot_login: str) -> bool:
    """Whether this app posted its receipt on ``sha``."""
    known = sha_store(gh).responses
    key = (repo.lower(), "receipt", sha)
    if key in known:
        return True
    listed = await gh.getitem(f"/repos/{repo}/commits/{sha}/check-runs"
                              f"?check_name={quote(RECEIPT_CHECK)}&filter=all&per_page=100")
    found = any(is_own(run, None, bot_login) and run.get("head_sha") == sha
                for run in listed.get("check_runs") or [])
    if found:
        known[key] = True
    return found
