"""The gate's evaluations of one PR coalesce: a call while one runs asks it to run once more
and answers its final verdict; when the running one fails, a caller that waited evaluates
afresh instead of taking the failure for a verdict."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from bot.domain.gate.model import NO_GATED_CHANGE, Verdict
from bot.promotion.gate import gatekeeper
from bot.promotion.gate.gatekeeper import GateService
from bot.promotion.gate.hold import HOLD_LABEL
from bot.promotion.gate.pull_facts import PullFacts
from bot.promotion.policies import BrokenPolicy, DeploymentRepo
from bot.runtime.queue import KeyedLocks


class Scripted(GateService):
    """Each evaluation waits until the test lets it end, then answers or fails as told."""

    def __init__(self, outcomes: list[Verdict | Exception]) -> None:
        super().__init__(ctx=SimpleNamespace(locks=KeyedLocks()))  # type: ignore[arg-type]
        self.outcomes = outcomes
        self.started: list[dict[str, Any] | None] = []
        self.release = asyncio.Event()

    async def _evaluate_once(self, gh: Any, repo: Any, number: int,
                             pr: dict[str, Any] | None) -> tuple[Verdict, PullFacts] | None:
        self.started.append(pr)
        await self.release.wait()
        self.release.clear()
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome, PullFacts(number, "head", "base", "someone", (), None, "", "open")


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


class Approved(GateService):
    """Reads a production promotion that auto-merges; a hold lands after the first reading.
    The check runs and the merge are recorded, not sent."""

    def __init__(self) -> None:
        super().__init__(ctx=SimpleNamespace(  # type: ignore[arg-type]
            bot_login="conveyor[bot]", scheduler=None, locks=KeyedLocks(),
            metrics=SimpleNamespace(gate_verdicts=SimpleNamespace(
                labels=lambda *_: SimpleNamespace(inc=lambda: None)))))
        self.readings = 0
        self.posted: list[str] = []
        self.merged: list[str] = []
        self.runs = SimpleNamespace(post=self._post)  # type: ignore[assignment]
        self.reading = asyncio.Event()
        self.release = asyncio.Event()

    async def _post(self, _gh: Any, _repo: str, _sha: str, verdict: Verdict,
                    **_: Any) -> None:
        self.posted.append(verdict.title)

    async def facts_of(self, gh: Any, repo: Any, pr: dict[str, Any]) -> PullFacts:
        self.readings += 1
        labels = (HOLD_LABEL,) if self.readings > 1 else ()
        facts = PullFacts(7, "head", "base", "conveyor[bot]", labels, None, "", "open")
        facts.trusted = SimpleNamespace(environment="production", head=True)  # type: ignore
        return facts

    async def verdict_for(self, gh: Any, repo: Any, facts: PullFacts) -> Verdict:
        self.reading.set()
        await self.release.wait()  # the renders and the evidence take a while
        self.release.clear()
        return HELD if HOLD_LABEL in facts.labels else APPROVED


APPROVED = Verdict("completed", "success", "All conditions met", (), None)
HELD = Verdict("completed", "failure", "Held", (), None)


async def test_an_auto_merge_waits_for_the_final_verdict_of_a_coalesced_evaluation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    gates = Approved()

    async def merge(_ctx: Any, _gh: Any, _repo: str, _number: int, head: str, *_: Any,
                    **__: Any) -> bool:
        gates.merged.append(head)
        return True

    monkeypatch.setattr(gatekeeper, "merge_promotion", merge)
    production = SimpleNamespace(name="production", auto_merge=True, gated=True,
                                 merge_method="squash")
    repo = object.__new__(DeploymentRepo)
    repo.__dict__.update(full_name="acme/deploy",
                         policy=SimpleNamespace(environments={"production": production}))
    async def read_pull(_url: str) -> dict[str, Any]:
        return {"number": 7}

    github = SimpleNamespace(getitem=read_pull)
    first = asyncio.create_task(gates.evaluate(github, repo, 7, {"number": 7}))
    await gates.reading.wait()
    gates.reading.clear()
    held = asyncio.create_task(gates.evaluate(github, repo, 7))  # `/hold` came meanwhile
    await asyncio.sleep(0)
    gates.release.set()  # the first reading (no hold) ends with a success
    await asyncio.wait_for(gates.reading.wait(), 5)
    gates.release.set()
    assert await first == HELD and await held == HELD
    assert gates.posted == ["All conditions met", "Held"]
    assert gates.merged == []  # the success of the first reading merged nothing


class Replica(GateService):
    """One of two replicas sharing one set of locks, as on Redis: notes how many readings of
    the PR run at once, across both."""

    def __init__(self, locks: KeyedLocks, running: list[int]) -> None:
        super().__init__(ctx=SimpleNamespace(locks=locks))  # type: ignore[arg-type]
        self.running = running

    async def _evaluate_once(self, gh: Any, repo: Any, number: int,
                             pr: dict[str, Any] | None) -> tuple[Verdict, PullFacts] | None:
        self.running.append(self.running[-1] + 1)
        for _ in range(5):  # the reads take a while
            await asyncio.sleep(0)
        self.running.append(self.running[-1] - 1)
        return NO_GATED_CHANGE, PullFacts(number, "head", "base", "someone", (), None, "", "open")


async def test_replicas_read_one_prs_gate_one_at_a_time() -> None:
    locks = KeyedLocks()
    locks.shared = True  # type: ignore[misc]
    running = [0]
    replicas = (Replica(locks, running), Replica(locks, running))
    await asyncio.gather(*(gates.evaluate(None, REPO, 7) for gates in replicas))
    assert max(running) == 1 and running[-1] == 0
