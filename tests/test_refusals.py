"""`or_none`: which of GitHub's refusals mean "nothing there"."""

from __future__ import annotations

from http import HTTPStatus

import gidgethub
import pytest

from bot.github.refusals import or_none


async def refused(status: HTTPStatus) -> str:
    raise gidgethub.BadRequest(status)


async def answered() -> str:
    return "found"


async def test_the_answer_passes_through() -> None:
    assert await or_none(answered(), 404) == "found"


async def test_a_named_refusal_is_none() -> None:
    assert await or_none(refused(HTTPStatus.NOT_FOUND), 404, 422) is None
    assert await or_none(refused(HTTPStatus.UNPROCESSABLE_ENTITY), 404, 422) is None


async def test_any_other_refusal_is_raised() -> None:
    with pytest.raises(gidgethub.BadRequest) as raised:
        await or_none(refused(HTTPStatus.FORBIDDEN), 404)
    assert raised.value.status_code == 403
