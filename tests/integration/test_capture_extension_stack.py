"""Capture through ``spark.sql.extensions`` on the real stack: a job that names nothing of
sparkprov, in a session started with the extension, sends its lineage to Kafka; ingest stores the
run complete (the extension's marker counts what its tasks sent), and the query service names
the input rows of a city's total by their parquet files and rows, as Spark reads them back (the
same check as test_unchanged_job's, where a ProvenanceSession captures the same job)."""

from __future__ import annotations

from typing import Any

from capture_agent.jvm import jar_path
from capture_agent.sources import file_key
from examples.unchanged_job import CUSTOMERS, ORDERS, input_rows
from tests.faults.jobs import run_job


def test_an_unchanged_job_under_the_extension_is_stored_and_traced(
    stack: Any, client: Any, spark: Any, tmp_path: Any
) -> None:
    report = run_job(
        "tests.integration.extension_stack_job",
        str(tmp_path),
        str(jar_path()),
        stack.settings.kafka_bootstrap,
        bootstrap=stack.settings.kafka_bootstrap,
    )
    assert dict(map(tuple, report["rows"]))["NY"] == 21.5
    run = client.wait_for_run(report["run_id"])
    assert run.complete and run.node_count > 0
    lines = input_rows(client, report["run_id"], "NY")
    orders, customers = str(tmp_path / "orders"), str(tmp_path / "customers")
    where = {}
    for path, key in ((orders, "oid"), (customers, "id")):
        read = spark.read.parquet(path).select(key, "_metadata.file_path", "_metadata.row_index")
        for r in read.collect():
            where[(path, r[key])] = f"{file_key(r['file_path'])}:{r['row_index']}"
    got = set()
    for line in lines:
        relation, located = line.split("  ")[:2]
        file, row = located.rsplit(":", 1)
        got.add((relation, f"{file_key(file)}:{row}"))
    city_of = {c[0]: c[2] for c in CUSTOMERS}
    assert got == {
        *(
            ("orders", where[(orders, o[0])])
            for o in ORDERS
            if o[2] > 1.5 and city_of.get(o[1]) == "NY"
        ),
        *(("customers", where[(customers, c[0])]) for c in CUSTOMERS if c[2] == "NY"),
    }
    written = client.find_nodes(report["run_id"], "enriched")
    assert len(written) == len([o for o in ORDERS if o[2] > 1.5 and o[1] in city_of])
