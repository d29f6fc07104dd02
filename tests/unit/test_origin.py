"""capture_agent.origin: PySpark's call-site capture is off inside the agent's own calls only."""

from __future__ import annotations

import pytest
from py4j import clientserver
from pyspark.errors import utils as pyspark_errors
from pyspark.sql import functions as F

from capture_agent.origin import internal, internal_calls


def _round_trips(spark, build) -> int:  # type: ignore[no-untyped-def]
    calls = [0]
    original = clientserver.ClientServerConnection.send_command

    def counted(self, command):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return original(self, command)

    clientserver.ClientServerConnection.send_command = counted  # type: ignore[method-assign]
    try:
        build()
    finally:
        clientserver.ClientServerConnection.send_command = original  # type: ignore[method-assign]
    return calls[0]


def test_columns_cost_fewer_round_trips_inside(spark) -> None:  # type: ignore[no-untyped-def]
    assert pyspark_errors.is_debugging_enabled(), "the suite's Spark records call sites"
    outside = _round_trips(spark, lambda: F.col("a").alias("b").isNull())
    with internal():
        assert not pyspark_errors.is_debugging_enabled()
        inside = _round_trips(spark, lambda: F.col("a").alias("b").isNull())
    assert pyspark_errors.is_debugging_enabled()
    assert inside * 3 < outside, (inside, outside)


def test_nested_and_failing_blocks_restore_the_setting(spark) -> None:  # type: ignore[no-untyped-def]
    before = pyspark_errors.is_debugging_enabled()

    @internal_calls
    def fails() -> None:
        with internal():
            assert not pyspark_errors.is_debugging_enabled()
        assert not pyspark_errors.is_debugging_enabled()  # still inside the outer block
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fails()
    assert pyspark_errors.is_debugging_enabled() == before
