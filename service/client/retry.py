"""When to retry a call, and how long to wait first.

A call is retried when its outcome is known to be "not done" or when repeating it is safe:

- the connection could not be opened (nothing was sent): always;
- a 503 that carries ``Retry-After`` (the store is unavailable, the outcome is unknown), a
  502/504 from a proxy, or a connection that dropped after the request went out: only when
  the call is *idempotent*. A label by prediction id is (the service counts a prediction id
  once and answers a repeat with its first outcome), and so are predictions (a repeated one
  leaves one more pending prediction, which expires unlabelled; no model changes), reads,
  and ``PUT`` of a configuration without ``replace``. A labelled example without a
  prediction id is not: each copy would be learned.

A 409 (a conflicting label) and every other 4xx are final. A 503 without ``Retry-After``
(a model that cannot serve) is final too: waiting does not fix it.

Waits: the server's ``Retry-After`` when it gives one (capped at :attr:`RetryPolicy.max_retry_after`),
else an exponential backoff ``backoff * 2**k`` capped at :attr:`RetryPolicy.max_backoff`,
scaled by a random factor in [0.5, 1] ("equal jitter") so that many clients cut off at once
do not come back in lockstep. A call stops retrying after :attr:`RetryPolicy.attempts`
attempts or once the next wait would end past :attr:`RetryPolicy.deadline` seconds from its
first attempt; it then raises what the last attempt got.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RetryEvent:
    """Passed to ``on_retry`` before each wait: the call, which attempt failed, and why."""

    method: str
    path: str
    attempt: int
    wait: float
    reason: BaseException


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries. ``RetryPolicy(attempts=1)`` never retries."""

    attempts: int = 10
    backoff: float = 0.1
    max_backoff: float = 5.0
    max_retry_after: float = 30.0
    deadline: float = 120.0
    on_retry: Callable[[RetryEvent], None] | None = field(default=None, compare=False)
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")
        if self.backoff < 0 or self.max_backoff < 0 or self.max_retry_after < 0 or self.deadline < 0:
            raise ValueError("backoff, max_backoff, max_retry_after and deadline must be >= 0")

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        return ceiling * (0.5 + 0.5 * self.rng.random())

    def next_wait(self, attempt: int, started: float, retry_after: float | None) -> float | None:
        """The wait before the next attempt, or ``None`` when the call must give up now."""
        if attempt >= self.attempts:
            return None
        wait = self.wait(attempt, retry_after)
        if time.monotonic() + wait - started > self.deadline:
            return None
        return wait


class Attempts:
    """The attempts of one call under a :class:`RetryPolicy`: which attempt this is, and after a
    failure whether to try again and after how long (``on_retry`` is told), or the failure raised.
    The one retry loop of the sync and async clients and of the WebSocket stream: they only send,
    and sleep for what :meth:`wait` answers."""

    def __init__(self, policy: RetryPolicy, method: str, path: str) -> None:
        self.policy = policy
        self.method = method
        self.path = path
        self.started = time.monotonic()
        self.attempt = 0

    def next(self) -> int:
        """Start the next attempt; its number (1-based)."""
        self.attempt += 1
        return self.attempt

    def wait(self, failure: BaseException, retryable: bool, retry_after: float | None) -> float:
        """Seconds to wait before the next attempt, after this one failed with ``failure``; raises
        ``failure`` when it is not ``retryable`` or the policy allows no more attempts."""
        wait = self.policy.next_wait(self.attempt, self.started, retry_after) if retryable else None
        if wait is None:
            raise failure
        if self.policy.on_retry is not None:
            self.policy.on_retry(RetryEvent(self.method, self.path, self.attempt, wait, failure))
        return wait


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds: delta-seconds or an HTTP date (RFC 9110, 10.2.3)."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
