"""How long GitHub asks the client to wait (bot/github/client.wait_asked), from the headers and
body of an answer, as GitHub's "Rate limits for the REST API" describes them."""

from __future__ import annotations

import pytest

from bot.github.client import wait_asked
from bot.github.ratelimit import BARE_SECONDARY_WAIT

NOW = 1_000_000.0


@pytest.mark.parametrize(("status", "headers", "body", "wait"), [
    # served, but the primary limit is spent: until the reset, plus a second
    (200, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(NOW + 30)}, b"", 31.0),
    (200, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(NOW - 5)}, b"", 1.0),
    (200, {"x-ratelimit-remaining": "0"}, b"", BARE_SECONDARY_WAIT),
    (200, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "soon"}, b"", BARE_SECONDARY_WAIT),
    (200, {"x-ratelimit-remaining": "12"}, b"", None),
    (200, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(NOW + 30),
           "x-ratelimit-resource": "core"}, b"", 31.0),
    # GraphQL's points are another budget: spending them holds no REST request
    (200, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(NOW + 30),
           "x-ratelimit-resource": "graphql"}, b"", None),
    (403, {"retry-after": "7", "x-ratelimit-resource": "graphql"}, b"", 7.0),
    # refused: retry-after first, then the reset, then the secondary limit's minute
    (429, {"retry-after": "7"}, b"", 7.0),
    (403, {"retry-after": "-3"}, b"", 0.0),
    (403, {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, b"", BARE_SECONDARY_WAIT),
    (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(NOW + 90)}, b"", 91.0),
    (429, {}, b"", BARE_SECONDARY_WAIT),
    (403, {}, b'{"message": "You have exceeded a secondary rate limit."}', BARE_SECONDARY_WAIT),
    # a 403 that names no limit is a permission error: no waiting makes it pass
    (403, {}, b'{"message": "Resource not accessible by integration"}', None),
])
def test_wait_asked(status: int, headers: dict[str, str], body: bytes,
                    wait: float | None) -> None:
    assert wait_asked(status, headers, body, NOW) == wait
