"""examples/unchanged_job.py through the real stack: the job, unchanged but for the ``with``
block, over parquet files; the query service names the input rows of a city's total by their
files and rows, as Spark reads them back."""

from __future__ import annotations

from capture_agent import ProvenanceSession
from capture_agent.sources import file_key
from examples.unchanged_job import input_rows, job, write_inputs


def test_a_total_is_explained_by_its_files_and_rows(spark, client, tmp_path) -> None:  # type: ignore[no-untyped-def]
    orders, customers = write_inputs(spark, tmp_path)
    with ProvenanceSession(spark, "unchanged-job", actions=True) as prov:
        rows = job(spark, orders, customers, str(tmp_path / "enriched"))
    assert dict(rows)["NY"] == 21.5
    client.wait_for_run(prov.run_id)
    lines = input_rows(client, prov.run_id, "NY")
    where = {}
    for path, key in ((orders, "oid"), (customers, "id")):
        read = spark.read.parquet(path).select(key, "_metadata.file_path", "_metadata.row_index")
        for r in read.collect():
            where[(path, r[key])] = f"{file_key(r['file_path'])}:{r['row_index']}"
    got = {(line.split("  ")[0], file_key(line.split("  ")[1].rsplit(":", 1)[0]) + ":"
            + line.split("  ")[1].rsplit(":", 1)[1]) for line in lines}  # fmt: skip
    assert got == {
        *(("orders", where[(orders, oid)]) for oid in (1, 2, 4)),  # NY's orders over 1.5
        *(("customers", where[(customers, cid)]) for cid in (10, 30)),
    }
