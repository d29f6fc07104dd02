"""capture_agent.replay: a witness (QueryClient.witness's rows per relation) restricts each source
to its rows, by a key column's text; missing keys and sources are refused by name."""

from __future__ import annotations

import pytest

from capture_agent.replay import witness_frames


def test_each_source_keeps_its_witness_rows_and_a_source_without_any_is_empty(spark) -> None:  # type: ignore[no-untyped-def]
    orders = spark.createDataFrame([(1, 10.5), (2, 3.0), (30, 7.25)], ["id", "amount"])
    people = spark.createDataFrame([("a", 1), ("b", 2)], ["name", "n"])
    witness = {"Orders": [{"id": "30", "amount": "7.25"}, {"id": "1"}], "Other": [{"id": "9"}]}
    frames = witness_frames(
        {"Orders": orders, "People": people}, witness, {"Orders": "id", "People": "name"}
    )
    assert sorted(tuple(r) for r in frames["Orders"].collect()) == [(1, 10.5), (30, 7.25)]
    assert frames["People"].count() == 0


def test_keys_must_be_given_exist_and_be_kept_by_the_witness(spark) -> None:  # type: ignore[no-untyped-def]
    orders = spark.createDataFrame([(1, 10.5)], ["id", "amount"])
    with pytest.raises(ValueError, match="no key column given for sources \\['Orders'\\]"):
        witness_frames({"Orders": orders}, {}, {})
    with pytest.raises(ValueError, match="'oid' is not a column of source 'Orders'"):
        witness_frames({"Orders": orders}, {}, {"Orders": "oid"})
    with pytest.raises(ValueError, match="do not carry 'id'"):
        witness_frames({"Orders": orders}, {"Orders": [{"amount": "1"}]}, {"Orders": "id"})
