"""RedisBudgetBackend: one chain budget shared by every process and host that reaches one Redis server.

Each operation is one Lua script, so reserve and settle are atomic on the server (docs/design.md §20).
Three keys per budget: the spent total, a hash of held reservations (id -> amount) and a sorted set of
their expiry times. Expiry uses the server's clock (``TIME``), so hosts with skewed clocks agree."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Final, TypeVar

from chainwarden.containment.budget._protocol import (
    DEFAULT_RESERVATION_TTL_S,
    EPSILON,
    BudgetBackendUnavailable,
    check_amount,
    check_name,
    check_reservation_id,
    check_ttl,
)

__all__ = ["RedisBudgetBackend"]

T = TypeVar("T")

# Drops the expired holds of this budget; every script starts with it. KEYS: spent, held, expiry.
_PURGE: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, id in ipairs(gone) do redis.call('HDEL', KEYS[2], id) end
if #gone > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) end
local function held_total()
  local held = 0
  for _, v in ipairs(redis.call('HVALS', KEYS[2])) do held = held + tonumber(v) end
  return held
end
local function fmt(x) return string.format('%.17g', x) end
"""
# ARGV: amount, ceiling, ttl_ms, id, epsilon. Returns {1} or {0, spent, held}.
_RESERVE: Final = (
    _PURGE
    + """
local held = held_total()
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
if spent + held + tonumber(ARGV[1]) > tonumber(ARGV[2]) + tonumber(ARGV[5]) then
  return {0, fmt(spent), fmt(held)}
end
redis.call('HSET', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[4])
return {1}
"""
)
# ARGV: id, actual (or '' to charge the held amount: commit). Returns {found, spent}.
_SETTLE: Final = (
    _PURGE
    + """
local amount = redis.call('HGET', KEYS[2], ARGV[1])
if amount then
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
end
local charge = ARGV[2]
if charge == '' then
  if not amount then return {0, fmt(tonumber(redis.call('GET', KEYS[1]) or '0'))} end
  charge = amount
end
local spent = redis.call('INCRBYFLOAT', KEYS[1], charge)
return {amount and 1 or 0, spent}
"""
)
# ARGV: id. Returns 1 when the hold existed.
_ROLLBACK: Final = (
    _PURGE
    + """
local found = redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return found
"""
)
_RESERVED: Final = _PURGE + "return fmt(held_total())"


class RedisBudgetBackend:
    """A chain budget shared through Redis: ``ExecutionConfig(budget_backend=RedisBudgetBackend(url, key=k))``

    ``url`` is a redis-py URL (``redis://host:port/db``, ``rediss://…``, ``unix:///path/redis.sock``);
    ``key`` names the budget (every process using the same key shares it). A reservation not settled
    within ``reservation_ttl_s`` seconds is released by the server. ``timeout_s`` bounds each round trip;
    an unreachable server raises ``BudgetBackendUnavailable``. Needs the ``redis`` extra."""

    def __init__(
        self,
        url: str,
        *,
        key: str,
        reservation_ttl_s: float = DEFAULT_RESERVATION_TTL_S,
        timeout_s: float = 2.0,
    ) -> None:
        check_name(url, "url")
        check_name(key, "key")
        ttl = check_ttl(reservation_ttl_s)
        timeout = check_amount(timeout_s, "timeout_s")
        if timeout <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        try:
            import redis  # noqa: PLC0415  (the optional `redis` extra)
            from redis.backoff import NoBackoff  # noqa: PLC0415
            from redis.retry import Retry  # noqa: PLC0415
        except ImportError as err:  # pragma: no cover - the dev environment has it
            raise ImportError("RedisBudgetBackend needs redis-py: pip install 'chainwarden[redis]'") from err
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        try:
            # No client-side retry: a reserve or settle whose reply was lost must not run twice.
            # The health check pings a connection idle for a second, so a restarted server is noticed.
            self._client: Any = redis.Redis.from_url(
                url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                health_check_interval=1,
                retry=Retry(NoBackoff(), 0),
            )
        except ValueError as err:
            raise ValueError(f"url is not a Redis URL: {err}") from None
        self._url = url
        self._key = key
        self._ttl_ms = max(1, round(ttl * 1000))
        prefix = f"chainwarden:budget:{{{key}}}"  # a hash tag: the three keys live on one cluster slot
        self._keys = (f"{prefix}:spent", f"{prefix}:held", f"{prefix}:expiry")
        self._reserve = self._client.register_script(_RESERVE)
        self._settle = self._client.register_script(_SETTLE)
        self._rollback = self._client.register_script(_ROLLBACK)
        self._reserved = self._client.register_script(_RESERVED)

    @property
    def key(self) -> str:
        return self._key

    @property
    def reservation_ttl_s(self) -> float:
        return self._ttl_ms / 1000.0

    def __repr__(self) -> str:
        return f"RedisBudgetBackend({self._url!r}, key={self._key!r})"

    def _call(self, what: str, op: Callable[[], T]) -> T:
        try:
            return op()
        except self._errors as err:
            raise BudgetBackendUnavailable(
                f"Redis budget backend {self._url!r} {what} failed: {err}"
            ) from err

    # -- veronica-core's protocol ----------------------------------------------------------

    def add(self, amount: float) -> float:
        value = check_amount(amount, "amount")
        return float(self._call("add", lambda: self._client.incrbyfloat(self._keys[0], value)))

    def get(self) -> float:
        raw = self._call("get", lambda: self._client.get(self._keys[0]))
        return 0.0 if raw is None else float(raw)

    def get_reserved(self) -> float:
        return max(0.0, float(self._call("get_reserved", lambda: self._reserved(keys=self._keys))))

    def reset(self) -> None:
        self._call("reset", lambda: self._client.delete(*self._keys))

    def close(self) -> None:
        self._client.close()

    def reserve(self, amount: float, ceiling: float) -> str:
        """Holds ``amount`` if spent + held + amount <= ceiling; else raises ``OverflowError``."""
        value = check_amount(amount, "amount")
        limit = check_amount(ceiling, "ceiling")
        rid = uuid.uuid4().hex
        args = (repr(value), repr(limit), self._ttl_ms, rid, repr(EPSILON))
        answer = self._call("reserve", lambda: self._reserve(keys=self._keys, args=args))
        if int(answer[0]) != 1:
            spent, held = float(answer[1]), float(answer[2])
            raise OverflowError(
                f"shared budget {self._key!r}: ${value:.6f} with ${spent:.6f} spent and ${held:.6f} "
                f"held would exceed the ceiling ${limit:.6f}"
            )
        return rid

    def commit(self, reservation_id: str) -> float:
        """Charges the held amount; ``KeyError`` when the hold expired or was already released."""
        rid = check_reservation_id(reservation_id)
        found, spent = self._call("commit", lambda: self._settle(keys=self._keys, args=(rid, "")))
        if int(found) != 1:
            raise KeyError(f"reservation {rid!r} not found (expired, committed or rolled back)")
        return float(spent)

    def rollback(self, reservation_id: str) -> None:
        rid = check_reservation_id(reservation_id)
        if int(self._call("rollback", lambda: self._rollback(keys=self._keys, args=(rid,)))) != 1:
            raise KeyError(f"reservation {rid!r} not found (expired, committed or rolled back)")

    # -- ours --------------------------------------------------------------------------------

    def settle(self, reservation_id: str, actual_usd: float) -> float:
        """Releases the hold and charges ``actual_usd`` in one step; returns the new spent total. The
        cost is charged even when the hold already expired: the money was spent."""
        rid = check_reservation_id(reservation_id)
        actual = check_amount(actual_usd, "actual_usd")
        _, spent = self._call("settle", lambda: self._settle(keys=self._keys, args=(rid, repr(actual))))
        return float(spent)
