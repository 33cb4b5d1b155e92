"""Two steps of one job awaited at once (`opener.both`): the results in order, and a failure
raised only once the other step is done."""

from __future__ import annotations

import asyncio

import pytest

from bot.promotion.opening.opener import both


async def test_both_results_come_back_in_order() -> None:
    async def later(value: str, delay: float) -> str:
        await asyncio.sleep(delay)
        return value

    assert await both(later("first", 0.02), later("second", 0)) == ("first", "second")


@pytest.mark.parametrize("failing", [0, 1])
async def test_a_failure_is_raised_once_the_other_step_is_done(failing: int) -> None:
    finished: list[str] = []

    async def fails() -> str:
        raise LookupError("GitHub said no")

    async def works() -> str:
        await asyncio.sleep(0.02)
        finished.append("works")
        return "done"

    steps = (fails(), works()) if failing == 0 else (works(), fails())
    with pytest.raises(LookupError, match="GitHub said no"):
        await both(*steps)
    assert finished == ["works"]  # nothing left running behind the caller's back
