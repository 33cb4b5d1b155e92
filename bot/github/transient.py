"""Which of GitHub's failures are worth trying again: for one request, and for a whole job.

Request level: answers GitHub gives while its replicas catch up, which the same request sent
again a moment later gets past — a 404 for a write naming a branch created just before, a 422
"Reference update failed" or "No commits between" right after a push, a 405 "Base branch was
modified" on merge. Job level: those, plus 5xx, timeouts, rate limits and a 409 on a stale
file sha (the job re-reads the file when it runs again), which a whole job retried later gets
past. Anything else (a permission error, a validation error) fails the same way every time.
"""

from __future__ import annotations

import aiohttp
import gidgethub

_WRITES = frozenset({"POST", "PATCH", "PUT"})
_LAGGING_WRITES = ("/contents/", "/git/", "/pulls")
_TRANSIENT_422 = ("Reference update failed", "No commits between")
_TRANSIENT_405 = ("Base branch was modified",)


class TransientError(gidgethub.GitHubException):
    """A timeout or connection failure that outlived its retries."""


def retry_request(method: str, path: str, status: int, message: str) -> bool:
    """The same request, sent again after a short backoff, is likely to succeed."""
    if status == 404:
        return method in _WRITES and any(part in path for part in _LAGGING_WRITES)
    if status == 422:
        return any(text in message for text in _TRANSIENT_422)
    if status == 405:
        return path.endswith("/merge") and any(text in message for text in _TRANSIENT_405)
    return False


def transient_failure(exc: BaseException) -> bool:
    """A job that failed with this is retried (with backoff) before the resync is left to it."""
    if isinstance(exc, TimeoutError | aiohttp.ClientError | TransientError | gidgethub.GitHubBroken
                  | gidgethub.RateLimitExceeded):
        return True
    from bot.github.ratelimit import RateLimitError

    if isinstance(exc, RateLimitError):
        return True
    if isinstance(exc, gidgethub.BadRequest):
        status = int(exc.status_code)
        message = str(exc)
        if status in (404, 409, 429):
            return True
        if status == 403:
            return "secondary rate limit" in message.lower()
        if status == 405:
            return any(text in message for text in _TRANSIENT_405)
        return status == 422 and any(text in message for text in _TRANSIENT_422)
    return False
