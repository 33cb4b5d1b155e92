"""Which GitHub failures are tried again, for one request and for a whole job
(bot/github/transient.py), on the answers GitHub gives while its replicas catch up."""

from __future__ import annotations

from http import HTTPStatus

import aiohttp
import gidgethub
import pytest

from bot.github.ratelimit import RateLimitError
from bot.github.transient import TransientError, retry_request, transient_failure


@pytest.mark.parametrize(("method", "path", "status", "message", "again"), [
    ("PUT", "/repos/acme/deploy/contents/a.yaml", 404, "Not Found", True),
    ("POST", "/repos/acme/deploy/pulls", 404, "Not Found", True),
    ("GET", "/repos/acme/deploy/contents/a.yaml", 404, "Not Found", False),
    ("POST", "/repos/acme/deploy/issues/1/comments", 404, "Not Found", False),
    ("PATCH", "/repos/acme/deploy/git/refs/heads/x", 422, "Reference update failed", True),
    ("POST", "/repos/acme/deploy/pulls", 422, "No commits between main and x", True),
    ("POST", "/repos/acme/deploy/pulls", 422, "Validation Failed", False),
    ("PUT", "/repos/acme/deploy/pulls/1/merge", 405, "Base branch was modified. Review", True),
    ("PUT", "/repos/acme/deploy/pulls/1/merge", 405, "Pull Request is not mergeable", False),
    ("PUT", "/repos/acme/deploy/contents/a", 405, "Base branch was modified", False),
    ("GET", "/repos/acme/deploy", 403, "Resource not accessible by integration", False),
])
def test_one_request(method: str, path: str, status: int, message: str, again: bool) -> None:
    assert retry_request(method, path, status, message) is again


def bad_request(status: int, message: str) -> gidgethub.BadRequest:
    return gidgethub.BadRequest(HTTPStatus(status), message)


@pytest.mark.parametrize(("exc", "again"), [
    (TimeoutError(), True),
    (aiohttp.ClientConnectionError(), True),
    (TransientError("GET /x failed: ClientConnectorError"), True),
    (RateLimitError("installation 1 waits 60 s"), True),
    (bad_request(404, "Not Found"), True),
    (bad_request(409, "is at abc but expected def"), True),
    (bad_request(429, "Too Many Requests"), True),
    (bad_request(403, "You have exceeded a secondary rate limit"), True),
    (bad_request(403, "Resource not accessible by integration"), False),
    (bad_request(405, "Base branch was modified"), True),
    (bad_request(405, "Pull Request is not mergeable"), False),
    (bad_request(422, "Reference update failed"), True),
    (bad_request(422, "Validation Failed"), False),
    (ValueError("a bug"), False),
])
def test_a_whole_job(exc: BaseException, again: bool) -> None:
    assert transient_failure(exc) is again
