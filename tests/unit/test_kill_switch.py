"""The kill switch on a local Spark (no broker): a disabled session hands back the DataFrames
themselves, every operation is Spark's own (the very plan of the plain call: no hidden column, no
capture point), nothing is recorded or published, and the job's calls that only a tracked frame
has (``.named``, modules) still run, so one job runs unchanged with capture on or off."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from capture_agent import PlainFrame, ProvenanceSession
from capture_agent.emitters import MemoryEmitter

ROWS = [
    (1, "a", 10, "x"),
    (2, "a", 20, "y"),
    (3, "b", None, "x"),
    (4, "b", 40, "x"),
    (4, "b", 40, "x"),  # a duplicate: distinct must not merge the others into it
    (5, None, 50, "z"),
]
DEPTS = [("a", "east"), ("b", "west"), ("c", "north")]


def _half(pdf: pd.DataFrame) -> pd.DataFrame:
    return pdf[["k"]].assign(n=len(pdf))


def _batches(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    for pdf in batches:
        yield pdf[["pid"]]


Shape = Callable[[Any, Any], Any]  # (rows, depts), tracked or plain, -> a frame
SHAPES: dict[str, Shape] = {
    "groupBy": lambda r, d: r.groupBy("k").agg(F.sum("v").alias("s"), F.count("*").alias("n")),
    "distinct": lambda r, d: r.distinct(),
    "dropDuplicates": lambda r, d: r.dropDuplicates(["k"]).select("k"),
    "countDistinct": lambda r, d: r.groupBy("k").agg(F.countDistinct("c").alias("n")),
    "rollup": lambda r, d: r.rollup("k", "c").agg(F.count("pid").alias("n")),
    "cube": lambda r, d: r.cube("k").agg(F.max("v").alias("m")),
    "join": lambda r, d: r.join(d, "k"),
    "left_outer": lambda r, d: r.join(d, "k", "left"),
    "semi": lambda r, d: r.join(d, "k", "left_semi"),
    "anti": lambda r, d: r.join(d, r["k"] == d["k"], "left_anti"),
    "window": lambda r, d: r.withColumn("t", F.sum("v").over(Window.partitionBy("k"))),
    "rank": lambda r, d: r.withColumn("r", F.rank().over(Window.partitionBy("k").orderBy("v"))),
    "explode": lambda r, d: r.select("pid", F.explode(F.array("k", "c")).alias("e")),
    "union": lambda r, d: r.select("k").union(d.select("k")),
    "intersect": lambda r, d: r.select("k").intersect(d.select("k")),
    "subtract": lambda r, d: r.select("k").subtract(d.select("k")),
    "exceptAll": lambda r, d: r.select("k").exceptAll(d.select("k")),
    "applyInPandas": lambda r, d: r.groupBy("k").applyInPandas(_half, "k string, n long"),
    "mapInPandas": lambda r, d: r.mapInPandas(_batches, "pid long"),
}


def _frames(spark: Any) -> tuple[DataFrame, DataFrame]:
    rows = spark.createDataFrame(ROWS, "pid long, k string, v long, c string")
    return rows, spark.createDataFrame(DEPTS, "k string, region string")


def _sorted(df: DataFrame) -> list[str]:
    return sorted(map(repr, df.collect()))


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().analyzed().toString())


def test_a_disabled_session_hands_back_the_dataframe_itself(spark: Any) -> None:
    rows, _ = _frames(spark)
    with ProvenanceSession(spark, "killed", enabled=False) as prov:
        frame = prov.source(rows, "Rows")
        assert isinstance(frame, PlainFrame) and frame.df is rows
        assert frame.named("Again") is frame  # a tracked frame's own call: a no-op
        kept = frame.filter(F.col("v") > 10).named("Kept")
        assert type(kept.df) is type(rows) and kept.columns == rows.columns
        assert kept.df.sameSemantics(rows.filter(F.col("v") > 10))


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_operator_is_the_plain_one(spark: Any, name: str) -> None:
    shape = SHAPES[name]
    rows, depts = _frames(spark)
    plain = shape(rows, depts)
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "killed", emitter=emitter, enabled=False) as prov:
        got = shape(prov.source(rows, "Rows"), prov.source(depts, "Depts")).named("Out")
        assert got.columns == plain.columns
        assert "__sp_" not in _plan(got.df)
        if name not in ("applyInPandas", "mapInPandas"):  # a Python function's plan differs
            assert got.df.sameSemantics(plain), _plan(got.df)  # by its pickled bytes alone
        assert _sorted(got.df) == _sorted(plain)
    assert emitter.messages() == [] and prov.counts() == (0, 0)


def _job(prov: ProvenanceSession, rows: DataFrame, depts: DataFrame, out: Path) -> list[Any]:
    """A workflow as a job writes it: sources, a module with state, names, a write."""
    people = prov.source(rows, "Rows")
    with prov.module("enrich") as m:
        regions = m.state(depts.union(depts), "Regions")  # a state relation is a set
        joined = m.input(people, "People").join(regions, "k")
        totals = m.output(joined.groupBy("region").agg(F.sum("v").alias("s")), "Totals")
    named = totals.named("Report")
    named.write.mode("overwrite").parquet(str(out))
    return sorted(map(tuple, named.collect()))


def test_the_same_job_runs_either_way_and_only_capture_publishes(
    spark: Any, tmp_path: Path
) -> None:
    rows, depts = _frames(spark)
    captured = MemoryEmitter(spark)
    with ProvenanceSession(spark, "job", emitter=captured) as on:
        expected = _job(on, rows, depts, tmp_path / "on")
    assert captured.messages() and on.workflow_dag().operators

    silent = MemoryEmitter(spark)
    with ProvenanceSession(spark, "job", emitter=silent, enabled=False) as off:
        assert _job(off, rows, depts, tmp_path / "off") == expected
    assert silent.messages() == [] and off.counts() == (0, 0)
    assert not off.workflow_dag().operators  # nothing recorded
    assert off.capture.datasets.inputs() == [] and off.capture.datasets.outputs() == []
    written = spark.read.parquet(str(tmp_path / "off"))
    assert written.columns == ["region", "s"] and written.count() == len(expected)


def test_operations_capture_refuses_run_as_spark_runs_them(spark: Any) -> None:
    rows, _ = _frames(spark)
    with ProvenanceSession(spark, "killed", enabled=False) as prov:
        frame = prov.source(rows, "Rows")
        assert _sorted(frame.na.fill(0).df) == _sorted(rows.na.fill(0))
        pivoted = frame.groupBy("k").pivot("c").sum("v")
        assert _sorted(pivoted.df) == _sorted(rows.groupBy("k").pivot("c").sum("v"))


def test_an_emitter_to_nowhere_is_not_the_kill_switch(spark: Any) -> None:
    """NoopEmitter given to an enabled session: capture runs in full, its messages are dropped."""
    from capture_agent import TrackedFrame
    from capture_agent.emitters import NoopEmitter

    rows, _ = _frames(spark)
    with ProvenanceSession(spark, "nowhere", emitter=NoopEmitter()) as prov:
        frame = SHAPES["groupBy"](prov.source(rows, "Rows"), None)
        assert isinstance(frame, TrackedFrame)
        assert _sorted(frame.df) == _sorted(SHAPES["groupBy"](rows, None))
    assert prov.workflow_dag().operators
