"""Receipts: the check run Conveyor posts on a commit it makes that GitHub did not sign.

Only this app can create a check run under its own name, and Conveyor posts `conveyor/commit`
on no commit but those it has just made. So a commit attributed to the app's bot that carries
this app's receipt is Conveyor's own. github.com signs the commits an app makes through the
API (`verification.verified` in its answer to the commit's creation): such a commit is proven
by GitHub's signature (`trust.signed_as`), and a receipt would be one write more for nothing.
A GitHub Enterprise Server without web commit signing signs none: there every commit gets its
receipt. The choice is made per commit, from GitHub's own answer, so a server whose signing is
turned on or off is right either way. A receipt, once there, never goes away: it is kept by sha.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gidgethub.abc import GitHubAPI

from bot.github.checks import check_output, check_run, create_check_run, is_own
from bot.github.client import sha_store
from bot.names import RECEIPT_CHECK

if TYPE_CHECKING:
    from bot.runtime.context import Context


def signed_by_github(created: Mapping[str, Any]) -> bool:
    """Whether GitHub signed a commit it has just made for the app: its answer to the creation
    (a git commit, or the `commit` of a contents write) says `verification.verified`."""
    verification = created.get("verification") or {}
    return isinstance(verification, Mapping) and verification.get("verified") is True


async def receipt_unless_signed(ctx: Context, gh: GitHubAPI, full_name: str,
                                created: Mapping[str, Any], what: str) -> None:
    """The receipt of a commit Conveyor has just made (``created``: GitHub's answer naming
    it), unless GitHub signed it."""
    if not signed_by_github(created):
        await post_receipt(ctx, gh, full_name, str(created["sha"]), what)


async def post_receipt(ctx: Context, gh: GitHubAPI, full_name: str, sha: str, what: str) -> None:
    """Mark ``sha`` as a commit Conveyor made (``what``: one line saying which)."""
    await create_check_run(gh, full_name, sha, check_run(
        RECEIPT_CHECK, check_output("Made by Conveyor", f"{what}\n\nConveyor made this commit; "
                                    "this check run is how it knows its own commits."),
        conclusion="neutral", completed_at=ctx.clock(), external_id=sha))
    sha_store(gh).responses[(full_name.lower(), "receipt", sha)] = True


async def has_receipt(gh: GitHubAPI, full_name: str, sha: str, bot_login: str) -> bool:
    """Whether this app posted its receipt on ``sha``."""
    known = sha_store(gh).responses
    key = (full_name.lower(), "receipt", sha)
    if key in known:
        return True
    listed = await gh.getitem(f"/repos/{full_name}/commits/{sha}/check-runs"
                              f"?check_name={quote(RECEIPT_CHECK)}&filter=all&per_page=100")
    found = any(is_own(run, None, bot_login) and run.get("head_sha") == sha
                for run in listed.get("check_runs") or [])
    if found:
        known[key] = True
    return found
