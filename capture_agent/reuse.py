"""Sink reuse: a run stores each sink's result and reuses an equivalent one stored before.

With ``ProvenanceSession(..., reuse=True)`` every ``.named(sink)`` goes through
:meth:`ResultReuse.sink`:

- The sink's canonical sub-DAG (sparkprov.workflow) and the fingerprint of every source it
  reads (a content hash: row count and the sum of two 64-bit hashes of each row, one Spark
  aggregation per source and run) are the key. Stored results with the same key are looked up in
  the results path (capture_agent.result_manifest): one is reused if its sub-DAG is identical
  (the same canonical id) or proven equivalent by Drove's check (sparkprov.equivalence,
  bag semantics): never on "unknown" or "not equivalent". Its schema must be the sink's, its
  files and checksums the manifest's; otherwise it is skipped with a log line and the sink is
  computed.
- A reused sink is not computed: the session reads the stored parquet, whose rows carry the
  earlier run's node ids, and gives each row a PLUS node of this run (the sink's name and the
  row's values) whose one parent is the earlier run's node of that row. Traces from the new
  rows reach the earlier run's sources with every strategy (an ordinary edge, across runs, as
  module state tokens have). The run-complete marker lists the reuse; ingest stores
  ``(:Run)-[:REUSES {sink, version}]->(:Run)``.
- Otherwise the sink is computed once, written as parquet with its node ids (the capture points
  run during the write) and the session hands back a frame over that parquet. Its manifest is
  written when the run finishes without error; a failed run's data is removed.

Sinks that read anything but tracked sources (module state) or have duplicate column names are
neither stored nor reused.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from capture_agent import result_manifest as manifest
from capture_agent.frame import TrackedFrame, fresh, materialize
from capture_agent.result_manifest import StoredResult
from capture_agent.taps import ID, PlusSpec
from sparkprov.events import ReusedResult
from sparkprov.workflow import Operator, WorkflowDag

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from capture_agent.context import CaptureContext

__all__ = ["ResultReuse", "fingerprint", "sub_dag"]

log = logging.getLogger(__name__)


def sub_dag(dag: WorkflowDag, relation: str) -> tuple[WorkflowDag, Operator] | None:
    """The sink's sub-DAG (its operators and their ancestors, the sink as its one sink)."""
    sink = dag.sink(relation)
    if sink is None:
        return None
    keep = dag.ancestors(sink.id)
    ops = tuple(o for o in dag.operators if o.id in keep)
    return WorkflowDag(ops, ((relation, sink.id),)), sink


def fingerprint(df: DataFrame) -> str:
    """A content hash of a relation, as a bag: its schema, row count and the sums of two
    independent 64-bit hashes of every row (null flags included, so (null, 1) is not (1, null))."""
    import hashlib

    from pyspark.sql import functions as F

    columns = [F.col(f"`{c}`") for c in df.columns]
    flags = [c.isNull() for c in columns]
    row = F.xxhash64(*columns, *flags).cast("decimal(38,0)")
    other = F.xxhash64(F.lit("sparkprov"), *flags, *columns).cast("decimal(38,0)")
    count, first, second = df.agg(F.count(F.lit(1)), F.sum(row), F.sum(other)).first()  # type: ignore[misc]
    text = f"{df.schema.simpleString()}|{count}|{first}|{second}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass
class _Pending:
    """A result written by this run, committed (its manifest written) when the run succeeds."""

    entry: Path
    result: StoredResult


class ResultReuse:
    """One run's side of sink reuse: its sources, what it stored and what it reused."""

    def __init__(self, spark: SparkSession, ctx: CaptureContext, root: Path) -> None:
        self._spark = spark
        self._ctx = ctx
        self.root = root
        self._sources: dict[str, list[DataFrame]] = {}
        self._fingerprints: dict[str, str] = {}
        self._pending: list[_Pending] = []
        self.reuses: list[ReusedResult] = []
        self.reused: dict[str, StoredResult] = {}  # sink -> the stored result it reused
        self.stored: dict[str, StoredResult] = {}  # sink -> what this run stored (pending)

    def register_source(self, relation: str, df: DataFrame) -> None:
        """The plain DataFrame a tracked source reads (fingerprinted when a sink needs it)."""
        self._sources.setdefault(relation, []).append(df)
        self._fingerprints.pop(relation, None)

    def _fingerprint(self, relation: str) -> str:
        if relation not in self._fingerprints:
            parts = [fingerprint(df) for df in self._sources[relation]]
            self._fingerprints[relation] = "+".join(parts)
        return self._fingerprints[relation]

    def sink(self, frame: TrackedFrame, relation: str, attributes: tuple[str, ...]) -> TrackedFrame:
        """The named frame, reused from an equivalent stored result or computed and stored;
        ``attributes`` are the values its nodes keep."""
        found = sub_dag(self._ctx.dag.dag(), relation)
        if found is None:
            return frame
        dag, op = found
        leaves = [o for o in dag.operators if not o.inputs]
        other = sorted({o.kind for o in leaves if o.kind != "source"})
        unknown = [o.param("relation") for o in leaves if o.param("relation") not in self._sources]
        if other or unknown or len(set(frame.columns)) != len(frame.columns):
            log.info(
                "sink %s is not stored for reuse: it reads %s or repeats a column name",
                relation,
                other or unknown or "nothing untracked",
            )
            return frame
        sources = {o.param("relation"): self._fingerprint(o.param("relation")) for o in leaves}
        schema = tuple(frame.visible_schema())
        for entry, stored in manifest.candidates(self.root, self._ctx.workflow, relation):
            df = self._try_reuse(entry, stored, dag, op, sources, schema, relation)
            if df is not None:
                reused = _linked(self._ctx, df, relation, attributes)
                reused.dag_node = frame.dag_node
                return reused
        return self._store(frame, relation, dag, op, sources, schema)

    def _try_reuse(
        self,
        entry: Path,
        stored: StoredResult,
        dag: WorkflowDag,
        op: Operator,
        sources: dict[str, str],
        schema: tuple[tuple[str, str], ...],
        relation: str,
    ) -> DataFrame | None:
        if stored.sources != sources:
            return None  # other input data: never the same result
        if stored.schema != schema:
            # Another projection is another result; the same sub-DAG with another schema is a
            # manifest that was changed or a Spark that types otherwise: said, never reused.
            if stored.version == op.id:
                log.warning("stored result %s has another schema: recomputing %s", entry, relation)
            return None
        if stored.version != op.id and not _proven_equivalent(stored, dag, op, relation):
            return None
        reason = manifest.damage(entry, stored)
        if reason is not None:
            log.warning("stored result %s is damaged (%s): recomputing %s", entry, reason, relation)
            return None
        df = self._read(entry / stored.data, schema)
        if df is None:
            log.warning("stored result %s does not read as its schema: recomputing", entry)
            return None
        log.info("sink %s reused from run %s (%s)", relation, stored.run_id, entry)
        self.reuses.append(ReusedResult(relation, stored.version, stored.run_id))
        self.reused[relation] = stored
        return df

    def _read(self, folder: Path, schema: tuple[tuple[str, str], ...]) -> DataFrame | None:
        try:
            df = self._spark.read.parquet(str(folder))
        except Exception as e:  # Spark's AnalysisException or a footer error
            log.debug("reading %s failed: %s", folder, e)
            return None
        read = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
        if read != [*schema, (ID, "bigint")]:
            return None
        result: DataFrame = df
        return result

    def _store(
        self,
        frame: TrackedFrame,
        relation: str,
        dag: WorkflowDag,
        op: Operator,
        sources: dict[str, str],
        schema: tuple[tuple[str, str], ...],
    ) -> TrackedFrame:
        entry = manifest.entry_dir(self.root, self._ctx.workflow, relation, op.id, sources)
        data = f"data-{self._ctx.run_id}"
        folder = entry / data
        entry.mkdir(parents=True, exist_ok=True)
        # The capture points of the sink run here, once: the frame handed back reads the files.
        materialize(frame).write.mode("overwrite").parquet(str(folder))
        stored = StoredResult(
            workflow=self._ctx.workflow,
            sink=relation,
            version=op.id,
            run_id=self._ctx.run_id,
            rows=manifest.parquet_rows(folder),
            schema=schema,
            sources=sources,
            dag=dag.to_json(),
            data=data,
            files=manifest.file_digests(folder),
        )
        self._pending.append(_Pending(entry, stored))
        self.stored[relation] = stored
        out = TrackedFrame(self._ctx, self._spark.read.parquet(str(folder)))
        out.dag_node = frame.dag_node
        return out

    def finish(self, succeeded: bool) -> None:
        """Commits what this run stored (manifests written) if it succeeded, else removes it."""
        for pending in self._pending:
            if not succeeded:
                manifest.remove(pending.entry / pending.result.data)
                continue
            stored = replace(pending.result, created_unix_ms=int(time.time() * 1000))
            previous = _readable(pending.entry)
            manifest.write_manifest(pending.entry, stored)
            if previous is not None and previous.data != stored.data:
                manifest.remove(pending.entry / previous.data)
        self._pending.clear()


def _readable(entry: Path) -> StoredResult | None:
    try:
        return StoredResult.from_json((entry / manifest.MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def _proven_equivalent(stored: StoredResult, dag: WorkflowDag, op: Operator, relation: str) -> bool:
    """Drove's check (sparkprov.equivalence): True only on a proof of equivalence."""
    from sparkprov.equivalence import Verdict, check

    try:
        before = stored.sub_dag()
        sink = before.sink(relation)
        if sink is None:
            return False
        started = time.perf_counter()
        answer = check(before, dag, sink, op)
    except Exception as e:  # a check that fails is no proof
        log.warning("equivalence check of %s against run %s failed: %s", relation, stored.run_id, e)
        return False
    log.info(
        "sink %s vs run %s's: %s in %.1f ms (%s)",
        relation,
        stored.run_id,
        answer.verdict.value,
        (time.perf_counter() - started) * 1000,
        answer.reason,
    )
    return answer.verdict == Verdict.EQUIVALENT


def _linked(
    ctx: CaptureContext, df: DataFrame, relation: str, attributes: tuple[str, ...]
) -> TrackedFrame:
    """The stored rows as this run's sink: a PLUS node per row, child of the stored node id."""
    key = ctx.next_key(f"reused:{relation}")
    spec = PlusSpec(key=key, relation=relation, attributes=attributes)
    return fresh(TrackedFrame(ctx, df), df, spec)
