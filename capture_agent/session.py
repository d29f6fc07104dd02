"""ProvenanceSession: one captured run of a workflow.

Entering the session publishes a run-start marker; leaving it publishes a run-complete marker
with the exact number of distinct nodes and edges the run's capture points emitted (Spark
accumulators keyed by capture point and partition, so retried tasks are not counted twice). The
ingest service marks the run complete once it has stored exactly that many.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pyspark.accumulators import AccumulatorParam

from capture_agent.errors import PublishError
from capture_agent.frame import TrackedFrame, Values, chosen, unique_names
from capture_agent.modules import Invocation
from capture_agent.publisher import PublisherConfig, producer_for
from capture_agent.taps import (
    HIDDEN_PREFIX,
    ID,
    SourceSpec,
    TapContext,
    TapSpec,
    make_tap,
    null_flag,
)
from sparkprov import defaults
from sparkprov.events import (
    MAX_SPLIT_DEPTH,
    NodeColumns,
    encode_batch,
    encode_run_complete,
    encode_run_started,
)
from sparkprov.kafka_security import KafkaSecurity
from sparkprov.limits import check_name, quote

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["ProvenanceSession"]

log = logging.getLogger(__name__)

_Counts = dict[tuple[str, int], tuple[int, int]]


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


MAIN_SPLIT = "main"


def _split_path(name: str, path: Sequence[str]) -> tuple[str, ...]:
    parts = (path,) if isinstance(path, str) else tuple(path)
    if not 1 <= len(parts) <= MAX_SPLIT_DEPTH or not all(isinstance(p, str) and p for p in parts):
        raise ValueError(
            f"split path of {quote(name)} must be 1 to {MAX_SPLIT_DEPTH} non-empty names, "
            f"got {quote(repr(path))}"
        )
    for part in parts:
        check_name("split", part)
    return parts


class ProvenanceSession:
    """Captures the provenance of the tracked frames built inside its ``with`` block.

    ``bootstrap`` and ``topic`` default to ``SPARKPROV_KAFKA_BOOTSTRAP`` / ``SPARKPROV_TOPIC``
    (then 127.0.0.1:9092 / sparkprov.lineage); ``run_id`` defaults to a fresh UUID.
    ``kafka_security`` (TLS, SASL) defaults to ``KafkaSecurity.from_env`` of the driver's
    environment (``SPARKPROV_KAFKA_SECURITY_PROTOCOL`` etc.); the executors get it with the
    publisher config.
    ``publish_timeout_s`` bounds how long a broker may be down: the driver and every task wait
    and retry that long, then the run fails with a :class:`PublishError` and its counts.
    """

    def __init__(
        self,
        spark: SparkSession,
        workflow: str,
        *,
        bootstrap: str | None = None,
        topic: str | None = None,
        run_id: str | None = None,
        rows_per_message: int = 2048,
        publish_timeout_s: float = 60.0,
        enabled: bool | None = None,
        splits: Mapping[str, Sequence[str]] | None = None,
        kafka_security: KafkaSecurity | None = None,
    ) -> None:
        if not workflow:
            raise ValueError("workflow must be a non-empty name")
        # Names travel in every event and Neo4j indexes them: refused here, before any work,
        # rather than in a task (sparkprov.limits; LimitExceeded is a ValueError).
        check_name("workflow", workflow)
        if run_id is not None:
            check_name("run_id", run_id)
        self.spark = spark
        self.workflow = workflow
        # The kill switch: SPARKPROV_DISABLED=1 turns every tracked operation into the plain one
        # (a constant id column, no taps, nothing published).
        if enabled is None:
            disabled = os.environ.get(defaults.ENV_DISABLED, "").strip().lower()
            enabled = disabled not in {"1", "true", "yes", "on"}
        self.enabled = enabled
        self.run_id = run_id or uuid.uuid4().hex
        self._publisher = PublisherConfig(
            bootstrap=bootstrap
            or os.environ.get(defaults.ENV_KAFKA_BOOTSTRAP, defaults.KAFKA_BOOTSTRAP),
            topic=topic or os.environ.get(defaults.ENV_TOPIC, defaults.TOPIC),
            timeout_s=publish_timeout_s,
            security=kafka_security or KafkaSecurity.from_env(os.environ),
        )
        self._counts = spark.sparkContext.accumulator({}, _CountsParam())
        self._ctx = TapContext(
            run_id=self.run_id,
            workflow=workflow,
            publisher=self._publisher,
            counts=self._counts,
            rows_per_message=rows_per_message,
        )
        self._keys = itertools.count()
        self._relations: set[str] = set()
        # Split paths (CSProv): a module or relation name -> its split path (1 to 3 names).
        self._splits = {name: _split_path(name, path) for name, path in (splits or {}).items()}
        self._modules: list[str] = []  # the modules whose `with` blocks are open

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
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.enabled:
            return
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
                f"provenance run {self.run_id} failed: lineage could not be delivered to Kafka "
                f"at {self._publisher.bootstrap} within {self._publisher.timeout_s}s; "
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

    def counts(self) -> tuple[int, int]:
        """Nodes and edges emitted so far by completed tasks."""
        values = self._counts.value.values()
        return sum(n for n, _ in values), sum(e for _, e in values)

    def _publish(self, value: bytes) -> None:
        producer = producer_for(self._publisher)  # raises PublishError past the bound
        try:
            future = producer.send(self._publisher.topic, value=value, key=self.run_id.encode())
            # Sent at once rather than after the producer's linger: the driver waits for each
            # marker and MODULE node (one per module invocation).
            producer.flush(timeout=self._publisher.timeout_s)
            future.get(timeout=self._publisher.timeout_s)
        except Exception as e:
            raise PublishError(
                f"could not publish the run marker of {self.run_id} to "
                f"{self._publisher.bootstrap}: {e}"
            ) from e

    # -- building tracked frames ----------------------------------------------------------

    def source(self, df: DataFrame, relation: str, values: Values = "all") -> TrackedFrame:
        """Track ``df`` as source relation ``relation``: every row becomes a TOKEN node that keeps
        the row's values (``values``: "all" columns, a list of columns, or None)."""
        from pyspark.sql import functions as F

        if not relation:
            raise ValueError("a source needs a relation name")
        check_name("relation", relation)
        reserved = [c for c in df.columns if c.startswith(HIDDEN_PREFIX)]
        if reserved:
            raise ValueError(f"columns {reserved} use the prefix reserved for provenance")
        key = self._next_key(f"source:{relation}")
        rowno = HIDDEN_PREFIX + "rowno"
        # Partition and offset (Titian's record id): stable when Spark re-executes a task.
        row_id = F.monotonically_increasing_id() if self.enabled else F.lit(0).cast("long")
        tracked = df.withColumn(rowno, row_id)
        tracked = tracked.withColumn(ID, self._node_id(key, F.col(rowno)))
        spec = SourceSpec(key=key, relation=relation, attributes=chosen(df.columns, values))
        return TrackedFrame(self, tracked, spec, {"rowno": F.col(rowno)})

    def module(self, name: str) -> Invocation:
        """``with prov.module("dealer1") as m:`` -- one invocation of module ``name``."""
        return Invocation(self, name, next(self._keys))

    def _publish_module(self, invocation: Invocation) -> None:
        if not self.enabled:
            return
        node = NodeColumns(
            "MODULE", [invocation.node_id], label=invocation.name, split=self.split_for()
        )
        self._publish(encode_batch(self.run_id, self.workflow, invocation.key, -1, 0, [node], None))
        self._counts.add({(invocation.key, -1): (1, 0)})

    def split_for(self, relation: str = "") -> tuple[str, ...]:
        """The split path of nodes built here, now: ``splits[relation]`` if given; else the
        open module's split (``splits[module]``, default ``(module,)``; outside modules
        ``("main",)``) with the relation, if any, as its sub-split."""
        if relation in self._splits:
            return self._splits[relation]
        module = self._modules[-1] if self._modules else ""
        base = self._splits.get(module, (module or MAIN_SPLIT,))
        if relation and len(base) < MAX_SPLIT_DEPTH:
            return (*base, relation)
        return base

    def _next_key(self, prefix: str) -> str:
        return f"{prefix}#{next(self._keys)}"

    def _node_id(self, key: str, *cols: Column) -> Column:
        from pyspark.sql import functions as F

        if not self.enabled:
            return F.lit(0).cast("long")
        return F.xxhash64(F.lit(self.run_id), F.lit(key), *cols)

    @staticmethod
    def _null_safe_ids(
        df: DataFrame, inputs: dict[str, Column], names: Sequence[str]
    ) -> list[Column]:
        """The tap's input columns, aliased to their names, with every id column that Spark
        says may be null (``names`` are the id columns) replaced by the column with nulls as 0
        and, beside it, its null flag (capture_agent.taps.null_flag): Arrow hands a nullable
        int64 column to pandas as float64, which would round the ids."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import ArrayType, LongType

        fields = [column.alias(name) for name, column in inputs.items()]
        ids = [name for name in names if name in inputs]
        if not ids:
            return fields
        schema = df.select(*[inputs[name].alias(name) for name in ids]).schema
        for name, struct_field in zip(ids, schema.fields, strict=True):
            if not struct_field.nullable or isinstance(struct_field.dataType, ArrayType):
                continue  # arrays of ids: checked element-wise where they are read
            if not isinstance(struct_field.dataType, LongType):
                raise TypeError(
                    f"id column {name} is {struct_field.dataType.simpleString()}, not bigint"
                )
            column = inputs[name]
            fields[list(inputs).index(name)] = F.coalesce(column, F.lit(0).cast("long")).alias(name)
            fields.append(column.isNull().alias(null_flag(name)))
        return fields

    def _apply_tap(
        self,
        df: DataFrame,
        spec: TapSpec,
        hidden: dict[str, Any],
        split: tuple[str, ...] | None = None,
    ) -> DataFrame:
        from pyspark.sql import functions as F

        if not self.enabled:
            return df
        inputs: dict[str, Column] = {}
        for name in spec.hidden_inputs():
            column = hidden.get(name, F.col(ID) if name == "id" else None)
            if column is None:
                raise AssertionError(f"tap {spec.key} lacks input column {name}")
            inputs[name] = column
        fields = self._null_safe_ids(df, inputs, spec.id_inputs())
        # A join may leave two visible columns of one name: rename them apart for the tap only.
        original = df.columns
        visible = [c for c in original if not c.startswith(HIDDEN_PREFIX)]
        renamed = len(set(visible)) != len(visible)
        if renamed:
            numbered = iter(unique_names(visible))
            df = df.toDF(*[c if c.startswith(HIDDEN_PREFIX) else next(numbered) for c in original])
        for i, name in enumerate(spec.attributes):
            fields.append(F.col(f"`{name}`").cast("string").alias(f"a{i}"))
        path = self.split_for(spec.relation) if split is None else split
        tap = make_tap(spec, self._ctx, path)
        tapped = df.filter(tap(F.struct(*fields)))
        return tapped.toDF(*original) if renamed else tapped
