"""Sink reuse in a ProvenanceSession on a local Spark, no broker (MemoryEmitter): a second run
of the same pipeline over the same data reads the stored result (its PLUS nodes' parents are the
first run's nodes, the marker lists the reuse); other data, a failed run or the kill switch
never reuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from capture_agent import ProvenanceSession
from capture_agent.emitters import MemoryEmitter
from sparkprov.events import Batch, ReusedResult, RunComplete, decode

SPARK_CORES = 1


def _run(spark: Any, results: Path, people: list[tuple[int, str]], **kwargs: Any) -> Any:
    from pyspark.sql import functions as F

    emitter = MemoryEmitter(spark)
    df = spark.createDataFrame(people, "id long, city string")
    with ProvenanceSession(
        spark, "wf", emitter=emitter, capture="python", reuse=True, results_path=results, **kwargs
    ) as prov:
        rows = prov.source(df, "people").filter(F.col("id") > 1).named("kept").collect()
    events = [decode(value) for _, value in emitter.messages()]
    return prov, sorted(tuple(r) for r in rows), events


PEOPLE = [(1, "NY"), (2, "LA"), (3, "SF")]


def test_same_pipeline_same_data_reuses_and_links_rows(spark: Any, tmp_path: Path) -> None:
    first, rows, first_events = _run(spark, tmp_path, PEOPLE)
    assert set(first.reuse.stored) == {"kept"} and not first.reuse.reused
    second, again, events = _run(spark, tmp_path, PEOPLE)
    assert again == rows == [(2, "LA"), (3, "SF")]
    assert second.reuse.reused["kept"].run_id == first.run_id
    done = [e for e in events if isinstance(e, RunComplete)][0]
    version = first.reuse.stored["kept"].version
    assert done.reuses == (ReusedResult("kept", version, first.run_id),)
    # no TOKEN of this run: the source was not read for the sink; the rows are PLUS nodes whose
    # parents are the first run's nodes of the kept rows
    batches = [e for e in events if isinstance(e, Batch)]
    ops = {row["op"] for b in batches for row in b.rows()}
    assert ops == {"PLUS"}
    parents = {int(p) for b in batches for p in b.edges["src"]}
    first_kept = {
        row["id"]
        for b in first_events
        if isinstance(b, Batch)
        for row in b.rows()
        if row["relation"] == "kept"
    }
    assert parents == first_kept and len(parents) == 2


def test_other_data_is_not_reused(spark: Any, tmp_path: Path) -> None:
    _run(spark, tmp_path, PEOPLE)
    other, rows, _ = _run(spark, tmp_path, [*PEOPLE[:2], (3, "LA")])
    assert not other.reuse.reused and rows == [(2, "LA"), (3, "LA")]


def test_a_failed_run_stores_nothing(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    emitter = MemoryEmitter(spark)
    df = spark.createDataFrame(PEOPLE, "id long, city string")
    with (
        pytest.raises(RuntimeError),
        ProvenanceSession(
            spark, "wf", emitter=emitter, capture="python", reuse=True, results_path=tmp_path
        ) as prov,
    ):
        prov.source(df, "people").filter(F.col("id") > 1).named("kept").collect()
        raise RuntimeError("the job failed")
    assert not list(tmp_path.rglob("manifest.json")) and not list(tmp_path.rglob("*.parquet"))
    second, _, _ = _run(spark, tmp_path, PEOPLE)
    assert not second.reuse.reused


def test_kill_switch_neither_stores_nor_reuses(spark: Any, tmp_path: Path) -> None:
    prov, rows, _ = _run(spark, tmp_path, PEOPLE, enabled=False)
    assert prov.reuse is None and rows == [(2, "LA"), (3, "SF")]
    assert not list(tmp_path.iterdir())
