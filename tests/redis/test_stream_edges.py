"""The Redis delivery stream at its edges, on a real redis-server: entries no replica can read,
a full backlog, a stream deleted under the consumer group, and Redis going away while
deliveries are offered, acknowledged and retried."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("redis", reason="the redis client is not installed (pip install -e '.[test]')")

from bot.metrics import Metrics
from bot.redisq import RedisQueue
from bot.redisq.client import Keys
from bot.redisq.stream import decode, encode
from bot.runtime.queue import Job
from tests.redis.support import RedisServer


@pytest.mark.parametrize("fields", [
    None, {}, {"job": "not json"}, {"job": '["a list"]'}, {"job": '{"event": "push"}'},
    {"job": '{"event": 7, "payload": {}}'}, {"job": '{"event": "push", "payload": []}'},
    {"job": '{"event": "push", "payload": {}, "attempt": "2"}'},
    {"job": '{"event": "push", "payload": {}, "only": "bot.handlers.x"}'},
    {"job": '{"event": "push"'}, {"job": '["push"]\n{}'}, {"job": '{"id": "d-1"}\n{}'},
])
def test_entries_that_are_no_job(fields: dict[str, str] | None) -> None:
    assert decode("1-0", fields) is None


def test_a_job_survives_the_stream_and_an_entry_without_id_gets_one() -> None:
    job = Job("d-1", "push", b'{"ref":"refs/heads/main"}', attempt=3,
              only=("pulls.gate",))
    back = decode("5-1", {"job": encode(job)})
    assert back is not None
    assert (back.delivery_id, back.event, back.body, back.attempt, back.only, back.receipt) \
        == ("d-1", "push", job.body, 3, ("pulls.gate",), "5-1")
    internal = decode("6-0", {"job": encode(Job.of("", "conveyor.resync", {}))})
    assert internal is not None and internal.delivery_id == "internal-6-0"


def test_the_body_is_stored_as_it_came_after_one_line_about_the_job() -> None:
    body = b'{"action":"published",\n  "release": {"body": "line\\nline \xc3\xa9"}}'
    assert encode(Job("d-2", "release", body)) == \
        '{"event":"release","id":"d-2"}\n' + body.decode()
    back = decode("7-0", {"job": encode(Job("d-2", "release", body))})
    assert back is not None and back.body == body


def test_an_entry_of_the_earlier_format_is_still_read() -> None:
    """Entries and timers stored before bodies were kept as they came hold the payload in
    their JSON; a replica of this version reads them during a rolling upgrade."""
    back = decode("8-0", {"job": '{"id":"d-3","event":"push","payload":{"ref":"refs/x"}}'})
    assert back is not None and (back.delivery_id, back.payload()) == ("d-3", {"ref": "refs/x"})
    timer = decode("9-0", {"job": '{"event":"conveyor.gate","payload":{"pull":7}}'})
    assert timer is not None and (timer.delivery_id, timer.payload()) == (
        "internal-9-0", {"pull": 7})


def queue(redis_client: Any, keys: Keys, **options: Any) -> RedisQueue:
    return RedisQueue(redis_client, Metrics(), keys=keys, consumer=options.pop("consumer", "a"),
                      block_ms=50, stats_interval=0.05, **{"maxsize": 100, **options})


async def test_an_undecodable_entry_goes_to_the_dead_letters_and_the_next_is_taken(
        redis_client: Any) -> None:
    keys = Keys("{conveyor-test-undecodable}")
    stream = queue(redis_client, keys)
    await redis_client.xadd(keys.stream, {"job": "{truncated"})
    assert await stream.offer(Job.of("d-ok", "push", {"n": 1})) == "accepted"
    taken = await asyncio.wait_for(stream.take(), 5)
    assert taken.delivery_id == "d-ok"
    dead = await redis_client.xrange(keys.dead_letters)
    assert len(dead) == 1
    record = dead[0][1]
    assert (record["job"], record["reason"], record["attempts"], record["consumer"]) == (
        "{truncated", "undecodable entry", "1", "a")
    await stream.done(taken)
    assert await redis_client.xlen(keys.stream) == 0


async def test_a_full_backlog_refuses_and_a_duplicate_is_named(redis_client: Any) -> None:
    stream = queue(redis_client, Keys("{conveyor-test-full}"), maxsize=2)
    assert await stream.offer(Job.of("d-1", "push", {})) == "accepted"
    assert await stream.offer(Job.of("d-1", "push", {})) == "duplicate"
    assert await stream.offer(Job.of("d-2", "push", {})) == "accepted"
    assert await stream.offer(Job.of("d-3", "push", {})) == "full"


async def test_a_stream_deleted_under_the_group_is_recreated(redis_client: Any) -> None:
    keys = Keys("{conveyor-test-nogroup}")
    stream = queue(redis_client, keys)
    assert await stream.offer(Job.of("d-1", "push", {})) == "accepted"
    first = await asyncio.wait_for(stream.take(), 5)
    await stream.done(first)
    await redis_client.delete(keys.stream)  # the group goes with it: XREADGROUP says NOGROUP
    reader = asyncio.create_task(stream.take())
    await asyncio.sleep(0.2)
    assert await stream.offer(Job.of("d-2", "push", {})) == "accepted"
    second = await asyncio.wait_for(reader, 5)
    assert second.delivery_id == "d-2"
    groups = await redis_client.xinfo_groups(keys.stream)
    assert [group["name"] for group in groups] == ["conveyor"]


async def test_join_waits_for_the_deliveries_in_work(redis_client: Any) -> None:
    stream = queue(redis_client, Keys("{conveyor-test-join}"))
    assert await stream.offer(Job.of("d-1", "push", {})) == "accepted"
    job = await asyncio.wait_for(stream.take(), 5)
    joined = asyncio.create_task(stream.join())
    await asyncio.sleep(0.05)
    assert not joined.done()
    await stream.done(job)
    await asyncio.wait_for(joined, 1)


async def test_redis_going_away_refuses_deliveries_and_loses_none(
        redis_server: RedisServer, redis_client: Any) -> None:
    keys = Keys("{conveyor-test-away}")
    stream = queue(redis_client, keys)
    assert await stream.offer(Job.of("d-1", "push", {})) == "accepted"
    assert await stream.offer(Job.of("d-2", "push", {})) == "accepted"
    first = await asyncio.wait_for(stream.take(), 5)
    second = await asyncio.wait_for(stream.take(), 5)
    assert await stream.writable() is None
    redis_server.stop()
    assert await stream.offer(Job.of("d-3", "push", {})) == "unavailable"
    why = await stream.writable()
    assert why is not None and why.startswith("ConnectionError")
    await stream.done(first)  # the acknowledgement fails: the entry stays pending
    await stream.retry(second, 0.1)  # the retry cannot be stored: also left pending
    redis_server.start()
    assert await stream.writable() is None
    pending = await redis_client.xpending(keys.stream, keys.group)
    assert pending["pending"] == 2
    assert await redis_client.zcard(keys.retries) == 0
