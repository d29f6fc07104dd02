"""The values policy "read" (the sources' default): a source's TOKEN nodes keep the columns the
query reads after the source, and the scan reads no other column for the tap
(io.sparkprov.capture.ValuesPruning). Against "all" on the same job: the same rows, node ids,
ops, labels and edges; only the kept attributes differ, and they are exactly the columns the
query reads. Through the DataFrame API and through plan capture (SQL text)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from capture_agent.emitters import MemoryEmitter
from capture_agent.frame import materialize
from sparkprov.events import ATTRIBUTE_PREFIX, Batch, decode

Job = Callable[[ProvenanceSession, SparkSession, str, Any], Any]


@pytest.fixture(scope="module")
def tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("values-read")
    spark.createDataFrame(
        [(i, i % 3, f"name{i}", i / 2, "x" * 10) for i in range(60)],
        "k long, g int, name string, amount double, pad string",
    ).write.parquet(str(root / "t"))
    spark.createDataFrame(
        [(g, f"grp{g}", "z") for g in range(3)], "g int, label string, other string"
    ).write.parquet(str(root / "u"))
    return root


def _frames(prov: ProvenanceSession, spark: SparkSession, values: str, root: Path) -> Any:
    t = prov.source(spark.read.parquet(str(root / "t")), "T", values=values)
    u = prov.source(spark.read.parquet(str(root / "u")), "U", values=values)
    return t.filter(F.col("amount") > 10).join(u, "g").groupBy("label").agg(F.sum("amount"))


def _sql(prov: ProvenanceSession, spark: SparkSession, values: str, root: Path) -> Any:
    spark.read.parquet(str(root / "t")).createOrReplaceTempView("T")
    spark.read.parquet(str(root / "u")).createOrReplaceTempView("U")
    text = "SELECT label, sum(amount) FROM T JOIN U USING (g) WHERE amount > 10 GROUP BY label"
    return prov.tracked(spark.sql(text), values=values)


def _captured(
    spark: SparkSession, job: Job, values: str, root: Path
) -> tuple[list[Any], dict[int, Any], Counter[Any], str]:
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "values-read", emitter=emitter, run_id="one-run") as prov:
        frame = job(prov, spark, values, root)
        plan = materialize(frame)._jdf.queryExecution().executedPlan().toString()
        rows = sorted(frame.collect(), key=repr)
    nodes: dict[int, Any] = {}
    edges: Counter[tuple[int, int]] = Counter()
    for _, value in emitter.messages():
        event = decode(value)
        if isinstance(event, Batch):
            logical = event.expanded()
            nodes.update((n["id"], n) for n in logical.rows())
            edges.update(zip(logical.edges["src"], logical.edges["dst"], strict=True))
    return rows, nodes, edges, plan


def _kept(nodes: dict[int, Any], relation: str) -> set[tuple[str, ...]]:
    return {
        tuple(
            sorted(k[len(ATTRIBUTE_PREFIX) :] for k in n["props"] if k.startswith(ATTRIBUTE_PREFIX))
        )
        for n in nodes.values()
        if n.get("relation") == relation and n["op"] == "TOKEN"
    }


def _read_schemas(plan: str) -> list[str]:
    return sorted(re.findall(r"ReadSchema: (struct<[^>]*>)", plan))


def _without_attributes(node: dict[str, Any]) -> dict[str, Any]:
    props = {k: v for k, v in node["props"].items() if not k.startswith(ATTRIBUTE_PREFIX)}
    return {**node, "props": props}


@pytest.mark.parametrize("job", [_frames, _sql], ids=["dataframe", "sql"])
def test_sources_keep_the_columns_the_query_reads_and_the_scan_reads_no_other(
    spark: SparkSession, tables: Path, job: Job
) -> None:
    rows, nodes, edges, plan = _captured(spark, job, "read", tables)
    all_rows, all_nodes, all_edges, all_plan = _captured(spark, job, "all", tables)
    assert rows == all_rows and len(rows) == 3
    # The same logical graph: ids, ops, labels, edges; only the kept attributes differ.
    assert nodes.keys() == all_nodes.keys() and len(nodes) > 60
    assert all(
        _without_attributes(nodes[i]) == _without_attributes(n) for i, n in all_nodes.items()
    )
    assert edges == all_edges
    # "read": the columns the query reads above the source (the filter's amount, the join's
    # g, the output's label); "all": every column.
    assert _kept(nodes, "T") == {("amount", "g")}
    assert _kept(nodes, "U") == {("g", "label")}
    assert _kept(all_nodes, "T") == {("amount", "g", "k", "name", "pad")}
    assert _kept(all_nodes, "U") == {("g", "label", "other")}
    # And the scans read no column for the tap alone (the row index is the source position).
    assert [s for s in _read_schemas(plan) if "pad" in s or "name" in s or "other" in s] == []
    assert any("pad" in s for s in _read_schemas(all_plan))
    # The values kept are the rows' own.
    amounts = {n["props"]["a_amount"] for n in nodes.values() if n.get("relation") == "T"}
    assert amounts == {str(i / 2) for i in range(60)}


def test_a_column_the_output_returns_is_read(spark: SparkSession, tables: Path) -> None:
    def job(prov: ProvenanceSession, spark: SparkSession, values: str, root: Path) -> Any:
        t = prov.source(spark.read.parquet(str(root / "t")), "T", values=values)
        return t.filter(F.col("g") == 1).select("name")

    rows, nodes, _, _ = _captured(spark, job, "read", tables)
    assert len(rows) == 20
    assert _kept(nodes, "T") == {("g", "name")}


def test_a_list_of_columns_is_kept_whether_the_query_reads_it_or_not(
    spark: SparkSession, tables: Path
) -> None:
    def job(prov: ProvenanceSession, spark: SparkSession, values: Any, root: Path) -> Any:
        t = prov.source(spark.read.parquet(str(root / "t")), "T", values=["k", "pad"])
        return t.groupBy("g").agg(F.count("*"))

    _, nodes, _, _ = _captured(spark, job, "read", tables)
    assert _kept(nodes, "T") == {("k", "pad")}


def test_an_unknown_policy_is_refused_by_name(spark: SparkSession, tables: Path) -> None:
    with (
        ProvenanceSession(spark, "values-read", emitter=MemoryEmitter(spark)) as prov,
        pytest.raises(ValueError, match='"read", "all", a list of columns or None'),
    ):
        prov.source(spark.read.parquet(str(tables / "t")), "T", values="some")
