"""ProvenanceSession: one captured run of a workflow.

Entering the session publishes a run-start marker; leaving it publishes a run-complete marker
with the exact number of distinct nodes and edges the run's capture points emitted (Spark
accumulators keyed by capture point and partition, so retried tasks are not counted twice). The
ingest service marks the run complete once it has stored exactly that many.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from pyspark.accumulators import AccumulatorParam

from capture_agent.actions import ActionCapture
from capture_agent.context import CaptureContext
from capture_agent.emitters import Emitter, KafkaEmitter, NoopEmitter
from capture_agent.errors import PublishError
from capture_agent.frame import SESSION_VALUES, TrackedFrame, Values, chosen, reads
from capture_agent.jvm import JvmTaps
from capture_agent.modules import Invocation
from capture_agent.openlineage import (
    NoopRunEvents,
    OpenLineageRunEvents,
    Parent,
    RunEvents,
    run_events,
    schema_fields,
)
from capture_agent.origin import internal_calls
from capture_agent.passthrough import PlainFrame, PlainInvocation
from capture_agent.publisher import PublisherConfig
from capture_agent.result_manifest import results_root
from capture_agent.reuse import ResultReuse
from capture_agent.settings import ENV_CAPTURE, CaptureSettings
from capture_agent.sources import file_positions
from capture_agent.taps import HIDDEN_PREFIX, ID, SourceSpec
from capture_agent.writer import source_datasets
from sparkprov import defaults
from sparkprov.events import SourceFiles, encode_run_complete, encode_run_started
from sparkprov.kafka_security import KafkaSecurity
from sparkprov.limits import MAX_SOURCE_FILES, check_name
from sparkprov.workflow import WorkflowDag

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ENV_CAPTURE", "ProvenanceSession"]

log = logging.getLogger(__name__)

_Counts = dict[tuple[str, int], tuple[int, int]]
# How long a run's end waits for Spark jobs of the run still running (a broadcast or subquery
# job the query no longer awaited), so that its marker counts what they publish.
_JOBS_WAIT_S = 120.0
_JOBS_POLL_S = 0.05


class _CountsParam(AccumulatorParam):  # type: ignore[type-arg]
    """Merges {(tap, smallest row id): (nodes, edges)}. The same key means the same rows; a
    task that stopped early (a limit) saw part of them, so the larger count wins."""

    def zero(self, value: _Counts) -> _Counts:
        return {}

    def addInPlace(self, value1: _Counts, value2: _Counts) -> _Counts:  # noqa: N802
        for key, (nodes, edges) in value2.items():
            old = value1.get(key, (0, 0))
            value1[key] = (max(old[0], nodes), max(old[1], edges))
        return value1


def _lineage_lost(exc: BaseException) -> bool:
    """Whether a failed job failed for a PublishError (raised in a task, it reaches the driver
    as Spark's exception with the Python traceback in its text)."""
    return isinstance(exc, PublishError) or PublishError.__name__ in str(exc)


class ProvenanceSession:
    """Captures the provenance of the tracked frames built inside its ``with`` block.

    Configuration: ``settings`` (a :class:`~capture_agent.settings.CaptureSettings`; default:
    ``CaptureSettings.from_env()``, the ``SPARKPROV_*`` variables of the driver's environment),
    which the keyword arguments below override.

    ``bootstrap`` and ``topic`` default to ``SPARKPROV_KAFKA_BOOTSTRAP`` / ``SPARKPROV_TOPIC``
    (then 127.0.0.1:9092 / sparkprov.lineage); ``run_id`` defaults to a fresh UUID.
    ``kafka_security`` (TLS, SASL) defaults to ``SPARKPROV_KAFKA_SECURITY_PROTOCOL`` etc. of the
    driver's environment; the executors get it with the publisher config.
    ``publish_timeout_s`` bounds how long a broker may be down: the driver and every task wait
    and retry that long, then the run fails with a :class:`PublishError` and its counts.
    ``emitter`` replaces Kafka as the destination of every event (capture_agent.emitters, e.g.
    a ``MemoryEmitter`` in tests).

    ``enabled=False`` or ``SPARKPROV_DISABLED=1`` is the kill switch, whatever the emitter:
    :meth:`source` hands back the DataFrame itself and :meth:`module` a plain ``with`` block
    (capture_agent.passthrough), every operation is Spark's own, and nothing is recorded or
    published (no run markers, no OpenLineage events, no stored results).

    ``capture`` says where the capture points run: ``"jvm"`` (the default, or
    ``SPARKPROV_CAPTURE``), inside Spark's executors with no Python worker (capture_agent.jvm;
    the capture jar is added to the running SparkContext and checked with a one-row job here,
    so a cluster whose executors cannot load it fails now, not mid-job), or ``"python"``, the
    pandas UDF capture points (capture_agent.taps), which need no jar.

    ``source_positions``: ``"file"`` (the default, or ``SPARKPROV_SOURCE_POSITIONS``) identifies
    a parquet source's rows by their file and row index, the same in every run however Spark
    splits the files (capture_agent.sources); ``"partition"`` identifies every source's rows by
    partition and offset.

    ``openlineage``: OpenLineage run events (START, COMPLETE, FAIL) with the job, its input and
    output relations and a ``sparkprov`` run facet (run id, query address), through the
    openlineage-python client: ``True`` (the client as its own configuration sets it up), a
    client to use, ``False`` (off), or ``None``: on only when ``OPENLINEAGE_URL``,
    ``OPENLINEAGE_CONFIG`` or ``SPARKPROV_OPENLINEAGE=1`` is set (capture_agent.openlineage).

    ``reuse=True`` stores every named relation's result (a sink) as parquet under
    ``results_path`` (default ``SPARKPROV_RESULTS_PATH``, else ``results`` in the user's data
    directory, e.g. ``~/.local/share/sparkprov/results``) and, where an equivalent result of an
    earlier run is stored, returns that instead of computing it, its rows linked to the earlier
    run's provenance (capture_agent.reuse; docs/versions.md, "Reuse"). The path must be one the
    driver and the executors share (local mode, or a shared mount).

    ``actions=True`` captures unchanged code: inside the ``with`` block, an action on a plain
    DataFrame (from ``spark.sql`` text, DataFrame calls, or both) runs captured from its plan,
    its result named ``result<N>`` or by the path or table it is written to
    (capture_agent.actions). :meth:`tracked` does the same for one DataFrame.

    ``values``: the sources' values policy where :meth:`source` or :meth:`tracked` do not say
    one: ``"read"`` (the default: the columns each query reads), ``"all"``, a list of columns or
    ``None`` (docs/capture.md, "Value capture per relation").
    """

    def __init__(
        self,
        spark: SparkSession,
        workflow: str,
        *,
        bootstrap: str | None = None,
        topic: str | None = None,
        run_id: str | None = None,
        rows_per_message: int = defaults.ROWS_PER_MESSAGE,
        publish_timeout_s: float = 60.0,
        enabled: bool | None = None,
        splits: Mapping[str, Sequence[str]] | None = None,
        kafka_security: KafkaSecurity | None = None,
        emitter: Emitter | None = None,
        capture: str | None = None,
        source_positions: str | None = None,
        openlineage: bool | OpenLineageClient | None = None,
        reuse: bool = False,
        results_path: str | os.PathLike[str] | None = None,
        settings: CaptureSettings | None = None,
        actions: bool = False,
        values: Values = "read",
    ) -> None:
        if not workflow:
            raise ValueError("workflow must be a non-empty name")
        if isinstance(values, str):
            chosen([], values)  # an unknown policy is refused here, by name
        self.values = values
        # Names travel in every event and Neo4j indexes them: refused here, before any work,
        # rather than in a task (sparkprov.limits; LimitExceeded is a ValueError).
        check_name("workflow", workflow)
        if run_id is not None:
            check_name("run_id", run_id)
        if settings is None:
            settings = CaptureSettings.from_env(enabled=enabled)
        # What the job's code says wins over the environment.
        self.settings = settings = settings.overridden(
            enabled=enabled,
            kafka_bootstrap=bootstrap,
            topic=topic,
            kafka_security=kafka_security,
            capture=capture,
            source_positions=source_positions,
            results_path=os.fspath(results_path) if results_path else None,
        )
        self.spark = spark
        self.workflow = workflow
        self.run_id = run_id or uuid.uuid4().hex
        # The kill switch, decided here once: a disabled session hands out plain frames and
        # modules (capture_agent.passthrough) and builds nothing that captures or sends, so no
        # operator ever asks whether capture is on.
        self.enabled = settings.enabled
        self.capture_path = settings.capture
        self._file_positions = settings.source_positions == "file"
        # actions=True: actions on plain DataFrames run captured (capture_agent.actions).
        self._actions: ActionCapture | None = None
        self.lineage_events: RunEvents = NoopRunEvents()
        jvm: JvmTaps | None = None
        if not self.enabled:
            emitter, reuse = NoopEmitter(), False
        else:
            if emitter is None:
                emitter = KafkaEmitter(
                    PublisherConfig(
                        bootstrap=settings.kafka_bootstrap,
                        topic=settings.topic,
                        timeout_s=publish_timeout_s,
                        security=settings.kafka_security,
                        compression=settings.kafka_compression,
                    )
                )
            self.lineage_events = run_events(
                settings.openlineage if openlineage is None else openlineage,
                run_id=self.run_id,
                workflow=workflow,
                query_address=settings.query_address,
            )
            if isinstance(self.lineage_events, OpenLineageRunEvents):  # the orchestrator's run
                conf = dict(spark.sparkContext.getConf().getAll())
                self.lineage_events.parent = Parent.of(conf, settings.openlineage_parent_id)
            if settings.capture == "jvm":
                jvm = JvmTaps(spark, settings.capture_jar)
        # Where every event goes (capture_agent.emitters): Kafka, nowhere or memory (tests).
        self.emitter: Emitter = emitter
        self._counts = spark.sparkContext.accumulator({}, _CountsParam())
        # What the operator modules use of this session (capture_agent.context); under the kill
        # switch no frame reaches it, and its DAG and counts stay empty.
        self.capture = CaptureContext(
            self.run_id,
            workflow,
            emitter,
            self._counts,
            rows_per_message=rows_per_message,
            splits=splits,
            jvm=jvm,
            query_address=settings.query_address,
        )
        self.reuse: ResultReuse | None = None
        if reuse:
            self.reuse = ResultReuse(spark, self.capture, results_root(settings.results_path))
            self.capture.reuse = self.reuse
        if actions and self.enabled:
            self._actions = ActionCapture(self)

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> ProvenanceSession:
        if not self.enabled:
            log.info("sparkprov capture disabled (%s); running plain", defaults.ENV_DISABLED)
            return self
        app_id = self.spark.sparkContext.applicationId or ""
        try:
            self._publish(
                encode_run_started(self.run_id, self.workflow, int(time.time() * 1000), app_id)
            )
        except PublishError as e:
            raise PublishError(
                f"provenance run {self.run_id} of workflow {self.workflow} failed before it "
                f"started: {e}; nothing was captured (0 nodes, 0 edges published)",
                nodes=0,
                edges=0,
            ) from e
        log.info("provenance run %s of workflow %s started", self.run_id, self.workflow)
        # Spark hands a thread's job tags on to the threads that run the query's broadcast and
        # subquery jobs, so the run's end can find them all (_await_jobs).
        self.spark.sparkContext.addJobTag(self._job_tag)
        self.lineage_events.start()
        if self._actions is not None:
            self._actions.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.enabled:
            return
        if self._actions is not None:
            self._actions.__exit__()
        failure = exc
        try:
            self._await_jobs()
            self._finish(exc)
        except BaseException as e:  # the run-complete marker was lost: the run failed too
            failure = e
            raise
        finally:
            self.spark.sparkContext.removeJobTag(self._job_tag)
            if self.reuse is not None:  # only a run whose lineage is whole is reused later
                self.reuse.finish(succeeded=failure is None)
            read, named = self.capture.datasets.inputs(), self.capture.datasets.outputs()
            if failure is None:
                self.lineage_events.complete(read, named)
            else:
                error = f"{type(failure).__name__}: {failure}"[:2000]
                self.lineage_events.fail(read, named, error)
            self.lineage_events.close()

    @property
    def _job_tag(self) -> str:
        return f"sparkprov-run-{self.run_id}"

    def _await_jobs(self) -> None:
        """Wait (up to ``_JOBS_WAIT_S``) for the run's Spark jobs that still run. An action can
        return before every job its query started has ended: adaptive execution may stop
        awaiting a broadcast whose join it found empty, and that job's tasks still capture and
        publish their rows. The run's marker counts what completed tasks published, so it is
        written once they are all done."""
        tracker = self.spark.sparkContext._jsc.sc().statusTracker()
        deadline = time.monotonic() + _JOBS_WAIT_S
        while True:
            running = set(tracker.getActiveJobIds()) & set(tracker.getJobIdsForTag(self._job_tag))
            if not running:
                return
            if time.monotonic() > deadline:
                log.warning(
                    "provenance run %s: Spark jobs %s of the run still run after %.0f s; the "
                    "run's counts leave out what they publish later",
                    self.run_id,
                    sorted(running),
                    _JOBS_WAIT_S,
                )
                return
            time.sleep(_JOBS_POLL_S)

    def _finish(self, exc: BaseException | None) -> None:
        nodes, edges = self.counts()
        summary = f"completed tasks published {nodes} nodes and {edges} edges"
        try:
            self._publish(
                encode_run_complete(
                    self.run_id,
                    self.workflow,
                    nodes,
                    edges,
                    failed=exc is not None,
                    error="" if exc is None else f"{type(exc).__name__}: {exc}"[:2000],
                    finished_unix_ms=int(time.time() * 1000),
                    version=self.workflow_dag(),
                    reuses=self.reuse.reuses if self.reuse is not None else (),
                    source_files=self._source_files(),
                )
            )
        except PublishError as e:
            raise PublishError(
                f"provenance run {self.run_id} failed: its run-complete marker could not be "
                f"published ({e}); {summary}, the run stays incomplete",
                nodes=nodes,
                edges=edges,
            ) from (exc or e)
        if exc is not None and _lineage_lost(exc):
            # The job failed because lineage could not be delivered (the broker stayed down
            # past the bound in some task): say so, with what did arrive.
            raise PublishError(
                f"provenance run {self.run_id} failed: lineage could not be delivered to "
                f"{self.emitter.describe()} within {self.emitter.timeout_s}s; "
                f"{summary}; the run is marked failed",
                nodes=nodes,
                edges=edges,
            ) from exc
        if exc is not None:
            log.error("provenance run %s failed (%s); %s", self.run_id, type(exc).__name__, summary)
            return
        log.info(
            "provenance run %s complete: %d nodes, %d edges emitted", self.run_id, nodes, edges
        )

    def workflow_dag(self) -> WorkflowDag:
        """The canonical operator DAG of what this run built so far (sparkprov.workflow)."""
        return self.capture.dag.dag()

    @property
    def version_id(self) -> str:
        """The id of this run's workflow version: the hash of its canonical DAG."""
        return self.workflow_dag().version_id

    def counts(self) -> tuple[int, int]:
        """Nodes and edges emitted so far by completed tasks."""
        values = self._counts.value.values()
        jvm_nodes, jvm_edges = self.capture.jvm_counts()
        return sum(n for n, _ in values) + jvm_nodes, sum(e for _, e in values) + jvm_edges

    def _file_source(self, relation: str, files: tuple[str, ...], key: str) -> None:
        """Records a source positioned by ``files`` and, with the JVM taps, its TOKEN id mask.
        A relation read again from other files keeps the last list (a label's file index
        refers to it) and that source's masks only."""
        capture = self.capture
        if capture.source_files.get(relation) != files:
            capture.source_files[relation] = files
            capture.source_masks[relation] = []
        if capture.jvm is not None:
            capture.source_masks[relation].append(capture.jvm.token_mask(capture.run_id, key))

    def _source_files(self) -> list[SourceFiles]:
        """The file lists of the sources positioned by file (capture_agent.sources), for the run
        marker; a source of more files than the marker holds keeps its positions only."""
        kept = []
        for relation, files in self.capture.source_files.items():
            if len(files) <= MAX_SOURCE_FILES:
                masks = tuple(self.capture.source_masks.get(relation, ()))
                kept.append(SourceFiles(relation, files, masks))
            else:
                log.info("source %s: %d files, not listed in the run marker", relation, len(files))
        return kept

    def _publish(self, value: bytes) -> None:
        try:
            self.capture.publish(value)
        except PublishError as e:
            raise PublishError(f"could not publish the run marker of {self.run_id}: {e}") from e

    # -- building tracked frames ----------------------------------------------------------

    @internal_calls
    def source(
        self, df: DataFrame, relation: str, values: Values = SESSION_VALUES
    ) -> TrackedFrame | PlainFrame:
        """Track ``df`` as source relation ``relation``: every row becomes a TOKEN node that keeps
        the row's values (``values``: "read", the columns the query reads; "all" columns; a list
        of columns; None; or, by default, the session's policy: docs/capture.md, "Value capture
        per relation").
        Under the kill switch: ``df`` itself, in a
        :class:`~capture_agent.passthrough.PlainFrame`."""
        from pyspark.sql import functions as F

        if not self.enabled:
            return PlainFrame(df)
        if not relation:
            raise ValueError("a source needs a relation name")
        check_name("relation", relation)
        reserved = [c for c in df.columns if c.startswith(HIDDEN_PREFIX)]
        if reserved:
            raise ValueError(f"columns {reserved} use the prefix reserved for provenance")
        if values == SESSION_VALUES:
            values = self.values
        key = self.capture.next_key(f"source:{relation}")
        rowno = HIDDEN_PREFIX + "rowno"
        # The row's file and row index where Spark gives them (capture_agent.sources), else its
        # partition and offset (Titian's record id); either is stable when a task re-executes.
        physical = file_positions(self.capture, df) if self._file_positions else None
        if physical is not None:
            tracked = df.withColumn(rowno, physical.column)
            self._file_source(relation, physical.files, key)
        else:
            tracked = df.withColumn(rowno, F.monotonically_increasing_id())
        # The row's TOKEN id: its position XOR the hash of run and key. As unique as a hash of
        # the position (the hash varies by run and source), and a position again when XORed
        # back, so taps can send positions, not ids (lineage.proto's DerivedIds).
        tracked = tracked.withColumn(ID, F.col(rowno).bitwiseXOR(self.capture.node_id(key)))
        self.capture.datasets.read[relation] = None
        if isinstance(self.lineage_events, NoopRunEvents):  # listing files costs: only for events
            self.capture.datasets.schema(relation, schema_fields(df.schema))
        else:
            fields = schema_fields(df.schema)
            self.capture.datasets.physical(relation, source_datasets(df), fields)
        if self.reuse is not None:
            self.reuse.register_source(relation, df)
        spec = SourceSpec(
            key=key,
            relation=relation,
            attributes=chosen(df.columns, values),
            values_read=reads(values),
        )
        frame = TrackedFrame(self.capture, tracked, spec, {"rowno": F.col(rowno)})
        frame.origin = key
        frame.dag_node = self.capture.dag.add(
            "source", {"relation": relation}, [], frame.visible_schema()
        )
        return frame

    @internal_calls
    def tracked(self, df: DataFrame, values: Values = SESSION_VALUES) -> TrackedFrame | PlainFrame:
        """Capture any DataFrame from its plan: SQL text over views or tables, or DataFrame code
        written without ``source``. Its leaves become sources named by their view or table, and
        the plan is rebuilt with the tracked operators (capture_agent.plan_capture); ``values``
        is the sources' values policy (as :meth:`source`'s). An operator that cannot be rebuilt
        raises :class:`UnsupportedOperation` naming it. Under the kill switch: ``df`` itself."""
        if not self.enabled:
            return PlainFrame(df)
        from capture_agent.plan_capture import capture_plan

        return capture_plan(self, df, values)

    def module(self, name: str) -> Invocation | PlainInvocation:
        """``with prov.module("dealer1") as m:`` -- one invocation of module ``name``."""
        if not self.enabled:
            return PlainInvocation(name)
        return Invocation(self.capture, name)

    def split_for(self, relation: str = "") -> tuple[str, ...]:
        """The split path of nodes built here, now: ``splits[relation]`` if given; else the
        open module's split (``splits[module]``, default ``(module,)``; outside modules
        ``("main",)``) with the relation, if any, as its sub-split."""
        return self.capture.split_for(relation)
