"""What a handler is to the router: a declared name (what a retried job names), the events it
takes, and the handlers that must run before it on the same event.

A module declares its handlers as methods of a class that holds the capabilities they use;
the composition root binds them to one instance. Handlers of one event run in the order they
are declared in, except that each runs after every handler it names in `after`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from gidgethub import routing, sansio

from bot.github.client import ConveyorGitHubAPI

# (event, action): one action of an event, or every action with None.
Route = tuple[str, str | None]
Run = Callable[[sansio.Event, ConveyorGitHubAPI], Awaitable[None]]
Owner = TypeVar("Owner")


@dataclass(frozen=True, eq=False)
class Declared(Generic[Owner]):
    """A handler as its module declares it: a method of the class of its capabilities."""

    name: str
    method: Callable[[Owner, sansio.Event, ConveyorGitHubAPI], Awaitable[None]]
    on: tuple[Route, ...]
    after: tuple[str, ...] = ()

    def bind(self, owner: Owner) -> Handler:
        return Handler(self.name, functools.partial(self.method, owner), self.on, self.after)


@dataclass(frozen=True, eq=False)
class Handler:
    """A handler bound to its capabilities, as the router runs it."""

    name: str
    run: Run
    on: tuple[Route, ...]
    after: tuple[str, ...] = ()

    async def __call__(self, event: sansio.Event, gh: ConveyorGitHubAPI) -> None:
        await self.run(event, gh)


def bind(declared: Iterable[Declared[Owner]], owner: Owner) -> list[Handler]:
    return [handler.bind(owner) for handler in declared]


def in_run_order(handlers: Sequence[Handler]) -> tuple[Handler, ...]:
    """The handlers in declaration order, each moved after those it names in `after`; two
    handlers of one name, a name nobody declares, or a cycle is a ValueError."""
    by_name: dict[str, Handler] = {}
    for handler in handlers:
        if handler.name in by_name:
            raise ValueError(f"two handlers are named {handler.name}")
        by_name[handler.name] = handler
    placed: list[Handler] = []
    done: set[str] = set()
    visiting: list[str] = []

    def place(handler: Handler) -> None:
        if handler.name in done:
            return
        if handler.name in visiting:
            raise ValueError(f"handlers wait for each other: {' → '.join(visiting)}")
        visiting.append(handler.name)
        for name in handler.after:
            if name not in by_name:
                raise ValueError(f"{handler.name} runs after {name}, which nobody declares")
            place(by_name[name])
        visiting.pop()
        done.add(handler.name)
        placed.append(handler)

    for handler in handlers:
        place(handler)
    return tuple(placed)


class Handlers:
    """The app's handlers in their run order, and the router that finds an event's."""

    def __init__(self, handlers: Sequence[Handler]) -> None:
        self.ordered = in_run_order(handlers)
        self.router = routing.Router()
        for handler in self.ordered:
            for event, action in handler.on:
                if action is None:
                    self.router.add(handler, event)
                else:
                    self.router.add(handler, event, action=action)

    def for_event(self, event: sansio.Event) -> list[Handler]:
        """The handlers of ``event``, in their run order."""
        found = self.router.fetch(event)
        return [handler for handler in self.ordered if handler in found]

    def to_run(self, event: sansio.Event, only: Sequence[str] = ()) -> list[Handler]:
        """The handlers a job of ``event`` runs: all of them, or those ``only`` names when it
        is retried. A retry naming a handler this version does not declare (stored by an
        earlier version, whose names differed) runs them all: handlers are safe to run
        again, and a retry that runs nothing would lose the event."""
        handlers = self.for_event(event)
        wanted = set(only)
        if not wanted or not wanted <= {handler.name for handler in handlers}:
            return handlers
        return [handler for handler in handlers if handler.name in wanted]
