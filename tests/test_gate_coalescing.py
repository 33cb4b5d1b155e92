"""The gate's evaluations of one PR coalesce: a call while one runs asks it to run once more
and answers its final verdict; when the running one fails, a caller that waited evaluates
afresh instead of taking the failure for a verdict."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.domain.gate.model import NO_GATED_CHANGE, Verdict
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.policies import BrokenPolicy


class Scripted(GateService):
    """Each evaluation waits until the test lets it end, then answers or fails as told."""

    def __init__(self, outcomes: list[Verdict | Exception]) -> None:
        super().__init__(ctx=None)  # type: ignore[arg-type]  # the seam below reads nothing
        self.outcomes = outcomes
        self.started: list[dict[str, Any] | None] = []
        self.release = asyncio.Event()

    async def _evaluate_once(self, gh: Any, repo: Any, number: int,
                             pr: dict[str, Any] | None) -> Verdict | None:
        self.started.append(pr)
        await self.release.wait()
        self.release.clear()
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


REPO = BrokenPolicy("acme/deploy", [])
SECOND = Verdict("completed", "failure", "the second reading", (), None)


async def let_one_end(gates: Scripted) -> None:
    for _ in range(20):
        await asyncio.sleep(0)
    gates.release.set()


async def test_a_caller_during_an_evaluation_gets_the_verdict_of_the_run_it_asked_for() -> None:
    gates = Scripted([NO_GATED_CHANGE, SECOND])
    first = asyncio.create_task(gates.evaluate(None, REPO, 7, {"number": 7}))
    await asyncio.sleep(0)
    second = asyncio.create_task(gates.evaluate(None, REPO, 7))
    await let_one_end(gates)  # the first reading ends; the second caller asked for another
    await let_one_end(gates)
    assert await first == SECOND and await second == SECOND
    assert gates.started == [{"number": 7}, None]  # the run again reads the PR afresh


async def test_when_the_running_evaluation_fails_a_waiting_caller_evaluates_afresh() -> None:
    gates = Scripted([RuntimeError("GitHub answered 502"), SECOND])
    first = asyncio.create_task(gates.evaluate(None, REPO, 7, {"number": 7}))
    await asyncio.sleep(0)
    second = asyncio.create_task(gates.evaluate(None, REPO, 7))
    await let_one_end(gates)
    with pytest.raises(RuntimeError, match="502"):
        await first
    await let_one_end(gates)
    assert await second == SECOND
    assert gates.started == [{"number": 7}, None]
    assert gates._running == {}
