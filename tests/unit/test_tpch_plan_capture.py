"""TPC-H's 22 queries as SQL text, captured from their plans (ProvenanceSession.tracked) at SF
0.01: each captured query gives the plain result, and Titian's oracle holds on sampled output
rows: re-running the query on only its witness (the source rows its lineage reaches) gives the
row back. The queries plan capture does not rebuild yet are refused by name, never answered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.tpc_sql.compare import equal
from bench.tpc_sql.data import generate
from bench.tpc_sql.queries import adapt, original
from bench.tpc_sql.run import spark_views
from capture_agent import ProvenanceSession
from capture_agent.emitters import MemoryEmitter
from capture_agent.errors import UnsupportedOperation
from capture_agent.replay import same_text
from sparkprov.events import ATTRIBUTE_PREFIX
from tests.unit.graphs import emitted_graph, witness

SF = 0.01
# Not rebuilt yet, and why (bench/README.md, "TPC-H as SQL text, captured from the plan").
REFUSED = {
    11: "ScalarSubquery",  # HAVING ... > (SELECT sum(...) * 0.0001 ...)
    15: "ScalarSubquery",  # WHERE total_revenue = (SELECT max(total_revenue) ...)
    22: "ScalarSubquery",  # c_acctbal > (SELECT avg(c_acctbal) ...)
}
SAMPLED = 1  # output rows re-run per query (spread over the output)
_NULL = "\u0000"


@pytest.fixture(scope="module")
def tpch(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tables = generate("tpch", SF, tmp_path_factory.mktemp("tpch-plan-sf0.01"))
    spark_views(spark, tables)
    yield spark
    for name in tables:
        spark.catalog.dropTempView(name)


def _texts(df: DataFrame) -> list[tuple[str | None, ...]]:
    return [
        tuple(r) for r in df.select(*[F.col(f"`{c}`").cast("string") for c in df.columns]).collect()
    ]


def _restricted(spark: Any, views: list[str], rows: dict[str, list[dict[str, str]]]) -> None:
    """Each view replaced by its rows in the witness (matched on all kept values; a view read
    twice, e.g. nation as n1 and n2, gets the rows of both reads); no witness row: empty."""
    by_view: dict[str, list[dict[str, str]]] = {v: [] for v in views}
    for relation, kept in rows.items():
        view = relation if relation in by_view else relation.rsplit("_", 1)[0]
        by_view[view].extend(kept)
    for view, kept in by_view.items():
        df = spark.table(f"`tpch_full_{view}`")
        key = F.concat_ws(
            "\u001f",
            *[F.coalesce(F.col(f"`{c}`").cast("string"), F.lit(_NULL)) for c in df.columns],
        )
        keys = sorted({"\u001f".join(r.get(c, _NULL) for c in df.columns) for r in kept})
        wanted = spark.createDataFrame([(k,) for k in keys], "k string")
        df.join(F.broadcast(wanted), key == F.col("k"), "left_semi").createOrReplaceTempView(view)


@pytest.mark.parametrize("number", range(1, 23))
def test_tpch_query_as_sql_text_is_captured_with_the_oracle(tpch: Any, number: int) -> None:
    spark = tpch
    sql = adapt("tpch", number, original("tpch", number))
    plain = _texts(spark.sql(sql))
    emitter = MemoryEmitter(spark)
    if number in REFUSED:
        with (
            ProvenanceSession(spark, f"tpch-q{number}", emitter=emitter) as prov,
            pytest.raises(UnsupportedOperation, match=REFUSED[number]),
        ):
            prov.tracked(spark.sql(sql))
        return
    with ProvenanceSession(spark, f"tpch-q{number}", emitter=emitter) as prov:
        out = prov.tracked(spark.sql(sql)).named("Out")
        columns, captured = out.columns, _texts(out.df)
        emitted = prov.counts()
    assert equal(captured, plain), (captured[:5], plain[:5])
    nodes, graph = emitted_graph(emitter)
    assert (len(nodes), graph.number_of_edges()) == emitted
    outputs = sorted(i for i, n in nodes.items() if n["relation"] == "Out")
    assert len(outputs) == len(plain) > 0

    views = [
        t.name
        for t in spark.catalog.listTables()
        if t.isTemporary and not t.name.startswith("tpch_full_")
    ]
    for view in views:  # the full tables, kept while views are restricted
        spark.table(view).createOrReplaceTempView(f"tpch_full_{view}")
    try:
        for node in outputs[:: max(1, len(outputs) // SAMPLED)][:SAMPLED]:
            props = nodes[node]["props"]
            wanted = tuple(props.get(ATTRIBUTE_PREFIX + c) for c in columns)
            _restricted(spark, views, witness(nodes, graph, node))
            again = _texts(spark.sql(sql))
            assert any(
                all(same_text(a, b) for a, b in zip(row, wanted, strict=True)) for row in again
            ), (
                f"q{number}: re-running on the witness did not give back {wanted}; "
                f"it gave {again[:5]}"
            )
    finally:
        for view in views:
            spark.table(f"tpch_full_{view}").createOrReplaceTempView(view)
            spark.catalog.dropTempView(f"tpch_full_{view}")
