"""The capture context: what every operator module of the capture agent uses of a session.

One :class:`CaptureContext` per :class:`~capture_agent.session.ProvenanceSession`: it names the
capture points (:meth:`next_key`), computes node ids as Spark expressions (:meth:`node_id`),
places the capture points that publish a frame's fresh nodes (:meth:`apply_tap`), knows the open
modules and the split paths (CSProv), and holds the emitter (``capture_agent.emitters``) through
which every event leaves. It always captures: under the kill switch the session hands out plain
frames (capture_agent.passthrough) and no operator reaches a context.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from capture_agent.emitters import Emitter
from capture_agent.frame import unique_names
from capture_agent.openlineage import RunDatasets
from capture_agent.taps import HIDDEN_PREFIX, ID, TapContext, TapSpec, make_tap, null_flag
from sparkprov import defaults
from sparkprov.events import MAX_SPLIT_DEPTH, NodeColumns, encode_batch
from sparkprov.limits import check_name, quote
from sparkprov.workflow import DagBuilder

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from capture_agent.jvm import JvmTaps
    from capture_agent.reuse import ResultReuse

__all__ = ["MAIN_SPLIT", "CaptureContext", "split_path"]

MAIN_SPLIT = "main"


def split_path(name: str, path: Sequence[str]) -> tuple[str, ...]:
    """A split path (1 to MAX_SPLIT_DEPTH non-empty names), validated."""
    parts = (path,) if isinstance(path, str) else tuple(path)
    if not 1 <= len(parts) <= MAX_SPLIT_DEPTH or not all(isinstance(p, str) and p for p in parts):
        raise ValueError(
            f"split path of {quote(name)} must be 1 to {MAX_SPLIT_DEPTH} non-empty names, "
            f"got {quote(repr(path))}"
        )
    for part in parts:
        check_name("split", part)
    return parts


class CaptureContext:
    """A session's capture state, shared by the operator modules (frame, grouping, windows,
    set operations, pandas functions, modules). ``tap`` is what capture points carry to the
    executors (run, workflow, emitter, counts)."""

    def __init__(
        self,
        run_id: str,
        workflow: str,
        emitter: Emitter,
        counts: Any,
        *,
        rows_per_message: int = defaults.ROWS_PER_MESSAGE,
        splits: Mapping[str, Sequence[str]] | None = None,
        jvm: JvmTaps | None = None,
        query_address: str = defaults.GRPC_ADDR,
    ) -> None:
        self.run_id = run_id
        self.workflow = workflow
        self.emitter = emitter
        self.tap = TapContext(
            run_id=run_id,
            workflow=workflow,
            emitter=emitter,
            counts=counts,
            rows_per_message=rows_per_message,
        )
        self._keys = itertools.count()
        # Split paths (CSProv): a module or relation name -> its split path (1 to 3 names).
        self.splits = {name: split_path(name, path) for name, path in (splits or {}).items()}
        self.modules: list[str] = []  # the modules whose `with` blocks are open
        # The relations the run read (sources, module state) and named (`.named`, module
        # outputs), and where Spark read or wrote them: its OpenLineage datasets
        # (capture_agent.openlineage).
        self.datasets = RunDatasets(workflow, f"sparkprov://{query_address}")
        # The files of each source whose rows are positioned by file and row index
        # (capture_agent.sources): a TOKEN label's first number is an ordinal in this list.
        self.source_files: dict[str, tuple[str, ...]] = {}
        # Their capture points' TOKEN id masks, where the JVM computed them (for the marker: a
        # row a filter dropped before its tap is not stored, but its id is still told apart).
        self.source_masks: dict[str, list[int]] = {}
        # The run's workflow DAG as its tracked operators build it (capture_agent.workflow_dag).
        self.dag = DagBuilder()
        # The JVM capture points (capture_agent.jvm), or None for the Python ones; their sink
        # and counts are made with the first capture point.
        self.jvm = jvm
        self._jvm_sink: Any = None
        self._jvm_counts: Any = None
        # Sink reuse (capture_agent.reuse), when the session has it on: `.named()` asks it.
        self.reuse: ResultReuse | None = None

    def redirect_capture_points(self, emitter: Emitter) -> None:
        """Capture points placed from now on emit through ``emitter``; the driver's own events
        (markers, MODULE nodes) still go through the session's. For fault drills: executors
        that lose the broker while the driver keeps it."""
        self.tap = replace(self.tap, emitter=emitter)
        if self.jvm is not None:
            self._jvm_sink = emitter.jvm_sink(self.jvm)
            if self._jvm_counts is None:
                self._jvm_counts = self.jvm.counts()

    def jvm_counts(self) -> tuple[int, int]:
        """Nodes and edges the JVM capture points' completed tasks emitted."""
        if self._jvm_counts is None:
            return 0, 0
        nodes, edges = self._jvm_counts.totals()
        return int(nodes), int(edges)

    def publish(self, value: bytes) -> None:
        """Publishes a driver-side event of this run (markers, MODULE nodes) and waits for it."""
        self.emitter.publish(value, key=self.run_id.encode())

    def index(self) -> int:
        """A fresh number for a capture point or module invocation of this run."""
        return next(self._keys)

    def enter_module(self, name: str, key: str, node_id: int) -> None:
        """Opens module invocation ``key`` and publishes its MODULE node."""
        self.modules.append(name)
        node = NodeColumns("MODULE", [node_id], label=name, split=self.split_for())
        self.publish(encode_batch(self.run_id, self.workflow, key, -1, 0, [node], None))
        self.tap.counts.add({(key, -1): (1, 0)})

    def exit_module(self) -> None:
        self.modules.pop()

    def split_for(self, relation: str = "") -> tuple[str, ...]:
        """The split path of nodes built here, now: ``splits[relation]`` if given; else the
        open module's split (``splits[module]``, default ``(module,)``; outside modules
        ``("main",)``) with the relation, if any, as its sub-split."""
        if relation in self.splits:
            return self.splits[relation]
        module = self.modules[-1] if self.modules else ""
        base = self.splits.get(module, (module or MAIN_SPLIT,))
        if relation and len(base) < MAX_SPLIT_DEPTH:
            return (*base, relation)
        return base

    def next_key(self, prefix: str) -> str:
        return f"{prefix}#{self.index()}"

    def node_id(self, key: str, *cols: Column) -> Column:
        from pyspark.sql import functions as F

        if self.jvm is not None:  # the same value, without hashing run and key on every row
            return self.jvm.node_id(self.run_id, key, cols)
        return F.xxhash64(F.lit(self.run_id), F.lit(key), *cols)

    @staticmethod
    def null_safe_ids(
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

    def _tap_inputs(self, spec: TapSpec, hidden: dict[str, Any]) -> dict[str, Column]:
        from pyspark.sql import functions as F

        inputs: dict[str, Column] = {}
        for name in spec.hidden_inputs():
            column = hidden.get(name, F.col(ID) if name == "id" else None)
            if column is None:
                raise AssertionError(f"tap {spec.key} lacks input column {name}")
            inputs[name] = column
        return inputs

    def kept_value(self, value: Column) -> Column:
        """A value a tap keeps (a member's aggregated value): the JVM taps take a number as
        Spark holds it (ingest writes its text: sparkprov/values.py) and cast other types
        themselves; the Python taps get text."""
        return value if self.jvm is not None else value.cast("string")

    def _jvm_tap(self, spec: TapSpec, split: tuple[str, ...], inputs: list[Column]) -> Column:
        """The capture point as a JVM function of its inputs (capture_agent.jvm)."""
        from capture_agent.jvm import plan_of

        assert self.jvm is not None
        if self._jvm_sink is None:
            self._jvm_sink = self.emitter.jvm_sink(self.jvm)
            self._jvm_counts = self.jvm.counts()
        plan = plan_of(spec, self.tap, split)
        return self.jvm.column(plan, self._jvm_sink, self._jvm_counts, inputs)

    def select(self, df: DataFrame, items: list[Column | str]) -> DataFrame:
        """``df.select(*items)``, in fewer py4j calls through the JVM taps where loaded."""
        return df.select(*items) if self.jvm is None else self.jvm.select(df, items)

    def apply_tap(
        self,
        df: DataFrame,
        spec: TapSpec,
        hidden: dict[str, Any],
        split: tuple[str, ...] | None = None,
    ) -> DataFrame:
        """``df`` with the capture point of ``spec`` (an always-true filter) over the inputs
        ``hidden`` names. The JVM capture points take the id columns as they are, nulls
        included; the Python ones get them with null flags (:meth:`null_safe_ids`)."""
        from pyspark.sql import functions as F

        inputs = self._tap_inputs(spec, hidden)
        if self.jvm is not None:
            fields = list(inputs.values())
        else:
            fields = self.null_safe_ids(df, inputs, spec.id_inputs())
        # A join may leave two visible columns of one name: rename them apart for the tap only.
        original = df.columns
        visible = [c for c in original if not c.startswith(HIDDEN_PREFIX)]
        renamed = len(set(visible)) != len(visible)
        if renamed:
            numbered = iter(unique_names(visible))
            df = df.toDF(*[c if c.startswith(HIDDEN_PREFIX) else next(numbered) for c in original])
        for i, name in enumerate(spec.attributes):
            # The JVM taps take a number as it is and cast any other type to text themselves.
            if self.jvm is not None:
                fields.append(self.jvm.col(f"`{name}`"))
            else:
                fields.append(F.col(f"`{name}`").cast("string").alias(f"a{i}"))
        path = self.split_for(spec.relation) if split is None else split
        if self.jvm is not None:
            tap = self._jvm_tap(spec, path, fields)
        else:
            tap = make_tap(spec, self.tap, path)(F.struct(*fields))
        tapped = df.filter(tap)
        return tapped.toDF(*original) if renamed else tapped
