"""A parquet source through the real stack (Kafka, ingest, Neo4j): its rows are stored with
labels naming their file and row (capture_agent.sources), the run lists each source's files
(``(:Run).files_<relation>``), and the Cypher of docs/graph-schema.md ("Which file and row a
source row is") gives every stored row's file and index back as Spark reads them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from capture_agent.sources import file_key
from sparkprov.query_errors import InvalidArgument, NotFound
from sparkprov.query_model import Op

ROOT = Path(__file__).resolve().parents[2]


def _file_and_row() -> str:
    """docs/graph-schema.md's query, "Which file and row a source row is"."""
    text = (ROOT / "docs" / "graph-schema.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- file-and-row -->\s*```cypher\n(.*?)```", text, re.S)
    assert found, "docs/graph-schema.md lost its file-and-row query"
    return found.group(1)


def test_stored_source_rows_name_their_file_and_row(spark, client, neo4j_driver, tmp_path) -> None:  # type: ignore[no-untyped-def]
    lake = tmp_path / "lake" / "orders"
    spark.range(0, 400, numPartitions=3).select(
        F.col("id").alias("oid"), (F.col("id") % 3).cast("string").alias("region")
    ).write.partitionBy("region").parquet(str(lake))
    orders = spark.read.parquet(str(lake))
    names = spark.createDataFrame([("0", "zero"), ("1", "one"), ("2", "two")], ["region", "name"])
    with ProvenanceSession(spark, "source-files") as prov:
        kept = prov.source(orders, "Orders").filter(F.col("oid") % 5 == 0)
        named = kept.join(prov.source(names, "Names"), "region")
        named.groupBy("name").agg(F.count("oid").alias("n")).named("Counts").collect()
    client.wait_for_run(prov.run_id)
    truth = {
        int(r["oid"]): (file_key(r["file_path"]), r["row_index"])
        for r in orders.select("oid", "_metadata.file_path", "_metadata.row_index").collect()
    }
    with neo4j_driver.session() as session:
        files = session.run(
            "MATCH (r:Run {run_id: $run}) RETURN r.files_Orders AS files", run=prov.run_id
        ).single()["files"]
        stored = session.run(_file_and_row(), run=prov.run_id, relation="Orders").data()
        oids = session.run(
            "MATCH (n:Node {run_id: $run, op: 'TOKEN', relation: 'Orders'}) "
            "RETURN n.id AS id, n.a_oid AS oid",
            run=prov.run_id,
        ).data()
    assert files == sorted(orders.inputFiles()) and len(files) >= 3
    # The rows the filter keeps; the filter runs before the source's capture point
    # (io.sparkprov.capture.SourceFiltersFirst), so the 320 rows it drops are not stored.
    assert len(stored) == 80
    oid = {r["id"]: int(r["oid"]) for r in oids}
    assert {oid[r["id"]]: (file_key(r["file"]), r["row"]) for r in stored} == {
        o: at for o, at in truth.items() if o % 5 == 0
    }

    # A dropped row's id (its position XOR the run's mask for the source) is still a row of the
    # run: a trace of it answers with its TOKEN node alone, reaching nothing, not NOT_FOUND.
    with neo4j_driver.session() as session:
        (mask,) = session.run(
            "MATCH (r:Run {run_id: $run}) RETURN r.masks_Orders AS masks", run=prov.run_id
        ).single()["masks"]
    ordinal = {file_key(f): i for i, f in enumerate(files)}
    dropped = {o: at for o, at in truth.items() if o % 5 != 0}
    some = sorted(dropped)[:3]
    for o in some:
        f, row = dropped[o]
        position = ordinal[f] << 33 | row
        node_id = (position ^ mask) - (1 << 64) if (position ^ mask) >= 1 << 63 else position ^ mask
        for trace in (client.forward_trace, client.backward_trace):
            answer = trace([str(node_id)])
            assert [(n.op, n.label, n.relation, n.run_id) for n in answer.nodes] == [
                (Op.TOKEN, f"Orders#{ordinal[f]}.{row}", "Orders", prov.run_id)
            ]
            assert not answer.edges
    # With a stored row beside it, the stored one is traced as usual.
    kept_id = str(stored[0]["id"])
    both = client.forward_trace([kept_id, str(node_id)])
    assert {n.id for n in both.nodes} >= {kept_id, str(node_id)} and both.edges
    with pytest.raises(NotFound, match="unknown node id"):
        client.forward_trace(["12345"])

    # The same through gRPC (LocateSourceRows), for every Orders row and the in-memory Names rows.
    located = client.locate_source_rows([str(r["id"]) for r in stored])
    assert [(int(r.node_id), r.file, r.row) for r in located] == [
        (r["id"], r["file"], r["row"]) for r in stored
    ]
    assert all(r.by_file and r.relation == "Orders" and r.run_id == prov.run_id for r in located)
    assert {r.file_index for r in located} == set(range(len(files)))
    (counts,) = client.find_nodes(prov.run_id, "Counts", {"name": "zero"})
    tokens = [n for n in client.backward_trace([counts.id]).nodes if n.op == Op.TOKEN]
    names_rows = client.locate_source_rows([n.id for n in tokens if n.relation == "Names"])
    assert [(r.by_file, r.file, f"Names#{r.partition}.{r.offset}") for r in names_rows] == [
        (False, "", n.label) for n in tokens if n.relation == "Names"
    ]
    with pytest.raises(InvalidArgument, match="not source rows"):
        client.locate_source_rows([counts.id])
    with pytest.raises(NotFound, match="unknown node ids"):
        client.locate_source_rows(["12345"])
    with pytest.raises(InvalidArgument):
        client.locate_source_rows(["not-a-number"])
