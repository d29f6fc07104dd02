"""The back-off between retries, alone."""

from __future__ import annotations

from ingest_service.backoff import Backoff


def test_waits_double_up_to_the_cap_and_start_over_after_a_reset() -> None:
    backoff = Backoff(0.5, 6.0)
    assert [backoff.next() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 6.0, 6.0]
    backoff.reset()
    assert backoff.next() == 0.5


def test_the_defaults_are_the_loops_half_second_to_fifteen_seconds() -> None:
    backoff = Backoff()
    waits = [backoff.next() for _ in range(8)]
    assert waits[0] == 0.5 and max(waits) == 15.0
