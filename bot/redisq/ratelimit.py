"""The per-installation rate-limit state in Redis, so that every replica honours a wait GitHub
asked of any of them and all of them share one content-creation budget.

- `{conveyor}:github-hold:<installation>` holds the epoch second before which no request of
  the installation may be sent; a script only ever moves it later, and it expires then.
- `{conveyor}:github-writes:<installation>` is a sorted set of the writes of the last hour
  (score = send time); a script counts the last minute and hour and records the write only if
  it fits, or answers how long to wait.
While Redis cannot be reached, each replica keeps to its own memory (the holds it learned
itself, its own writes), the state of one process.
"""

from __future__ import annotations

import logging
import time
import uuid

from redis.asyncio import Redis

from bot.domain.write_budget import WriteBudget
from bot.github.ratelimit import MemoryLimitStore
from bot.redisq.client import REDIS_ERRORS, Keys, wait

log = logging.getLogger(__name__)

HOLD = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local wanted = tonumber(ARGV[1])
if wanted > current then
  redis.call('SET', KEYS[1], ARGV[1], 'PXAT', math.ceil(wanted * 1000) + 1000)
end
return 1
"""

# ARGV: now, per minute, per hour, margin, member. Returns '0' when recorded, else the wait.
RESERVE = """
local now = tonumber(ARGV[1])
local minute_span = 60 + tonumber(ARGV[4])
local hour_span = 3600 + tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - hour_span)
local wait = 0
local function need(span, allowed)
  local recent = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. (now - span), '+inf', 'WITHSCORES')
  local count = #recent / 2
  if count >= allowed then
    local oldest = tonumber(recent[(count - allowed) * 2 + 2])
    wait = math.max(wait, oldest + span - now)
  end
end
-- a window without a limit is sent as 0
if tonumber(ARGV[2]) > 0 then need(minute_span, tonumber(ARGV[2])) end
if tonumber(ARGV[3]) > 0 then need(hour_span, tonumber(ARGV[3])) end
if wait > 0 then
  return tostring(wait)
end
redis.call('ZADD', KEYS[1], now, ARGV[5])
redis.call('PEXPIRE', KEYS[1], math.ceil(hour_span * 1000))
return '0'
"""


class RedisLimitStore:
    def __init__(self, redis: Redis, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()
        self.local = MemoryLimitStore()
        self._hold = redis.register_script(HOLD)
        self._reserve = redis.register_script(RESERVE)
        self._last_warning = 0.0

    async def held_until(self, installation: int) -> float:
        local = await self.local.held_until(installation)
        try:
            shared = await wait(self.redis.get(self.keys.github_hold(installation)))
        except REDIS_ERRORS as exc:
            self._warn(exc)
            return local
        return max(local, float(shared or 0))

    async def hold(self, installation: int, until: float) -> None:
        await self.local.hold(installation, until)
        try:
            await self._hold(keys=[self.keys.github_hold(installation)], args=[repr(until)])
        except REDIS_ERRORS as exc:
            self._warn(exc)

    async def reserve_write(self, installation: int, now: float, budget: WriteBudget) -> float:
        try:
            answer = await self._reserve(
                keys=[self.keys.github_writes(installation)],
                args=[repr(now), budget.per_minute or 0, budget.per_hour or 0,
                      repr(budget.margin),
                      f"{now!r}:{uuid.uuid4().hex[:8]}"])
        except REDIS_ERRORS as exc:
            self._warn(exc)
            return self.local.reserve_now(installation, now, budget)
        return float(answer)

    def _warn(self, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._last_warning >= 1.0:
            self._last_warning = now
            log.warning("rate-limit state not shared (redis failed); this replica's own for now",
                        extra={"error": str(exc) or type(exc).__name__})

