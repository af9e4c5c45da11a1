"""A token bucket that reads the clock as little as a flood allows."""

from __future__ import annotations

import math
import time

CLOCK_EVERY = 32  # during a flood, calls between two looks at the clock (a token is 10 ms at 100/s)


class TokenBucket:
    """A token bucket: `take()` says whether one more message fits the budget now; `empty()` is
    the cheap look a flood's bulk gets (it reads the clock only now and then)."""

    __slots__ = ("_burst", "_looks", "_rate", "_stamp", "_tokens")

    def __init__(self, rate_per_s: float, burst: int) -> None:
        self._rate = rate_per_s
        self._burst = float(burst)
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        self._looks = 0

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now

    def take(self) -> bool:
        """Spend a token if there is one. Tokens are counted up to now on every call: a bucket
        that earned tokens only when it ran dry would also count the time it sat full, and let
        twice the burst through after a quiet spell."""
        self._refill()
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    @property
    def spent(self) -> bool:
        return self._tokens < 1.0

    def empty(self) -> bool:
        """Whether the budget is spent; while it is, the clock is read only every `CLOCK_EVERY` calls."""
        if self._tokens >= 1.0:
            return False
        self._looks += 1
        if self._looks % CLOCK_EVERY:
            return True
        self._refill()
        return self._tokens < 1.0

    def seconds_until_token(self) -> float:
        missing = 1.0 - self._tokens - (time.monotonic() - self._stamp) * self._rate
        return max(0.0, missing / self._rate) if self._rate > 0 else math.inf
