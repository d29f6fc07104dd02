"""capture_agent.openlineage without Spark: when events are on, the run ids OpenLineage gets, that
a transport failure is counted and logged, never raised into the job; datasets named by
OpenLineage's naming spec from where their files live; the parent run from Spark's settings or
the environment; the events' JSON, its ``sparkprov`` facet checked against the schema the package
ships."""

from __future__ import annotations

import json
import uuid
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import openlineage.client
import pytest
from openlineage.client.serde import Serde
from pyspark.sql.types import LongType, StructField, StructType

from capture_agent.openlineage import (
    Dataset,
    NoopRunEvents,
    OpenLineageRunEvents,
    Parent,
    RunDatasets,
    file_datasets,
    location_dataset,
    openlineage_run_id,
    run_events,
    schema_fields,
)
from capture_agent.settings import CaptureSettings


class FailingClient:
    def __init__(self) -> None:
        self.closed = False

    def emit(self, event: Any) -> None:
        raise ConnectionError("marquez is down")

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("argument", "environ", "on"),
    [
        (None, {}, False),
        (None, {"OPENLINEAGE_URL": "http://marquez:5000"}, True),
        (None, {"OPENLINEAGE_CONFIG": "/etc/openlineage.yml"}, True),
        (None, {"SPARKPROV_OPENLINEAGE": "1"}, True),
        (None, {"SPARKPROV_OPENLINEAGE": "0"}, False),
        (False, {"OPENLINEAGE_URL": "http://marquez:5000"}, False),
    ],
)
def test_off_unless_configured(
    argument: Any, environ: dict[str, str], on: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # when on, the client is built from its own configuration: a fake stands in for it
    monkeypatch.setattr(openlineage.client, "OpenLineageClient", FailingClient)
    configured = CaptureSettings.from_env(environ).openlineage  # as ProvenanceSession does
    events = run_events(configured if argument is None else argument, run_id="r", workflow="w")
    assert isinstance(events, OpenLineageRunEvents if on else NoopRunEvents)


def test_run_ids_are_uuids() -> None:
    hex_id = uuid.uuid4().hex
    assert openlineage_run_id(hex_id) == str(uuid.UUID(hex_id))
    derived = openlineage_run_id("nightly-2026-11-24")
    assert uuid.UUID(derived) and derived == openlineage_run_id("nightly-2026-11-24")


def test_a_transport_failure_never_reaches_the_job(caplog: pytest.LogCaptureFixture) -> None:
    client = FailingClient()
    events = run_events(client, run_id="r", workflow="w", query_address="q:1")
    assert isinstance(events, OpenLineageRunEvents) and events.query_address == "q:1"
    events.start()
    events.complete([Dataset("file", "/in")], [Dataset("file", "/out")])
    events.fail([], [], "boom")
    events.close()
    assert events.failed_events == 3 and client.closed
    assert "marquez is down" in caplog.text


@pytest.mark.parametrize(
    ("location", "default_fs", "dataset"),
    [
        ("file:/data/orders", "file:///", ("file", "/data/orders")),
        ("file:///data/orders", "file:///", ("file", "/data/orders")),
        ("s3a://lake/raw/orders", "file:///", ("s3://lake", "raw/orders")),
        ("s3://lake/raw/orders", "file:///", ("s3://lake", "raw/orders")),
        ("gs://bucket/t", "file:///", ("gs://bucket", "t")),
        ("hdfs://nn:8020/warehouse/t", "file:///", ("hdfs://nn:8020", "/warehouse/t")),
        ("/warehouse/t", "hdfs://nn:8020", ("hdfs://nn:8020", "/warehouse/t")),
        (
            "abfss://c@acct.dfs.core.windows.net/t",
            "file:///",
            ("abfss://c@acct.dfs.core.windows.net", "/t"),
        ),
    ],
)
def test_locations_are_named_by_the_naming_spec(
    location: str, default_fs: str, dataset: tuple[str, str]
) -> None:
    assert location_dataset(location, default_fs) == dataset


def test_a_relative_local_path_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert location_dataset("out/report") == ("file", str(tmp_path / "out" / "report"))


def test_files_belong_to_their_spark_folder_or_are_their_own() -> None:
    files = [
        "file:///lake/orders/year=2026/month=11/part-00000-a.snappy.parquet",
        "file:///lake/orders/year=2026/month=10/part-00001-b.snappy.parquet",
        "file:///data/customers.csv",
        "s3a://lake/events/part-00000.json",
    ]
    assert file_datasets(files) == [
        ("file", "/lake/orders"),
        ("file", "/data/customers.csv"),
        ("s3://lake", "events"),
    ]


def test_the_parent_run_comes_from_spark_settings_then_the_environment() -> None:
    conf = {
        "spark.openlineage.parentJobNamespace": "airflow",
        "spark.openlineage.parentJobName": "dag.task",
        "spark.openlineage.parentRunId": "0193b1b6-0000-7000-8000-000000000001",
    }
    env = {"OPENLINEAGE_PARENT_ID": "airflow/nightly.load/0193b1b6-0000-7000-8000-000000000002"}
    parent_id = CaptureSettings.from_env(env).openlineage_parent_id
    assert Parent.of(conf, parent_id) == Parent("airflow", "dag.task", conf[next(reversed(conf))])
    assert Parent.of({}, parent_id) == Parent(
        "airflow", "nightly.load", "0193b1b6-0000-7000-8000-000000000002"
    )
    assert Parent.of({}, "") is None and Parent.of({}, "x") is None


def test_physical_datasets_win_and_the_rest_is_named_in_sparkprovs_namespace() -> None:
    schema = StructType([StructField("id", LongType())])
    runs = RunDatasets("nightly", "sparkprov://q:50051")
    runs.read["Orders"] = None
    runs.physical("Orders", [("file", "/lake/orders")], schema_fields(schema))
    runs.read["Rates"] = None  # built in memory: no files
    runs.named["Totals"] = None
    runs.named["Report"] = None
    runs.written("Report", ("s3://out", "report"), schema_fields(schema))
    assert runs.inputs() == [
        Dataset("file", "/lake/orders", (("id", "bigint"),)),
        Dataset("sparkprov://q:50051", "nightly/Rates"),
    ]
    assert runs.outputs() == [
        Dataset("s3://out", "report", (("id", "bigint"),)),
        Dataset("sparkprov://q:50051", "nightly/Totals"),
    ]


class Recording:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: Any) -> None:
        self.events.append(json.loads(Serde.to_json(event)))

    def close(self) -> None:
        pass


def test_events_carry_schema_and_parent_facets_and_a_valid_sparkprov_facet() -> None:
    client = Recording()
    parent = Parent("airflow", "dag.task", "0193b1b6-0000-7000-8000-000000000001")
    events = run_events(client, run_id="r1", workflow="w", query_address="q:1", parent=parent)
    events.complete([Dataset("file", "/in", (("id", "bigint"),))], [Dataset("s3://b", "out")])
    (event,) = client.events
    fields = event["inputs"][0]["facets"]["schema"]["fields"]
    assert [(f["name"], f["type"]) for f in fields] == [("id", "bigint")]
    assert "facets" not in event["outputs"][0] or not event["outputs"][0]["facets"]
    facets = event["run"]["facets"]
    job = facets["parent"]["job"]
    assert (job["namespace"], job["name"]) == ("airflow", "dag.task")
    assert facets["parent"]["run"]["runId"] == parent.run_id
    schema_file = resources.files("capture_agent") / "schemas" / "SparkprovRunFacet.json"
    schema = json.loads(schema_file.read_text())
    jsonschema.validate(facets, schema)
    # _schemaURL is the shipped file's $id and a JSON Pointer to the facet's definition in it
    document, _, pointer = facets["sparkprov"]["_schemaURL"].partition("#")
    assert document == schema["$id"] and pointer == "/$defs/SparkprovRunFacet"
    broken = {"sparkprov": {**facets["sparkprov"], "runId": ""}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
