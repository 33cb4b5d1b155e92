"""The socket between the intake process and the workers process: its frames, and the copy of
the routes the intake answers with."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest
from gidgethub import sansio

from bot.handlers import DECLARED
from bot.handlers.routes import Handlers, bind
from bot.runtime.queue import Job
from bot.serving.link import (
    ASK,
    JOB,
    Link,
    LinkClosed,
    job_content,
    job_of,
    numbered,
    question,
    router_of,
    routing_table,
)
from tests.reliability.test_bad_input import load_examples


def test_the_intakes_copy_of_the_routes_takes_what_the_router_takes() -> None:
    router = Handlers(bind(DECLARED, object())).router  # bound to nothing: routing only
    copy = router_of(routing_table(router))
    examples = load_examples()
    assert len(examples) > 150
    for example in examples:
        event = sansio.Event(example["payload"], event=example["event"], delivery_id="d")
        assert bool(copy.fetch(event)) is bool(router.fetch(event)), example["event"]
    for action in ("published", "created", "deleted", "edited"):
        probe = sansio.Event({"action": action}, event="release", delivery_id="d")
        assert bool(copy.fetch(probe)) is bool(router.fetch(probe)), action
    assert not copy.fetch(sansio.Event({}, event="no_such_event", delivery_id="d"))


async def pair(max_body: int = 1024) -> tuple[Link, Link]:
    left, right = socket.socketpair()
    return await Link.over(left, max_body=max_body), await Link.over(right, max_body=max_body)


async def test_a_job_crosses_as_it_was_signed() -> None:
    intake, workers = await pair()
    body = b'{"action":"published","release":{"body":"a\\nb"}}'
    intake.send(JOB, *job_content(Job("d-1", "release", body)))
    intake.send(ASK, *question(7, "health"))
    job_frame, ask_frame = await workers.receive(), await workers.receive()
    assert job_frame.kind == JOB and job_of(job_frame.content) == Job("d-1", "release", body)
    assert ask_frame.kind == ASK and numbered(ask_frame.content) == (7, b"health")
    await intake.close()
    assert not workers.closing
    with pytest.raises(LinkClosed):
        await workers.receive()
    assert workers.closing  # nothing it sends now would be read
    await workers.close()


async def test_jobs_written_at_once_arrive_one_frame_each() -> None:
    intake, workers = await pair()
    jobs = [Job(f"d-{n}", "release", b'{"action":"released","n":%d}' % n) for n in range(3)]
    intake.send_each(JOB, [job_content(job) for job in jobs])
    assert [job_of((await workers.receive()).content) for _ in jobs] == jobs
    await intake.close()
    await workers.close()


async def test_a_frame_longer_than_a_delivery_can_be_ends_the_link() -> None:
    left, right = socket.socketpair()
    reader = await Link.over(right, max_body=1024)
    left.sendall(struct.pack(">I", 1024 + 1024 + 1) + b"J")
    with pytest.raises(LinkClosed, match="a frame of 2049 bytes"):
        await asyncio.wait_for(reader.receive(), 5)
    assert reader.closing
    left.close()
    await reader.close()
