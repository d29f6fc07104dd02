"""OpenLineage run events of a ProvenanceSession through the openlineage-python client's file
transport, read back into the client's own event model (its constructors check the run id is a
UUID and the event time ISO 8601): START then COMPLETE (or FAIL with its error), the job, the
input and output datasets, and the ``sparkprov`` run facet with the run id and query address.
Configured by argument or by the client's own OPENLINEAGE_CONFIG file; off otherwise."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.transport.file import FileConfig, FileTransport
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from capture_agent.openlineage import NoopRunEvents, openlineage_run_id
from sparkprov import defaults
from tests.faults.jobs import run_job

ROOT = Path(__file__).resolve().parents[2]


def _events(path: Path) -> list[tuple[RunEvent, dict[str, Any]]]:
    events = []
    for line in path.read_text().splitlines():
        data = json.loads(line)
        event = RunEvent(
            eventType=RunState(data["eventType"]),
            eventTime=data["eventTime"],
            run=Run(runId=data["run"]["runId"]),
            job=Job(namespace=data["job"]["namespace"], name=data["job"]["name"]),
            inputs=[InputDataset(d["namespace"], d["name"]) for d in data["inputs"]],
            outputs=[OutputDataset(d["namespace"], d["name"]) for d in data["outputs"]],
            producer=data["producer"],
        )
        events.append((event, data["run"]["facets"]))
    return events


def _workflow(spark, prov: ProvenanceSession) -> None:  # type: ignore[no-untyped-def]
    people = spark.createDataFrame([("NY", 30), ("NY", 40), ("LA", 20)], "City string, Age int")
    person1 = prov.source(people, "Person1")
    person2 = person1.filter(F.col("Age") >= 25).named("Person2")
    person2.groupBy("City").agg(F.avg("Age").alias("Age")).named("AvgAge").collect()


def _file_client(path: Path) -> OpenLineageClient:
    return OpenLineageClient(transport=FileTransport(FileConfig(str(path), append=True)))


def test_a_session_emits_start_and_complete(spark, client, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(defaults.ENV_GRPC_ADDR, "query.example:50051")
    path = tmp_path / "events.jsonl"
    workflow = f"ol-{uuid.uuid4().hex[:6]}"
    with ProvenanceSession(spark, workflow, openlineage=_file_client(path)) as prov:
        _workflow(spark, prov)
    client.wait_for_run(prov.run_id)
    (start, start_facets), (done, done_facets) = _events(path)
    assert (start.eventType, done.eventType) == (RunState.START, RunState.COMPLETE)
    assert start.run.runId == done.run.runId == openlineage_run_id(prov.run_id)
    assert start.job == done.job == Job(namespace="sparkprov", name=workflow)
    # built in memory and only collected: named in sparkprov's namespace, by the naming spec's form
    logical = "sparkprov://query.example:50051"
    assert [(d.namespace, d.name) for d in done.inputs] == [(logical, f"{workflow}/Person1")]
    assert [(d.namespace, d.name) for d in done.outputs] == [
        (logical, f"{workflow}/Person2"),
        (logical, f"{workflow}/AvgAge"),
    ]
    for facets in (start_facets, done_facets):
        facet = facets["sparkprov"]
        assert facet["runId"] == prov.run_id and facet["workflow"] == workflow
        assert facet["queryAddress"] == "query.example:50051"
        assert facet["_schemaURL"].startswith("https://")
    # the facet leads to the run's provenance: the run id is one the query service knows
    assert prov.run_id in {r.run_id for r in client.runs(workflow)}


def test_a_failed_job_emits_fail_with_its_error(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "events.jsonl"
    with (
        pytest.raises(RuntimeError, match="the job broke"),
        ProvenanceSession(spark, "ol-fail", openlineage=_file_client(path)) as prov,
    ):
        prov.source(spark.createDataFrame([(1,)], "x int"), "In")
        raise RuntimeError("the job broke")
    (start, _), (failed, facets) = _events(path)
    assert (start.eventType, failed.eventType) == (RunState.START, RunState.FAIL)
    assert [d.name for d in failed.inputs] == ["ol-fail/In"] and failed.outputs == []
    assert facets["errorMessage"]["message"] == "RuntimeError: the job broke"


def test_files_read_and_written_are_named_by_their_physical_identity(  # type: ignore[no-untyped-def]
    spark, client, tmp_path
) -> None:
    """A source read from parquet files is the folder it was read from, a frame written to a
    path is that path: as openlineage-spark names them, so a catalog joins the two."""
    orders_path = tmp_path / "lake" / "orders"
    spark.createDataFrame([(1, "NY", 10.0), (2, "LA", 5.0)], "id int, city string, amount double") \
        .write.partitionBy("city").parquet(str(orders_path))  # fmt: skip
    out = tmp_path / "out" / "totals"
    path = tmp_path / "events.jsonl"
    with ProvenanceSession(spark, "ol-files", openlineage=_file_client(path)) as prov:
        orders = prov.source(spark.read.parquet(str(orders_path)), "Orders")
        totals = orders.groupBy("city").agg(F.sum("amount").alias("total")).named("Totals")
        totals.write.mode("overwrite").parquet(str(out))
    client.wait_for_run(prov.run_id)
    data = [json.loads(line) for line in path.read_text().splitlines()][-1]
    assert [(d["namespace"], d["name"]) for d in data["inputs"]] == [("file", str(orders_path))]
    assert [(d["namespace"], d["name"]) for d in data["outputs"]] == [("file", str(out))]
    fields = data["inputs"][0]["facets"]["schema"]["fields"]
    assert [(f["name"], f["type"]) for f in fields] == [
        ("id", "int"),
        ("amount", "double"),
        ("city", "string"),
    ]


def test_configured_by_the_clients_own_environment(spark, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "events.jsonl"
    config = tmp_path / "openlineage.yml"
    config.write_text(
        f"transport:\n  type: file\n  log_file_path: {path}\n  append: true\n", encoding="utf-8"
    )
    for name in ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", defaults.ENV_OPENLINEAGE):
        monkeypatch.delenv(name, raising=False)
    off = ProvenanceSession(spark, "ol-off")
    assert isinstance(off.lineage_events, NoopRunEvents)
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
    with ProvenanceSession(spark, "ol-env") as prov:
        prov.source(spark.createDataFrame([(1,)], "x int"), "In").collect()
    kinds = [e.eventType for e, _ in _events(path)]
    assert kinds == [RunState.START, RunState.COMPLETE]
    disabled = ProvenanceSession(spark, "ol-disabled", enabled=False)  # the kill switch wins
    assert isinstance(disabled.lineage_events, NoopRunEvents)


def test_openlineage_spark_beside_capture_names_the_same_datasets(  # type: ignore[no-untyped-def]
    stack, client, tmp_path
) -> None:
    """OpenLineage's own Spark listener (openlineage-spark) runs in the same job as capture: every
    dataset sparkprov names, openlineage-spark names the same way, so a catalog joins them."""
    jars = sorted((ROOT / ".stack" / "lib" / "openlineage").glob("openlineage-spark_*.jar"))
    assert jars, "make setup fetches openlineage-spark into .stack/lib/openlineage"
    report = run_job(
        "tests.integration.openlineage_spark_job",
        str(tmp_path),
        str(jars[-1]),
        bootstrap=stack.settings.kafka_bootstrap,
    )
    client.wait_for_run(report["run_id"])

    def named(path: Path, key: str) -> set[tuple[str, str]]:
        events = [json.loads(line) for line in path.read_text().splitlines()]
        return {(d["namespace"], d["name"]) for e in events for d in e.get(key) or []}

    ours = tmp_path / "sparkprov.jsonl"
    theirs = tmp_path / "openlineage-spark.jsonl"
    lake, out = str(tmp_path / "lake" / "orders"), str(tmp_path / "out" / "totals")
    assert named(ours, "inputs") == {("file", lake)}
    assert named(ours, "outputs") == {("file", out)}
    assert named(ours, "inputs") <= named(theirs, "inputs")
    assert named(ours, "outputs") <= named(theirs, "outputs")
    # OpenLineage's own model (its Java client, generated from the spec's JSON schemas) reads
    # our events with their standard facets typed: the parent run, the datasets' schema.
    start, complete = report["parsed"]
    assert (start["type"], complete["type"]) == ("START", "COMPLETE")
    for event in (start, complete):
        assert event["parent"] == ["airflow", "nightly.interop"]
        assert event["parent_run"] == "0193b1b6-0000-7000-8000-00000000cafe"
        assert event["sparkprov"]
    assert complete["input_fields"] == [["id", "amount", "city"]]
