"""TPC-H's 22 queries as SQL text, captured from their plans (ProvenanceSession.tracked) at SF
0.01: each captured query gives the plain result, and Titian's oracle holds on sampled output
rows: re-running the query on only its witness (the source rows its lineage reaches) gives the
row back. All 22 are captured (scalar subqueries as a join of their one row, Q11, Q15, Q22)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench.tpc_sql.compare import equal
from bench.tpc_sql.data import generate
from bench.tpc_sql.oracle import compact, reproduces, texts
from bench.tpc_sql.queries import adapt, original
from bench.tpc_sql.run import spark_views
from capture_agent import ProvenanceSession
from capture_agent.emitters import MemoryEmitter

SF = 0.01
SAMPLED = 1  # output rows re-run per query (spread over the output)


@pytest.fixture(scope="module")
def tpch(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tables = generate("tpch", SF, tmp_path_factory.mktemp("tpch-plan-sf0.01"))
    spark_views(spark, tables)
    yield spark
    for name in tables:
        spark.catalog.dropTempView(name)


@pytest.mark.parametrize("number", range(1, 23))
def test_tpch_query_as_sql_text_is_captured_with_the_oracle(tpch: Any, number: int) -> None:
    spark = tpch
    sql = adapt("tpch", number, original("tpch", number))
    plain = texts(spark.sql(sql))
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, f"tpch-q{number}", emitter=emitter) as prov:
        # values="all": the oracle restricts each view to its witness rows by their whole
        # values (bench/tpc_sql/oracle.py); "read" keeps only the columns the query reads.
        out = prov.tracked(spark.sql(sql), values="all").named("Out")
        columns, captured = out.columns, texts(out.df)
    emitted = prov.counts()
    assert equal(captured, plain), (captured[:5], plain[:5])
    graph = compact(emitter)
    assert (graph.node_count, graph.edge_count) == emitted
    outputs = graph.of_relation("Out")
    assert len(outputs) == len(plain) > 0

    views = [t.name for t in spark.catalog.listTables() if t.isTemporary]
    for node in outputs[:: max(1, len(outputs) // SAMPLED)][:SAMPLED]:
        found, again = reproduces(spark, sql, views, graph, node, columns)
        assert found, f"q{number}: re-running on the witness gave {again[:5]}"
