"""RedisBudgetBackend: one chain budget shared by every process and host that reaches one Redis server.

Each operation is one Lua script, so reserve and settle are atomic on the server (docs/design.md §20).
Four keys per budget: the spent total, a hash of held reservations (id -> amount), a sorted set of
their expiry times, and the budget's generation. Expiry uses the server's clock (``TIME``), so hosts
with skewed clocks agree.

The generation (docs/design.md §31) is a random token written when the budget is first used and
checked by every script: a server restarted without persistence (or that evicted the keys) has lost
the spent total, and starting again from zero would let every process spend the ceiling anew. A
backend that finds its generation gone or replaced fails closed (``BudgetBackendUnavailable``) until
``reset()`` starts a new budget. The URL's password never appears in a repr, error or log."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from chainwarden._secrets import mask_secrets
from chainwarden.containment.budget._protocol import (
    DEFAULT_RESERVATION_TTL_S,
    EPSILON,
    BudgetBackendUnavailable,
    check_amount,
    check_name,
    check_reservation_id,
    check_ttl,
)
from chainwarden.errors import BudgetExceeded, InvalidArgument, NotFound

__all__ = ["RedisBudgetBackend"]

T = TypeVar("T")

# The error every script answers when the budget's data is gone (docs/design.md §31).
_LOST: Final = "CHAINWARDEN_BUDGET_LOST"
# Every script starts here: the budget's generation must be the one this backend adopted (ARGV[1]),
# then the expired holds are dropped. KEYS: spent, held, expiry, generation.
_PURGE: Final = f"""
local gen = redis.call('GET', KEYS[4])
if gen ~= ARGV[1] then return redis.error_reply('{_LOST} ' .. (gen or 'none')) end
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
# ARGV: generation, amount, ceiling, ttl_ms, id, epsilon. Returns {1} or {0, spent, held}.
_RESERVE: Final = (
    _PURGE
    + """
local held = held_total()
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
if spent + held + tonumber(ARGV[2]) > tonumber(ARGV[3]) + tonumber(ARGV[6]) then
  return {0, fmt(spent), fmt(held)}
end
redis.call('HSET', KEYS[2], ARGV[5], ARGV[2])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), ARGV[5])
return {1}
"""
)
# ARGV: generation, id, actual (or '' to charge the held amount: commit). Returns {found, spent}.
_SETTLE: Final = (
    _PURGE
    + """
local amount = redis.call('HGET', KEYS[2], ARGV[2])
if amount then
  redis.call('HDEL', KEYS[2], ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[2])
end
local charge = ARGV[3]
if charge == '' then
  if not amount then return {0, fmt(tonumber(redis.call('GET', KEYS[1]) or '0'))} end
  charge = amount
end
local spent = redis.call('INCRBYFLOAT', KEYS[1], charge)
return {amount and 1 or 0, spent}
"""
)
# ARGV: generation, id. Returns 1 when the hold existed.
_ROLLBACK: Final = (
    _PURGE
    + """
local found = redis.call('HDEL', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
return found
"""
)
# ARGV: generation. The held total.
_RESERVED: Final = _PURGE + "return fmt(held_total())"
# ARGV: generation, amount. The new spent total.
_ADD: Final = _PURGE + "return redis.call('INCRBYFLOAT', KEYS[1], ARGV[2])"
# ARGV: generation. The spent total.
_GET: Final = _PURGE + "return fmt(tonumber(redis.call('GET', KEYS[1]) or '0'))"
# ARGV: a new token. The budget's generation, written first if it has none (a new budget).
_ADOPT: Final = """
local gen = redis.call('GET', KEYS[4])
if gen then return gen end
redis.call('SET', KEYS[4], ARGV[1])
return ARGV[1]
"""
# ARGV: a new token. A new period (or a new budget after lost data): spent and held back to zero;
# the generation is kept, or written anew when it was lost. Returns the generation.
_RESET: Final = """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
local gen = redis.call('GET', KEYS[4])
if gen then return gen end
redis.call('SET', KEYS[4], ARGV[1])
return ARGV[1]
"""

_log = logging.getLogger("chainwarden.containment")


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
            raise InvalidArgument(f"timeout_s must be > 0, got {timeout_s!r}", argument="timeout_s")
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
            raise InvalidArgument(
                f"url is not a Redis URL: {mask_secrets(str(err))}", argument="url"
            ) from None
        self._where = mask_secrets(url)  # the only form of the URL this object ever shows
        self._key = key
        self._ttl_ms = max(1, round(ttl * 1000))
        prefix = f"chainwarden:budget:{{{key}}}"  # a hash tag: the four keys live on one cluster slot
        self._keys = (f"{prefix}:spent", f"{prefix}:held", f"{prefix}:expiry", f"{prefix}:generation")
        register = self._client.register_script
        self._reserve = register(_RESERVE)
        self._settle = register(_SETTLE)
        self._rollback = register(_ROLLBACK)
        self._reserved = register(_RESERVED)
        self._add = register(_ADD)
        self._get = register(_GET)
        self._adopt = register(_ADOPT)
        self._reset = register(_RESET)
        # The generation this backend uses, adopted on the first operation (docs/design.md §31).
        self._generation: str | None = None
        self._adopting = threading.Lock()

    @property
    def key(self) -> str:
        return self._key

    @property
    def reservation_ttl_s(self) -> float:
        return self._ttl_ms / 1000.0

    def __repr__(self) -> str:
        return f"RedisBudgetBackend({self._where!r}, key={self._key!r})"

    def _call(self, what: str, op: Callable[[], T]) -> T:
        try:
            return op()
        except self._errors as err:
            detail = mask_secrets(str(err))
            if _LOST in detail:
                raise BudgetBackendUnavailable(
                    f"Redis budget backend {self._where!r} {what} refused: the data of budget "
                    f"{self._key!r} was lost (its generation is gone or replaced: the server restarted "
                    "without persistence, or evicted the keys); refusing to start again from zero. "
                    "Restore the data, or call reset() to start a new budget"
                ) from None
            # redis-py's messages name the host or socket, never the password.
            raise BudgetBackendUnavailable(
                f"Redis budget backend {self._where!r} {what} failed: {detail}"
            ) from err

    def _script(self, what: str, script: Any, args: Sequence[object] = ()) -> Any:
        """Runs one of the budget's scripts under the adopted generation."""
        generation = self._generation
        if generation is None:
            generation = self._adopt_generation()
        return self._call(what, lambda: script(keys=self._keys, args=(generation, *args)))

    def _adopt_generation(self) -> str:
        with self._adopting:
            if self._generation is None:
                token = uuid.uuid4().hex
                raw = self._call("start", lambda: self._adopt(keys=self._keys, args=(token,)))
                self._generation = raw.decode() if isinstance(raw, bytes) else str(raw)
                self._warn_without_persistence()
            return self._generation

    def _warn_without_persistence(self) -> None:
        """One WARNING when the server keeps nothing across a restart (silent when CONFIG is disabled)."""
        try:
            config = self._client.config_get("appendonly")
            config.update(self._client.config_get("save"))
        except self._errors:
            return
        if str(config.get("appendonly", "")).lower() == "no" and not str(config.get("save", "x")).strip():
            _log.warning(
                "Redis budget backend %r: the server keeps no data across a restart (appendonly no, no "
                "snapshots); a restart loses budget %r and its users then fail closed "
                '(docs/containment.md "Shared budgets")',
                self._where,
                self._key,
            )

    # -- veronica-core's protocol ----------------------------------------------------------

    def add(self, amount: float) -> float:
        value = check_amount(amount, "amount")
        return float(self._script("add", self._add, (repr(value),)))

    def get(self) -> float:
        return float(self._script("get", self._get))

    def get_reserved(self) -> float:
        return max(0.0, float(self._script("get_reserved", self._reserved)))

    def reset(self) -> None:
        """Spent and held back to zero (a new period). After lost data it also starts a new budget:
        this backend adopts the new generation; other backend objects still fail closed until reset or
        made anew."""
        token = uuid.uuid4().hex
        raw = self._call("reset", lambda: self._reset(keys=self._keys, args=(token,)))
        with self._adopting:
            self._generation = raw.decode() if isinstance(raw, bytes) else str(raw)

    def close(self) -> None:
        self._client.close()

    def reserve(self, amount: float, ceiling: float) -> str:
        """Holds ``amount`` if spent + held + amount <= ceiling; else raises ``OverflowError``."""
        value = check_amount(amount, "amount")
        limit = check_amount(ceiling, "ceiling")
        rid = uuid.uuid4().hex
        args = (repr(value), repr(limit), self._ttl_ms, rid, repr(EPSILON))
        answer = self._script("reserve", self._reserve, args)
        if int(answer[0]) != 1:
            spent, held = float(answer[1]), float(answer[2])
            raise BudgetExceeded(
                f"shared budget {self._key!r}: ${value:.6f} with ${spent:.6f} spent and ${held:.6f} "
                f"held would exceed the ceiling ${limit:.6f}"
            )
        return rid

    def commit(self, reservation_id: str) -> float:
        """Charges the held amount; ``KeyError`` when the hold expired or was already released."""
        rid = check_reservation_id(reservation_id)
        found, spent = self._script("commit", self._settle, (rid, ""))
        if int(found) != 1:
            raise NotFound(f"reservation {rid!r} not found (expired, committed or rolled back)")
        return float(spent)

    def rollback(self, reservation_id: str) -> None:
        rid = check_reservation_id(reservation_id)
        if int(self._script("rollback", self._rollback, (rid,))) != 1:
            raise NotFound(f"reservation {rid!r} not found (expired, committed or rolled back)")

    # -- ours --------------------------------------------------------------------------------

    def settle(self, reservation_id: str, actual_usd: float) -> float:
        """Releases the hold and charges ``actual_usd`` in one step; returns the new spent total. The
        cost is charged even when the hold already expired: the money was spent."""
        rid = check_reservation_id(reservation_id)
        actual = check_amount(actual_usd, "actual_usd")
        _, spent = self._script("settle", self._settle, (rid, repr(actual)))
        return float(spent)
