"""The JVM taps: capture points that run inside Spark's executors, with no Python worker.

A capture point is a non-deterministic, always-true filter whose function is
``io.sparkprov.capture.Tap`` (capture_jar/, a Maven module built by ``make setup`` into
``capture_agent/jars/sparkprov-capture.jar``). It copies each row's lineage columns into primitive
buffers and hands every ``rows_per_message`` rows, as one LineageEvent, to one Kafka producer per
executor JVM (Kafka's own Java client, acks=all, idempotent); a task succeeds only once all its
messages are acknowledged, and its counts go to a JVM accumulator the session reads.

What a tap emits is the same as the Python taps' (``capture_agent.taps``): the Python side turns
a spec into a :class:`TapPlan` (the contract, a TypedDict here and the Java record ``TapPlan``),
the JVM side runs it. The salts of derived ids are computed here, so both sides share
``sparkprov.derived``'s one definition.

Loading: :class:`JvmTaps` makes the jar available to a running SparkContext (a class loader of
its own on the driver, once per JVM, and ``SparkContext.addJar`` for the executors of each
context), checks the Spark version and the jar's protocol, and runs a one-row probe job per
context, so that executors that cannot load the jar fail the session at its start. On a
cluster, the jar may instead be shipped with ``spark.jars`` (or ``--jars``): it is then found on
the classpath and not added again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from capture_agent.errors import UnsupportedOperation
from capture_agent.settings import ENV_CAPTURE_JAR
from capture_agent.taps import (
    AntiJoinSpec,
    BlackBoxGroupSpec,
    BlackBoxSpec,
    ExplodeSpec,
    GroupSpec,
    JoinSpec,
    MemberSpec,
    ModuleRowSpec,
    PlusSpec,
    SemiJoinSpec,
    SourceSpec,
    StateSpec,
    TapContext,
    TapSpec,
    WindowRowSpec,
    salt_of,
)
from sparkprov import defaults, limits

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from capture_agent.publisher import PublisherConfig

__all__ = [
    "ENV_JAR",
    "PROTOCOL",
    "SUPPORTED_SPARK",
    "class_name",
    "JvmList",
    "JvmTaps",
    "TapPlan",
    "jar_path",
    "plan_of",
]

ENV_JAR = ENV_CAPTURE_JAR  # read by capture_agent.settings
_ITEMS_PER_CALL = 8  # JvmList.of: elements per py4j call
PROTOCOL = 11  # io.sparkprov.capture.Taps.PROTOCOL of the jar this module speaks to
# The pyspark versions (major, minor) the JVM taps are built and tested for, inclusive.
SUPPORTED_SPARK = ((4, 0), (4, 3))
_CLASS = "io.sparkprov.capture.Taps"
_COLUMNS_PER_CALL = 8  # the Column parameters of Taps.columns


class TapPlan(TypedDict):
    """What one capture point emits; the JSON the Java record ``TapPlan`` parses."""

    kind: str
    key: str
    run_id: str
    workflow: str
    relation: str
    attributes: list[str]
    inputs: list[str]  # the tap's input columns, in struct order; attributes follow
    input_types: list[str]  # "id", "ids", "text" or "flag", per input
    split: list[str]
    label: str
    module: int
    functions: list[str]
    group_key: str
    delta: bool
    aggregates: int
    salts: list[int]  # signed 64-bit, as Java's long
    origins: list[str]  # join, members: the source keys whose TOKEN ids the inputs hold, or ""
    pair_key: str  # members of a join's rows: that join's key
    rows_per_message: int
    max_text_bytes: int
    values_read: bool  # keep only the attributes the query reads after the tap (values="read")
    # a member tap's aggregates sharing inputs: per aggregate, its value input x<k>; [] for x<i>
    value_of: list[int]


# Exact types: BlackBoxSpec is a PlusSpec.
_KINDS: dict[type[TapSpec], str] = {
    SourceSpec: "source",
    PlusSpec: "plus",
    BlackBoxSpec: "black_box",
    BlackBoxGroupSpec: "black_box_group",
    JoinSpec: "join",
    SemiJoinSpec: "semi_join",
    AntiJoinSpec: "anti_join",
    ExplodeSpec: "explode",
    ModuleRowSpec: "module_row",
    StateSpec: "state",
    MemberSpec: "member",
    WindowRowSpec: "window_row",
    GroupSpec: "group",
}


def _signed(salt: np.uint64) -> int:
    return int(np.array([salt], dtype=np.uint64).view(np.int64)[0])


def _input_type(name: str) -> str:
    if name in ("members", "witnesses"):
        return "ids"
    if name == "first":
        return "flag"
    if name == "element" or (name[0] == "x" and name[1:].isdigit()):
        return "text"
    return "id"


def plan_of(spec: TapSpec, ctx: TapContext, split: tuple[str, ...]) -> TapPlan:
    """The JVM tap's plan for ``spec``: the same nodes and edges as ``spec.wire``."""
    kind = _KINDS.get(type(spec))
    if kind is None:
        raise UnsupportedOperation(f"capture point {type(spec).__name__} on the JVM")
    if isinstance(spec, MemberSpec) and spec.join_rows:
        kind = "join_member"  # the join's TIMES rows travel with its members
    functions = list(getattr(spec, "functions", ()))
    if isinstance(spec, GroupSpec):
        salts = [salt_of(spec.key, i, "aggregate") for i in range(len(functions))]
    elif isinstance(spec, WindowRowSpec):
        salts = [salt_of(spec.group_key, i, "aggregate") for i in range(len(functions))]
    elif isinstance(spec, SemiJoinSpec):
        salts = [salt_of(spec.key, "plus")]
    else:
        salts = []
    inputs = list(spec.hidden_inputs())
    return TapPlan(
        kind=kind,
        key=spec.key,
        run_id=ctx.run_id,
        workflow=ctx.workflow,
        relation=spec.relation,
        attributes=list(spec.attributes),
        inputs=inputs,
        input_types=[_input_type(name) for name in inputs],
        split=list(split),
        label=str(getattr(spec, "label", "")),
        module=int(getattr(spec, "module", 0)),
        functions=functions,
        group_key=str(getattr(spec, "group_key", "")),
        delta=bool(getattr(spec, "delta", False)),
        aggregates=int(getattr(spec, "aggregates", 0)),
        salts=[_signed(s) for s in salts],
        origins=list(getattr(spec, "origins", ())),
        pair_key=str(getattr(spec, "pair_key", "")),
        rows_per_message=ctx.rows_per_message,
        max_text_bytes=limits.MAX_TEXT_BYTES,
        values_read=spec.values_read,
        value_of=list(getattr(spec, "value_of", ())),
    )


def jar_path(given: str = "") -> Path:
    """The capture jar: ``given`` (``CaptureSettings.capture_jar``, from
    ``SPARKPROV_CAPTURE_JAR``), else the one ``make setup`` builds."""
    path = Path(given) if given else Path(__file__).parent / "jars" / "sparkprov-capture.jar"
    if not path.is_file():
        raise RuntimeError(
            f"the sparkprov capture jar is missing at {path}: run `make setup` (it builds "
            f"capture_jar/), or set {ENV_JAR} to the jar's path"
        )
    return path


def check_spark_version(version: str) -> None:
    """Refuses a Spark the JVM taps are not built for, naming the supported versions."""
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        raise RuntimeError(f"cannot read the Spark version {version!r}") from None
    low, high = SUPPORTED_SPARK
    if not low <= (major, minor) <= high:
        raise RuntimeError(
            f"sparkprov's JVM capture supports Spark {low[0]}.{low[1]} to {high[0]}.{high[1]}; "
            f"this job runs Spark {version}: install a supported pyspark, or capture with the "
            "Python taps (ProvenanceSession(..., capture='python'))"
        )


def kafka_settings(config: PublisherConfig) -> dict[str, str]:
    """The Java producer's settings for ``config``, with the same bounds as the Python
    producer's (capture_agent.publisher): every wait ends after ``timeout_s``."""
    from capture_agent.publisher import producer_bounds

    linger_ms = defaults.KAFKA_LINGER_MS
    bound_ms, request_ms, delivery_ms = producer_bounds(config, linger_ms)
    settings = {
        "bootstrap.servers": config.bootstrap,
        "acks": "all",
        "enable.idempotence": "true",
        "linger.ms": str(linger_ms),
        "batch.size": str(1024 * 1024),
        "max.request.size": str(config.max_message_bytes),
        "max.block.ms": str(bound_ms),
        "request.timeout.ms": str(request_ms),
        "delivery.timeout.ms": str(delivery_ms),
        "compression.type": config.compression,
    }
    if config.compression == "zstd":
        settings["compression.zstd.level"] = str(defaults.KAFKA_ZSTD_LEVEL)
    settings.update(config.security.as_java_settings())
    return settings


class JvmList(Sequence[Any]):
    """A java.util.List of JVM objects (a plan's attributes, expressions) held by the JVM: its
    size, slices and concatenations cost one py4j call each, and its elements come over only
    when Python reads them (one call each; a proxy is one more to free). Plan capture passes
    whole attribute lists to the JVM for every expression it moves onto a rebuilt child."""

    def __init__(self, taps: Any, java: Any, items: list[Any] | None = None) -> None:
        self._taps = taps
        self.java = java
        self._items = items
        self._size = len(items) if items is not None else None

    @classmethod
    def of(cls, taps: Any, items: list[Any]) -> JvmList:
        """Python's proxies as a list the JVM holds (io.sparkprov.capture.Taps.listOf: eight
        elements per call)."""
        java = None
        for start in range(0, max(len(items), 1), _ITEMS_PER_CALL):
            chunk = items[start : start + _ITEMS_PER_CALL]
            java = taps.listOf(java, *chunk, *([None] * (_ITEMS_PER_CALL - len(chunk))), len(chunk))
        return cls(taps, java, items)

    def __len__(self) -> int:
        if self._size is None:
            self._size = int(self.java.size())
        return self._size

    def _all(self) -> list[Any]:
        if self._items is None:
            # By index: py4j's iterator ends on a Java exception, which PySpark converts slowly.
            self._items = [self.java.get(i) for i in range(len(self))]
        return self._items

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return self._all()[index]
            items = None if self._items is None else self._items[start:stop]
            return JvmList(self._taps, self._taps.slice(self.java, start, max(start, stop)), items)
        return self._all()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._all())

    def __add__(self, other: Sequence[Any]) -> JvmList:
        right = other if isinstance(other, JvmList) else JvmList.of(self._taps, list(other))
        items = (
            None if self._items is None or right._items is None else [*self._items, *right._items]
        )
        return JvmList(self._taps, self._taps.concat(self.java, right.java), items)


def class_name(obj: Any) -> str:
    """A JVM object's class's simple name (Catalyst's node kinds): one py4j call through the
    capture jar once it is loaded, else two (and a Class proxy to free)."""
    loaded = JvmTaps._facade_of_jvm
    if loaded is not None:
        return str(loaded[0].kind(obj))
    return str(obj.getClass().getSimpleName())


class JvmTaps:
    """The JVM taps of one SparkContext: the jar loaded on the driver and the executors."""

    # The Taps facade, one per driver JVM: its classes are loaded once, by one class loader (py4j
    # caches methods by class name, so a second copy of the classes would not be callable).
    _facade_of_jvm: Any = None
    # SparkContexts, by (application id, start time), whose executors have the jar and passed
    # the probe. Not id() of the Python object: a SparkContext created after another was stopped
    # may get a freed object's id.
    _prepared: set[tuple[str, int]] = set()
    _lock = threading.Lock()

    def __init__(self, spark: SparkSession, jar: str = "") -> None:
        """``jar``: the capture jar's path where the job did not ship it (:func:`jar_path`)."""
        self.spark = spark
        self._taps = self._facade(spark, jar)
        self._empty: JvmList | None = None  # an empty java.util.List, made on first use
        # The session's optimizer (once per session): values="read" (capture_agent.frame.chosen)
        # drops the values the query does not read from the taps, and so from the scans; a
        # filter over a source runs before the source's tap (capture's SourceFiltersFirst).
        self._taps.installRules(spark._jsparkSession)

    @classmethod
    def _facade(cls, spark: SparkSession, jar: str) -> Any:
        import pyspark

        sc = spark.sparkContext
        key = (str(sc.applicationId), int(sc.startTime))
        with cls._lock:
            if cls._facade_of_jvm is None:
                check_spark_version(pyspark.__version__)
                taps, shipped = _load(spark, jar)
                protocol = int(taps.protocol())
                if protocol != PROTOCOL:
                    raise RuntimeError(
                        f"the capture jar speaks tap protocol {protocol}, this capture agent "
                        f"{PROTOCOL}: rebuild it with `make setup`"
                    )
                cls._facade_of_jvm = (taps, shipped)
            taps, shipped = cls._facade_of_jvm
            if key not in cls._prepared:
                if not shipped:  # the executors of this context get the jar from the driver
                    sc._jsc.addJar(str(jar_path(jar)))
                _probe(spark, taps)
                cls._prepared.add(key)
            return taps

    def protocol(self) -> int:
        """The tap protocol of the loaded jar."""
        return int(self._taps.protocol())

    def rebound(self, expression: Any, old: Sequence[Any], new: Sequence[Any]) -> Column:
        """A plan's (JVM) expression as a Column, its references to the attributes ``old`` moved
        onto ``new`` (io.sparkprov.capture.Rebind): capture_agent.plan_capture."""
        from pyspark.sql import Column

        if len(old) != len(new):
            raise ValueError(f"rebinding {len(old)} attributes onto {len(new)}")
        return Column(self._taps.rebound(expression, self._java(old), self._java(new)))

    def stray_subquery(self, expression: Any, joined: Sequence[Any]) -> str | None:
        """The kind of the first subquery expression in ``expression`` other than the scalar
        subqueries among ``joined``, or None (io.sparkprov.capture.Rebind)."""
        kind = self._taps.straySubquery(expression, self._java(joined))
        return None if kind is None else str(kind)

    def visible_attributes(self, df: DataFrame, hidden_prefix: str) -> JvmList:
        """The JVM attributes of ``df``'s columns not named from ``hidden_prefix``, in order."""
        return JvmList(self._taps, self._taps.visibleAttributes(df._jdf, hidden_prefix))

    def output(self, plan: Any) -> JvmList:
        """A logical plan's output attributes, in order."""
        return JvmList(self._taps, self._taps.output(plan))

    def scalar_subqueries(self, expressions: Sequence[Any]) -> JvmList:
        """The distinct scalar subqueries of ``expressions`` (JVM expressions), in the order a
        pre-order walk meets them (io.sparkprov.capture.PlanNames)."""
        return JvmList(self._taps, self._taps.scalarSubqueries(self._java(expressions)))

    def plan_names(self, analyzed: Any) -> Any:
        """The names the analyzed plan's leaves were read through: ``.of(leaf)`` gives a leaf's
        (a str or None; io.sparkprov.capture.PlanNames)."""
        return self._taps.planNames(analyzed)

    def kind(self, obj: Any) -> str:
        """A JVM object's class's simple name, in one round trip."""
        return str(self._taps.kind(obj))

    def index_of_attribute(self, attributes: Sequence[Any], attribute: Any) -> int:
        """The position in ``attributes`` of the attribute with ``attribute``'s expression id,
        or -1 (also when ``attribute`` is no attribute)."""
        return int(self._taps.indexOfAttribute(self._java(attributes), attribute))

    def select(self, df: DataFrame, items: Sequence[Column | str]) -> DataFrame:
        """``df.select(*items)`` in a call per eight Columns and one for all the names (PySpark
        makes a call or two per name and per list element)."""
        from pyspark.sql import Column, DataFrame

        names = [c for c in items if isinstance(c, str)]
        if any("\0" in n for n in names):
            return df.select(*items)
        columns = [c for c in items if isinstance(c, Column)]
        layout = "".join("n" if isinstance(c, str) else "c" for c in items)
        jdf = self._taps.select(df._jdf, self._columns(columns), "\0".join(names), layout)
        return DataFrame(jdf, df.sparkSession)

    def col(self, name: str) -> Column:
        """``functions.col(name)`` in one call (PySpark looks ``functions`` up in another)."""
        from pyspark.sql import Column

        return Column(self._taps.col(name))

    def jvm_list(self, objects: Sequence[Any]) -> JvmList:
        """``objects`` (py4j proxies) as a list the JVM holds: a :class:`JvmList` as it is, else
        made in a call per eight elements (the empty list once)."""
        if isinstance(objects, JvmList):
            return objects
        if not objects:
            if self._empty is None:
                self._empty = JvmList.of(self._taps, [])
            return self._empty
        return JvmList.of(self._taps, list(objects))

    def _java(self, objects: Sequence[Any]) -> Any:
        return self.jvm_list(objects).java

    def counts(self) -> Any:
        """A fresh counts accumulator (io.sparkprov.capture.Counts) for one run."""
        return self._taps.counts(self.spark.sparkContext._jsc.sc())

    def kafka_sink(self, config: PublisherConfig) -> Any:
        jvm: Any = self.spark.sparkContext._jvm
        settings = jvm.java.util.HashMap()
        for name, value in kafka_settings(config).items():
            settings.put(name, value)
        return self._taps.kafka(config.topic, settings, int(config.timeout_s * 1000))

    def discard_sink(self, stop_after: str = "ENCODE") -> Any:
        """A sink that drops every message (profiles: bench/capture_profile_jvm.py); the taps
        stop after ``stop_after``: CALL, COPY, EMIT or ENCODE (io.sparkprov.capture.DiscardSink)."""
        return self._taps.discard(stop_after)

    def memory_sink(self) -> Any:
        return self._taps.memory(self.spark.sparkContext._jsc.sc())

    def _columns(self, cols: Sequence[Column]) -> Any:
        """``cols`` as a Java ``Column[]``: one py4j call per eight columns (a py4j array
        makes two per element)."""
        from pyspark.sql.classic.column import _to_java_column

        java = [_to_java_column(c) for c in cols]
        columns = None
        for start in range(0, max(len(java), 1), _COLUMNS_PER_CALL):
            chunk = java[start : start + _COLUMNS_PER_CALL]
            padding = [None] * (_COLUMNS_PER_CALL - len(chunk))
            columns = self._taps.columns(columns, *chunk, *padding)
        return columns

    def projection_facts(self, before: Any, after: Any) -> dict[str, Any]:
        """What a projection's analyzed plan ``after`` adds over ``before``: ``{"added": {node
        kind: count}, "udfs": [Python UDF names]}`` (io.sparkprov.capture.PlanFacts; the
        reference is capture_agent.plans)."""
        import json

        from capture_agent.taps import TAP_PREFIX

        return dict(json.loads(str(self._taps.projectionFacts(before, after, TAP_PREFIX))))

    def visible_then_id(self, df: DataFrame) -> DataFrame:
        """``df``'s visible columns in order, then its id column, other hidden columns left out,
        in one py4j call (capture_agent.frame.visible_then_id is the reference)."""
        from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

        from capture_agent.taps import HIDDEN_PREFIX, ID

        return ClassicFrame(self._taps.visibleThenId(df._jdf, ID, HIDDEN_PREFIX), df.sparkSession)

    def projection_sql(self, df: DataFrame, cols: Sequence[Column]) -> dict[str, Any]:
        """Each column's analyzed SQL over ``df`` (capture_agent.workflow_dag.expression_sql)
        and the indexes of those that call a Python UDF: ``{"sql": [...], "udf_columns":
        [...]}``, in one call (io.sparkprov.capture.PlanFacts)."""
        import json

        return dict(json.loads(str(self._taps.projectionSql(df._jdf, self._columns(cols)))))

    def node_id(self, run_id: str, key: str, cols: Sequence[Column]) -> Column:
        """``xxhash64(lit(run_id), lit(key), *cols)``, with the two constants hashed once, on
        the driver, into the seed of ``xxhash64(*cols)`` (io.sparkprov.capture.NodeIds)."""
        from pyspark.sql.classic.column import Column

        return Column(self._taps.nodeId(run_id, key, self._columns(cols)))

    def token_mask(self, run_id: str, key: str) -> int:
        """``xxhash64(run_id, key)``, a source's TOKEN id mask, computed on the driver."""
        return int(self._taps.tokenMask(run_id, key))

    def source_position(self, path: Column, row_index: Column, files: Sequence[str]) -> Column:
        """A file row's physical position: its file's ordinal in ``files`` (sorted) above its row
        index (io.sparkprov.capture.SourcePosition; capture_agent.sources)."""
        from pyspark.sql.classic.column import Column, _to_java_column

        joined = "\0".join(files)
        return Column(
            self._taps.sourcePosition(_to_java_column(path), _to_java_column(row_index), joined)
        )

    def sorted_input_files(self, jdf: Any) -> tuple[str, ...]:
        """A (JVM) Dataset's input files in Java's order, in one py4j call."""
        joined = str(self._taps.sortedInputFiles(jdf))
        return tuple(joined.split("\0")) if joined else ()

    def column(self, plan: TapPlan, sink: Any, counts: Any, inputs: Sequence[Column]) -> Column:
        """The tap as a boolean column over ``inputs`` (always true): the plan's inputs, then its
        attributes, in order; a Catalyst expression of the jar
        (io.sparkprov.capture.TapExpression), fused into whole-stage codegen. Kept values of a
        numeric column are taken as numbers (never cast to text in the job), others as text."""
        import json

        from pyspark.sql.classic.column import Column

        return Column(self._taps.column(json.dumps(plan), sink, counts, self._columns(inputs)))


def _load(spark: SparkSession, jar: str) -> tuple[Any, bool]:
    """The jar's ``Taps`` facade, and whether the job shipped the jar itself (``spark.jars``,
    ``--jars``: then its classes are on the driver's classpath). Otherwise the driver loads them
    from the jar with a class loader of their own, and each SparkContext adds the jar for its
    executors (:meth:`JvmTaps._facade`)."""
    jvm: Any = spark.sparkContext._jvm
    gateway: Any = spark.sparkContext._gateway
    context = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
    try:
        cls = jvm.java.lang.Class.forName(_CLASS, True, context)
        shipped = True
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException
        urls = gateway.new_array(jvm.java.net.URL, 1)
        urls[0] = jvm.java.io.File(str(jar_path(jar))).toURI().toURL()
        loader = jvm.java.net.URLClassLoader(urls, context)
        cls = jvm.java.lang.Class.forName(_CLASS, True, loader)
        shipped = False
    no_types = gateway.new_array(jvm.java.lang.Class, 0)
    no_args = gateway.new_array(jvm.java.lang.Object, 0)
    return cls.getDeclaredConstructor(no_types).newInstance(no_args), shipped


def _probe(spark: SparkSession, taps: Any) -> None:
    """Runs the jar's probe UDF in a one-row job: executors that cannot load it fail here."""
    from pyspark.sql.classic.column import Column, _to_java_column, _to_seq

    sc = spark.sparkContext
    probe = taps.probe()
    try:
        rows = (
            spark.range(1, numPartitions=1)
            .select(Column(probe.apply(_to_seq(sc, ["id"], _to_java_column))).alias("p"))
            .collect()
        )
    except Exception as e:
        raise RuntimeError(
            "Spark's executors cannot load the sparkprov capture jar: ship it "
            "with the job (spark.jars / --jars, or spark.jars.packages), or make it readable "
            f"from the executors; the probe job failed with: {str(e).splitlines()[0]}"
        ) from e
    if rows[0]["p"] != PROTOCOL:
        raise RuntimeError(f"the executors' capture jar speaks protocol {rows[0]['p']}")
