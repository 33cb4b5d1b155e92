"""The socket between the intake process and the workers process: length-prefixed frames.

A frame is its length (4 bytes, big-endian, of what follows), one byte naming its kind, and
its content. The intake sends jobs and questions; the workers send their routing table once,
answers, and how many of the jobs they were sent a worker has taken.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gidgethub import routing

from bot.runtime.queue import Job

JOB = b"J"  # intake → workers: a delivery to queue
ASK = b"Q"  # intake → workers: a question (`HEALTH`, `METRICS`) and its number
ROUTES = b"R"  # workers → intake: which events and actions a handler takes
ANSWER = b"A"  # workers → intake: the answer to a question, by its number
TOOK = b"T"  # workers → intake: so many more of the jobs sent were taken by a worker

HEALTH = "health"
METRICS = "metrics"

_LENGTH = struct.Struct(">I")
_NUMBER = struct.Struct(">I")
FRAME_OVERHEAD = 1024  # a job frame: the body, its delivery id and event (100 bytes each)


class LinkClosed(Exception):
    """The other process closed its end (it stopped, or ended abnormally)."""


@dataclass(frozen=True)
class Frame:
    kind: bytes
    content: bytes


class Link:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 max_body: int) -> None:
        self._reader = reader
        self._writer = writer
        self._max_frame = max_body + FRAME_OVERHEAD
        self.ended = False  # the other side closed its end, or sent what is not a frame

    @classmethod
    async def over(cls, sock: socket.socket, *, max_body: int) -> Link:
        reader, writer = await asyncio.open_unix_connection(sock=sock)
        return cls(reader, writer, max_body=max_body)

    def send(self, kind: bytes, *parts: bytes) -> None:
        """Queue a frame for writing (the transport buffers it; no wait)."""
        self.send_each(kind, [parts])

    def send_each(self, kind: bytes, frames: Iterable[Sequence[bytes]]) -> None:
        """One frame of `kind` for each item of `frames` (its parts), in one write."""
        pieces: list[bytes] = []
        for parts in frames:
            pieces += [_LENGTH.pack(len(kind) + sum(len(part) for part in parts)), kind, *parts]
        self._writer.writelines(pieces)

    async def drain(self) -> None:
        """Until what was queued for writing is mostly in the socket (the transport's
        high-water mark); ConnectionError once the other side is gone."""
        await self._writer.drain()

    async def receive(self) -> Frame:
        try:
            head = await self._reader.readexactly(_LENGTH.size)
            size = _LENGTH.unpack(head)[0]
            if not 1 <= size <= self._max_frame:
                raise LinkClosed(f"a frame of {size} bytes")
            data = await self._reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self.ended = True
            raise LinkClosed(str(exc) or type(exc).__name__) from None
        except LinkClosed:
            self.ended = True
            raise
        return Frame(data[:1], data[1:])

    async def close(self) -> None:
        """Flush what is queued, then close: the other side reads the end."""
        if self._writer.is_closing():
            return
        try:
            await self._writer.drain()
            self._writer.close()
            await self._writer.wait_closed()
        except ConnectionError:
            pass

    @property
    def closing(self) -> bool:
        """Either end is closed: nothing sent now would be read."""
        return self.ended or self._writer.is_closing()


def job_content(job: Job) -> list[bytes]:
    """The delivery id and event (header values: no line breaks), then the body as signed."""
    return [f"{job.delivery_id}\n{job.event}\n".encode(), job.body]


def job_of(content: bytes) -> Job:
    delivery_id, event, body = content.split(b"\n", 2)
    return Job(delivery_id.decode(), event.decode(), body)


def question(number: int, what: str) -> list[bytes]:
    return [_NUMBER.pack(number), what.encode()]


def numbered(content: bytes) -> tuple[int, bytes]:
    """A question's or an answer's number, and the rest."""
    return _NUMBER.unpack(content[:_NUMBER.size])[0], content[_NUMBER.size:]


def count(n: int) -> bytes:
    return _NUMBER.pack(n)


def counted(content: bytes) -> int:
    return int(_NUMBER.unpack(content)[0])


def routing_table(router: routing.Router) -> bytes:
    """The events and actions `router` has a handler for, without the handlers: what the
    intake needs to answer 204 to the rest. gidgethub keeps its routes in two mappings and has
    no public way to list them; `tests/test_split_link.py` checks the copy routes alike."""
    deep = {event: {key: sorted(values) for key, values in details.items()}
            for event, details in router._deep_routes.items()}
    return json.dumps({"shallow": sorted(router._shallow_routes), "deep": deep}).encode()


async def _elsewhere(*_args: Any, **_kwargs: Any) -> None:
    """The handler the intake's copy of the routes names: the work is done in the workers."""


def router_of(table: bytes) -> routing.Router:
    data = json.loads(table)
    router = routing.Router()
    for event in data["shallow"]:
        router.add(_elsewhere, event)
    for event, details in data["deep"].items():
        for key, values in details.items():
            for value in values:
                router.add(_elsewhere, event, **{key: value})
    return router
