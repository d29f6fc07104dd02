"""OpenLineage run events of a :class:`~capture_agent.session.ProvenanceSession`, so a team on
Marquez or DataHub can go from a job to its row-level provenance.

One interface, :class:`RunEvents` (``start``, ``complete``, ``fail``, ``close``), two
implementations: :class:`NoopRunEvents` when OpenLineage is off (the default) and
:class:`OpenLineageRunEvents`, which emits through the openlineage-python client and whatever
transport it is configured with (http, kafka, file, console; ``OPENLINEAGE_URL``,
``OPENLINEAGE_CONFIG``, ``openlineage.yml``, ``OPENLINEAGE__TRANSPORT__*``;
``OPENLINEAGE_DISABLED=true`` still turns it into the client's own no-op). :func:`run_events`
picks one: on when ``openlineage=True`` or a client is passed; the session passes, when not
given, whether ``OPENLINEAGE_URL`` / ``OPENLINEAGE_CONFIG`` is set or ``SPARKPROV_OPENLINEAGE=1``
(``CaptureSettings.openlineage``).

Each run sends START when the session's block is entered and COMPLETE or FAIL (with an
``errorMessage`` facet) when it is left. The job is ``(namespace, workflow)``. Datasets are named
as OpenLineage's naming spec says (https://openlineage.io/docs/spec/naming), from their physical
identity, so a catalog matches them with what openlineage-spark or Airflow report for the same
files and tables: a source read from files is ``("file", "/abs/path")``,
``("s3://bucket", "key")``, ``("hdfs://host:port", "/path")``, ... (its files' root: a Spark
output folder, or the file itself); a frame written with ``.write`` is its target, likewise (a
table: its location). A relation with no physical identity (a DataFrame built in memory, a
named relation only collected) is ``("sparkprov://<query address>", "<workflow>/<relation>")``.
Each dataset carries a ``schema`` facet (its columns and Spark types). Every event carries the
custom run facet ``sparkprov`` (its schema ships in the package,
``capture_agent/schemas/SparkprovRunFacet.json``): the sparkprov run id and the query service's
address (the OpenLineage run id is the sparkprov run id when that is a UUID, else a UUID derived
from it); and a ``parent`` facet when the job runs under an orchestrator's run: Spark's
``spark.openlineage.parentJobNamespace``/``parentJobName``/``parentRunId`` settings (as
openlineage-spark reads them), else ``OPENLINEAGE_PARENT_ID`` (``namespace/job/runId``, as
Airflow's provider passes it).

Emission never fails the job: a transport error is logged as a warning and counted
(``failed_events``).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

import attr

from sparkprov import defaults

__all__ = [
    "DEFAULT_NAMESPACE",
    "Dataset",
    "Parent",
    "RunDatasets",
    "file_datasets",
    "location_dataset",
    "schema_fields",
    "NoopRunEvents",
    "OpenLineageRunEvents",
    "RunEvents",
    "facet_class",
    "openlineage_run_id",
    "run_events",
]

log = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "sparkprov"
_PRODUCER = "https://github.com/sparkprov/sparkprov"
# The facet's schema: capture_agent/schemas/SparkprovRunFacet.json (its $id), and the JSON
# Pointer to the facet's definition in it, as OpenLineage's BaseFacet wants _schemaURL.
_FACET_SCHEMA = (
    "https://raw.githubusercontent.com/sparkprov/sparkprov/main/"
    "capture_agent/schemas/SparkprovRunFacet.json#/$defs/SparkprovRunFacet"
)
# Schemes one file system goes by (Hadoop's connectors), as the naming spec names them.
_SCHEMES = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "wasbs": "wasbs", "abfss": "abfss"}
_PARTITION_DIR = re.compile(r"[^/=]+=[^/]*")


@dataclass(frozen=True)
class Dataset:
    """An OpenLineage dataset: ``namespace`` and ``name`` by the naming spec, its columns."""

    namespace: str
    name: str
    fields: tuple[tuple[str, str], ...] = ()  # (column, Spark type)


@dataclass(frozen=True)
class Parent:
    """The orchestrator's run this job's run belongs to (OpenLineage's ``parent`` facet)."""

    namespace: str
    job: str
    run_id: str

    @classmethod
    def of(cls, spark_conf: Mapping[str, str], parent_id: str = "") -> Parent | None:
        """From Spark's settings, else ``parent_id`` (``OPENLINEAGE_PARENT_ID``:
        ``namespace/job/runId``, ``CaptureSettings.openlineage_parent_id``)."""
        key = "spark.openlineage.parent"
        names = [spark_conf.get(f"{key}{k}", "") for k in ("JobNamespace", "JobName", "RunId")]
        if all(names):
            return cls(*names)
        namespace, _, rest = parent_id.partition("/")
        job, _, run_id = rest.rpartition("/")
        return cls(namespace, job, run_id) if namespace and job and run_id else None


Fields = Sequence[tuple[str, str]]  # (column, Spark type), as TrackedFrame.visible_schema


def schema_fields(schema: Any) -> list[tuple[str, str]]:
    """A DataFrame schema's (column, Spark type) pairs."""
    return [(f.name, f.dataType.simpleString()) for f in getattr(schema, "fields", ())]


class RunDatasets:
    """What a run read and wrote, as OpenLineage datasets, in first-use order (kept by the
    capture context whether events are on or not: a few names per relation).

    ``read`` and ``named`` take the relation names the run uses; ``physical`` and ``written``
    add what Spark knows of where their rows live. A relation with no physical identity is named
    ``(logical_namespace, "<workflow>/<relation>")``."""

    def __init__(self, workflow: str, logical_namespace: str) -> None:
        self._workflow = workflow
        self._logical = logical_namespace
        self.read: dict[str, None] = {}
        self.named: dict[str, None] = {}
        self._files: dict[str, list[tuple[str, str]]] = {}
        self._fields: dict[str, tuple[tuple[str, str], ...]] = {}
        self._written: dict[tuple[str, str], tuple[str, tuple[tuple[str, str], ...]]] = {}

    def physical(self, relation: str, datasets: list[tuple[str, str]], fields: Fields) -> None:
        """``relation`` (read) lives in these datasets (``file_datasets``)."""
        self._files[relation] = datasets
        self._fields[relation] = tuple(fields)

    def schema(self, relation: str, fields: Fields) -> None:
        self._fields.setdefault(relation, tuple(fields))

    def written(self, relation: str, dataset: tuple[str, str], fields: Fields) -> None:
        """A frame (named ``relation``, or ``""``) was written to ``dataset``."""
        self._written[dataset] = (relation, tuple(fields))

    def _logical_dataset(self, relation: str) -> Dataset:
        name = f"{self._workflow}/{relation}"
        return Dataset(self._logical, name, self._fields.get(relation, ()))

    def inputs(self) -> list[Dataset]:
        out: dict[tuple[str, str], Dataset] = {}
        for relation in self.read:
            found = self._files.get(relation)
            if not found:
                dataset = self._logical_dataset(relation)
                out[(dataset.namespace, dataset.name)] = dataset
            for namespace, name in found or ():
                out[(namespace, name)] = Dataset(namespace, name, self._fields.get(relation, ()))
        return list(out.values())

    def outputs(self) -> list[Dataset]:
        out = [Dataset(ns, name, fields) for (ns, name), (_, fields) in self._written.items()]
        written = {relation for relation, _ in self._written.values()}
        out += [self._logical_dataset(r) for r in self.named if r not in written]
        return out


def location_dataset(location: str, default_fs: str = "file:///") -> tuple[str, str]:
    """``(namespace, name)`` of a file system location by the naming spec; a location without
    a scheme is on ``default_fs`` (Hadoop's ``fs.defaultFS``), relative to the working folder
    when that is the local file system."""
    parts = urlsplit(location)
    scheme, netloc, path = parts.scheme.lower(), parts.netloc, parts.path
    if not scheme:
        base = urlsplit(default_fs)
        scheme, netloc = (base.scheme or "file").lower(), base.netloc
        if scheme == "file":
            path = os.path.abspath(location)
    scheme = _SCHEMES.get(scheme, scheme)
    if scheme == "file":
        return "file", path
    if scheme in ("s3", "gs"):  # the bucket is the namespace, the object key the name
        return f"{scheme}://{netloc}", path.lstrip("/")
    return f"{scheme}://{netloc}", path


def file_datasets(files: Iterable[str], default_fs: str = "file:///") -> list[tuple[str, str]]:
    """The datasets a relation's files (``DataFrame.inputFiles()``) belong to, in first-seen
    order: a Spark output folder (``part-*`` files, below any ``key=value`` partition folders)
    is one dataset; any other file is its own."""
    roots: dict[tuple[str, str], None] = {}
    for file in files:
        folder, _, leaf = file.rstrip("/").rpartition("/")
        if leaf.startswith("part-") or leaf.startswith("_"):
            while folder.rpartition("/")[2] and _PARTITION_DIR.fullmatch(folder.rpartition("/")[2]):
                folder = folder.rpartition("/")[0]
            roots[location_dataset(folder, default_fs)] = None
        else:
            roots[location_dataset(file, default_fs)] = None
    return list(roots)


class RunEvents(Protocol):
    def start(self) -> None: ...

    def complete(self, inputs: Sequence[Dataset], outputs: Sequence[Dataset]) -> None: ...

    def fail(self, inputs: Sequence[Dataset], outputs: Sequence[Dataset], error: str) -> None: ...

    def close(self) -> None: ...


class NoopRunEvents:
    """OpenLineage off: nothing is imported, nothing is sent."""

    def start(self) -> None:
        pass

    def complete(self, inputs: Sequence[Dataset], outputs: Sequence[Dataset]) -> None:
        pass

    def fail(self, inputs: Sequence[Dataset], outputs: Sequence[Dataset], error: str) -> None:
        pass

    def close(self) -> None:
        pass


def openlineage_run_id(run_id: str) -> str:
    """OpenLineage wants a UUID: the run id itself when it is one, else one derived from it."""
    try:
        return str(uuid.UUID(run_id))
    except ValueError:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"sparkprov:run:{run_id}"))


@functools.cache
def facet_class() -> type[Any]:
    """The ``sparkprov`` run facet's class, an OpenLineage ``RunFacet``; built on first use, so
    nothing of openlineage is imported while it is off."""
    from openlineage.client.generated.base import RunFacet

    @attr.define
    class SparkprovRunFacet(RunFacet):
        """Where the run's row-level provenance is: ``runId`` in sparkprov's query service at
        ``queryAddress`` (gRPC ``sparkprov.v1.ProvenanceQuery``)."""

        runId: str = attr.field()  # noqa: N815 - OpenLineage's camelCase
        queryAddress: str = attr.field()  # noqa: N815
        workflow: str = attr.field()

        @staticmethod
        def _get_schema() -> str:
            return _FACET_SCHEMA

    return SparkprovRunFacet


class OpenLineageRunEvents:
    def __init__(
        self,
        client: Any,
        *,
        run_id: str,
        workflow: str,
        query_address: str,
        namespace: str = DEFAULT_NAMESPACE,
        parent: Parent | None = None,
    ) -> None:
        self._client = client
        self.parent = parent
        self.run_id = run_id
        self.workflow = workflow
        self.query_address = query_address
        self.namespace = namespace
        self.failed_events = 0
        self._facet = facet_class()(
            runId=run_id, queryAddress=query_address, workflow=workflow, producer=_PRODUCER
        )

    def start(self) -> None:
        self._emit("START", (), ())

    def complete(self, inputs: Sequence[Dataset], outputs: Sequence[Dataset]) -> None:
        self._emit("COMPLETE", inputs, outputs)

    def fail(self, inputs: Sequence[Dataset], outputs: Sequence[Dataset], error: str) -> None:
        from openlineage.client.generated.error_message_run import ErrorMessageRunFacet

        facet = ErrorMessageRunFacet(message=error, programmingLanguage="PYTHON")
        self._emit("FAIL", inputs, outputs, {"errorMessage": facet})

    def close(self) -> None:
        try:
            self._client.close()
        except Exception as e:  # the job is done; a transport that cannot flush is reported
            log.warning("OpenLineage client did not close cleanly: %s", e)

    def _emit(
        self,
        state: str,
        inputs: Sequence[Dataset],
        outputs: Sequence[Dataset],
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        from openlineage.client.event_v2 import (
            InputDataset,
            Job,
            OutputDataset,
            Run,
            RunEvent,
            RunState,
        )
        from openlineage.client.generated import parent_run

        facets: dict[str, Any] = {"sparkprov": self._facet, **(extra or {})}
        if self.parent is not None:
            facets["parent"] = parent_run.ParentRunFacet(
                run=parent_run.Run(runId=self.parent.run_id),
                job=parent_run.Job(namespace=self.parent.namespace, name=self.parent.job),
                producer=_PRODUCER,
            )
        event = RunEvent(
            eventType=RunState[state],
            eventTime=datetime.now(UTC).isoformat(),
            run=Run(runId=openlineage_run_id(self.run_id), facets=facets),
            job=Job(namespace=self.namespace, name=self.workflow),
            inputs=[InputDataset(d.namespace, d.name, facets=_schema(d)) for d in inputs],
            outputs=[OutputDataset(d.namespace, d.name, facets=_schema(d)) for d in outputs],
            producer=_PRODUCER,
        )
        try:
            self._client.emit(event)
        except Exception as e:  # lineage for a catalog must not fail the Spark job
            self.failed_events += 1
            log.warning(
                "OpenLineage %s event of run %s not sent (%d failed so far): %s",
                state,
                self.run_id,
                self.failed_events,
                e,
            )


def _schema(dataset: Dataset) -> dict[str, Any]:
    """The dataset's ``schema`` facet (none when its columns are unknown)."""
    if not dataset.fields:
        return {}
    from openlineage.client.generated import schema_dataset

    fields = [schema_dataset.SchemaDatasetFacetFields(name=n, type=t) for n, t in dataset.fields]
    return {"schema": schema_dataset.SchemaDatasetFacet(fields=fields, producer=_PRODUCER)}


def run_events(
    openlineage: bool | Any,
    *,
    run_id: str,
    workflow: str,
    query_address: str = defaults.GRPC_ADDR,
    namespace: str = DEFAULT_NAMESPACE,
    parent: Parent | None = None,
) -> RunEvents:
    """The run's events: ``openlineage`` is ``False`` (off), ``True`` (the client configured by
    its own files and environment) or an ``OpenLineageClient`` to use."""
    if openlineage is False:
        return NoopRunEvents()
    if openlineage is True:
        from openlineage.client import OpenLineageClient

        openlineage = OpenLineageClient()
    return OpenLineageRunEvents(
        openlineage,
        run_id=run_id,
        workflow=workflow,
        query_address=query_address,
        namespace=namespace,
        parent=parent,
    )
