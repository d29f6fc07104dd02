"""The ingest service's age limit without Neo4j: ``Expiry`` asks for the runs past the limit at
start and then every period, keeps going when a turn fails, stops when told; settings read it
from the environment (0 = keep every run)."""

from __future__ import annotations

import threading

import pytest

from ingest_service.retention import Deleted, Expiry
from ingest_service.settings import IngestSettings


def test_each_turn_deletes_what_is_past_the_limit_and_counts_it() -> None:
    asked: list[float] = []

    def expire(max_age_s: float) -> Deleted:
        asked.append(max_age_s)
        return Deleted(runs=["r1", "r2"], nodes=5) if len(asked) == 1 else Deleted()

    expiry = Expiry(expire, max_age_s=86400 * 7)
    assert expiry.step().runs == ["r1", "r2"]
    assert expiry.step().runs == []
    assert asked == [86400 * 7] * 2 and expiry.deleted_runs == 2


def test_the_loop_survives_a_failed_turn_and_stops() -> None:
    turns = threading.Semaphore(0)
    calls: list[int] = []

    def expire(max_age_s: float) -> Deleted:
        calls.append(1)
        turns.release()
        if len(calls) == 1:
            raise ConnectionError("Neo4j down")
        return Deleted()

    expiry = Expiry(expire, max_age_s=60, every_s=0.01)
    thread = expiry.start()
    assert turns.acquire(timeout=5) and turns.acquire(timeout=5)  # a turn after the failure
    expiry.stop()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_no_limit_means_none_and_the_environment_sets_it() -> None:
    with pytest.raises(ValueError):
        Expiry(lambda s: Deleted(), max_age_s=0)
    assert IngestSettings.from_env({}).retention_days == 0
    settings = IngestSettings.from_env(
        {"SPARKPROV_RETENTION_DAYS": "30", "SPARKPROV_RETENTION_CHECK_S": "600"}
    )
    assert (settings.retention_days, settings.retention_check_s) == (30.0, 600.0)
