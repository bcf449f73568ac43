"""Redis counters: one budget shared by every replica, each step one atomic Lua script.

Times come from the Redis server clock (`TIME`), so replicas with skewed clocks still share one
request log. Per counter key K: K holds the committed amount, `K:r` (hash) the reservations in
flight and `K:x` (sorted set) their expiry, so a reservation whose call never settled frees
itself instead of leaking budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from maestrale.limits.counters import CounterCheck, Decision, RateCheck

# KEYS: [rate log]? then (K, K:r, K:x) per counter.
# ARGV: reservation id, reservation ttl ms, has_rate, [limit, window ms], then per counter:
#       amount, limit, ttl seconds, seed ("" = unknown).
# Returns {status, index, retry_ms}: 1 admitted; 0 refused (index 0 = rate, i = counter i);
# -1 counter i missing and needs a seed.
ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rid = ARGV[1]
local res_ttl = tonumber(ARGV[2])
local has_rate = ARGV[3] == '1'
local k0, a0, window = 1, 4, 0
if has_rate then
  local limit = tonumber(ARGV[4])
  window = tonumber(ARGV[5])
  k0, a0 = 2, 6
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
  if redis.call('ZCARD', KEYS[1]) >= limit then
    local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    return {0, 0, tonumber(oldest[2]) + window - now}
  end
end
local n = (#KEYS - k0 + 1) / 3
local committed = {}
for i = 0, n - 1 do
  local ck, rk, xk = KEYS[k0 + 3 * i], KEYS[k0 + 3 * i + 1], KEYS[k0 + 3 * i + 2]
  local amount = tonumber(ARGV[a0 + 4 * i])
  local limit = tonumber(ARGV[a0 + 4 * i + 1])
  local seed = ARGV[a0 + 4 * i + 3]
  local value = redis.call('GET', ck)
  if not value then
    if seed == '' then return {-1, i + 1, 0} end
    value = seed
  end
  committed[i] = value
  local stale = redis.call('ZRANGEBYSCORE', xk, '-inf', now)
  for _, id in ipairs(stale) do redis.call('HDEL', rk, id) end
  if #stale > 0 then redis.call('ZREMRANGEBYSCORE', xk, '-inf', now) end
  local in_flight = 0
  for _, v in ipairs(redis.call('HVALS', rk)) do in_flight = in_flight + tonumber(v) end
  if tonumber(value) + in_flight + amount > limit then
    return {0, i + 1, 0}
  end
end
if has_rate then
  redis.call('ZADD', KEYS[1], now, rid)
  redis.call('PEXPIRE', KEYS[1], window)
end
for i = 0, n - 1 do
  local ck, rk, xk = KEYS[k0 + 3 * i], KEYS[k0 + 3 * i + 1], KEYS[k0 + 3 * i + 2]
  local ttl = tonumber(ARGV[a0 + 4 * i + 2])
  redis.call('SET', ck, committed[i], 'EX', ttl, 'NX')
  redis.call('HSET', rk, rid, ARGV[a0 + 4 * i])
  redis.call('ZADD', xk, now + res_ttl, rid)
  redis.call('EXPIRE', rk, ttl)
  redis.call('EXPIRE', xk, ttl)
end
return {1, 0, 0}
"""

# KEYS: (K, K:r, K:x) per counter. ARGV: reservation id, then the used amount per counter.
SETTLE = """
local n = #KEYS / 3
for i = 0, n - 1 do
  local ck, rk, xk = KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3]
  redis.call('HDEL', rk, ARGV[1])
  redis.call('ZREM', xk, ARGV[1])
  if redis.call('EXISTS', ck) == 1 then
    redis.call('INCRBYFLOAT', ck, ARGV[i + 2])
  end
end
return 1
"""


def _num(value: float) -> str:
    return repr(float(value))


class RedisCounters:
    def __init__(self, redis: Any, *, reservation_ttl: float = 900.0) -> None:
        self.redis = redis
        self.reservation_ttl_ms = int(reservation_ttl * 1000)
        self._admit = redis.register_script(ADMIT)
        self._settle = redis.register_script(SETTLE)

    async def admit(
        self,
        reservation_id: str,
        rate: RateCheck | None,
        counters: Sequence[CounterCheck],
        seeds: Mapping[str, float],
    ) -> Decision:
        keys: list[str] = []
        args: list[str | int] = [reservation_id, self.reservation_ttl_ms]
        if rate is not None:
            keys.append(rate.key)
            args += ["1", rate.limit, rate.window_ms]
        else:
            args.append("0")
        for check in counters:
            keys += [check.key, f"{check.key}:r", f"{check.key}:x"]
            seed = seeds.get(check.key, 0.0 if not check.seedable else None)
            args += [
                _num(check.amount),
                _num(check.limit),
                check.ttl_s,
                "" if seed is None else _num(seed),
            ]
        status, index, retry_ms = await self._admit(keys=keys, args=args)
        status, index = int(status), int(index)
        if status == 1:
            return Decision(True)
        if status == -1:
            return Decision(False, missing=[index - 1])
        if index == 0:
            return Decision(False, refused_rate=True, retry_after=float(retry_ms) / 1000)
        return Decision(False, refused_counter=index - 1)

    async def settle(self, reservation_id: str, usage: Sequence[tuple[str, float]]) -> None:
        if not usage:
            return
        keys: list[str] = []
        for key, _ in usage:
            keys += [key, f"{key}:r", f"{key}:x"]
        await self._settle(keys=keys, args=[reservation_id, *(_num(u) for _, u in usage)])

    async def aclose(self) -> None:
        return None  # the client belongs to the app
