"""The handlers of one event run in their declared order, and each after the handlers it names
in `after`, whatever the functions are called or where they are declared; a retried job names
its handlers by their declared names."""

from __future__ import annotations

from dataclasses import replace

import pytest
from gidgethub import sansio

from bot.handlers import DECLARED, configcheck, pushes
from bot.handlers.routes import Declared, Handler, Handlers, bind, in_run_order

PUSH = sansio.Event({"ref": "refs/heads/main"}, event="push", delivery_id="1")


def bound(declared: tuple[Declared[object], ...]) -> list[Handler]:
    """Bound to a stand-in for the capabilities: the order is read, nothing runs."""
    return bind(declared, object())


def push_order(declared: tuple[Declared[object], ...]) -> list[str]:
    return [handler.name for handler in Handlers(bound(declared)).for_event(PUSH)]


def test_a_push_refreshes_the_policy_before_the_config_check_reads_it() -> None:
    assert push_order(DECLARED) == ["trace.push", pushes.POLICY, "configcheck.push"]


def test_the_order_holds_when_the_handlers_are_renamed_and_declared_the_other_way() -> None:
    async def zzz_refresh(owner: object, event: sansio.Event, gh: object) -> None: ...

    async def aaa_check(owner: object, event: sansio.Event, gh: object) -> None: ...

    renamed = tuple(
        replace(handler, method=zzz_refresh) if handler.name == pushes.POLICY
        else replace(handler, method=aaa_check) if handler.name == "configcheck.push"
        else handler for handler in reversed(DECLARED))
    order = push_order(renamed)  # type: ignore[arg-type]
    assert order.index(pushes.POLICY) < order.index("configcheck.push")
    # without the declared dependency, the reversed declaration runs the check first: the
    # order above is the dependency's, not the names' or the positions'
    unbound = tuple(replace(handler, after=()) if handler.name == "configcheck.push"
                    else handler for handler in renamed)
    order = push_order(unbound)  # type: ignore[arg-type]
    assert order.index("configcheck.push") < order.index(pushes.POLICY)


def test_the_config_check_declares_that_it_follows_the_policy_refresh() -> None:
    [check] = [handler for handler in configcheck.DECLARED if handler.name == "configcheck.push"]
    assert check.after == (pushes.POLICY,)


def test_names_are_unique_known_and_without_cycles() -> None:
    def handler(name: str, *after: str) -> Handler:
        async def run(event: sansio.Event, gh: object) -> None: ...
        return Handler(name, run, (("push", None),), after)  # type: ignore[arg-type]

    with pytest.raises(ValueError, match="two handlers are named a"):
        in_run_order([handler("a"), handler("a")])
    with pytest.raises(ValueError, match="b runs after c, which nobody declares"):
        in_run_order([handler("b", "c")])
    with pytest.raises(ValueError, match="handlers wait for each other: a → b"):
        in_run_order([handler("a", "b"), handler("b", "a")])
    assert [h.name for h in in_run_order([handler("a", "b"), handler("b")])] == ["b", "a"]


def test_every_declared_handler_is_routed_on_each_of_its_events() -> None:
    handlers = Handlers(bound(DECLARED))
    assert len(handlers.ordered) == len({handler.name for handler in DECLARED})
    for handler in handlers.ordered:
        for event, action in handler.on:
            probe = sansio.Event({"action": action} if action else {}, event=event,
                                 delivery_id="d")
            assert handler in handlers.for_event(probe), (event, action)


def test_a_retried_job_runs_the_handlers_it_names_and_all_where_it_names_an_unknown_one() -> None:
    handlers = Handlers(bound(DECLARED))

    def names(only: tuple[str, ...]) -> list[str]:
        return [handler.name for handler in handlers.to_run(PUSH, only)]

    assert names(()) == ["trace.push", pushes.POLICY, "configcheck.push"]
    assert names(("configcheck.push",)) == ["configcheck.push"]
    # stored by an earlier version under the names it gave its handlers then
    assert names(("bot.handlers.configcheck.on_push",)) == [
        "trace.push", pushes.POLICY, "configcheck.push"]
    assert names(("configcheck.push", "bot.handlers.pushes.on_push")) == [
        "trace.push", pushes.POLICY, "configcheck.push"]
