"""The token bucket behind every flood bound: a burst, then the rate, whatever came before."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mcpstation.connection import _bucket
from mcpstation.connection._bucket import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(_bucket, "time", SimpleNamespace(monotonic=fake))  # this module's clock only
    return fake


def test_a_quiet_spell_earns_one_burst_not_more(clock: Clock) -> None:
    bucket = TokenBucket(rate_per_s=10.0, burst=20)
    clock.now += 3600.0  # an hour with nothing sent
    taken = sum(bucket.take() for _ in range(100))
    assert taken == 20


def test_time_a_partly_spent_bucket_sat_still_is_not_counted_twice(clock: Clock) -> None:
    bucket = TokenBucket(rate_per_s=10.0, burst=20)
    assert all(bucket.take() for _ in range(5))
    clock.now += 3600.0
    taken = sum(bucket.take() for _ in range(100))
    assert taken == 20  # topped up to the burst, never the 15 left plus another burst


def test_after_the_burst_tokens_come_at_the_rate(clock: Clock) -> None:
    bucket = TokenBucket(rate_per_s=10.0, burst=20)
    assert sum(bucket.take() for _ in range(30)) == 20
    clock.now += 0.5
    assert sum(bucket.take() for _ in range(30)) == 5
    assert bucket.seconds_until_token() == pytest.approx(0.1)
