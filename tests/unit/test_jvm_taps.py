"""The JVM capture points (capture_agent.jvm, io.sparkprov.capture) against the Python ones
(capture_agent.taps): for every kind of capture point, the same job captured both ways emits the
same nodes (ids, ops, labels, values, attributes, splits), the same edges and the same counts.
Both emit through the in-memory emitter: no broker. Also the plan contract, the loading checks
and the values policy "read".

Its sessions keep every source column (values="all"): the Python taps, the reference, keep
every column under "read".
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from capture_agent import ProvenanceSession
from capture_agent.emitters import MemoryEmitter
from capture_agent.frame import JOIN_ROWS_WITH_MEMBERS, materialize
from capture_agent.jvm import PROTOCOL, TapPlan, check_spark_version, jar_path, plan_of
from capture_agent.taps import GroupSpec, SemiJoinSpec, TapContext, salt_of
from sparkprov.events import ATTRIBUTE_PREFIX, Batch, RunComplete, decode
from sparkprov.v1 import lineage_pb2
from sparkprov.values import string_column_texts

Job = Callable[[ProvenanceSession, SparkSession], list[Any]]


SPARK_CONF = {
    # The taps are fused into whole-stage codegen (io.sparkprov.capture.TapExpression): code
    # that does not compile must fail the test, not fall back to the interpreted plan.
    "spark.sql.codegen.fallback": "false"
}


def _captured(spark: SparkSession, capture: str, job: Job) -> tuple[list[Any], Any, Any, Any]:
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(
        spark,
        "jvm-taps",
        values="all",
        emitter=emitter,
        capture=capture,
        run_id="same-run",
        rows_per_message=3,
    ) as prov:
        rows = job(prov, spark)
    counts = prov.counts()
    events = [decode(value) for _, value in emitter.messages()]
    (complete,) = [e for e in events if isinstance(e, RunComplete)]
    assert (complete.node_count, complete.edge_count) == counts
    batches = [e for e in events if isinstance(e, Batch)]
    nodes: dict[int, Any] = {}
    edges: Counter[tuple[int, int]] = Counter()
    compact = 0
    for batch in batches:
        compact += sum(len(m.members) for m in batch.members)
        logical = batch.expanded()
        for node in logical.rows():
            nodes[node["id"]] = node
        edges.update(zip(logical.edges["src"], logical.edges["dst"], strict=True))
    return sorted(rows, key=repr), counts, (nodes, edges), compact


def _same_both_ways(spark: SparkSession, job: Job) -> tuple[dict[int, Any], Counter[Any]]:
    """Asserts the same rows, nodes, edges and counts both ways; returns the nodes and edges."""
    py_rows, py_counts, (py_nodes, py_edges), py_compact = _captured(spark, "python", job)
    jvm_rows, jvm_counts, (jvm_nodes, jvm_edges), jvm_compact = _captured(spark, "jvm", job)
    assert jvm_rows == py_rows
    assert py_nodes, "the job emitted nothing: the comparison would be empty"
    # The JVM taps run a filter over a source before its tap (SourceFiltersFirst): the source
    # rows it drops, which reach nothing, are not emitted there. Nothing else differs.
    feeding = {src for src, _ in py_edges}
    dropped = py_nodes.keys() - jvm_nodes.keys()
    assert all(py_nodes[i]["op"] == "TOKEN" and i not in feeding for i in dropped)
    assert jvm_nodes.keys() <= py_nodes.keys()
    for node_id, node in jvm_nodes.items():
        assert node == py_nodes[node_id]
    assert jvm_edges == py_edges
    assert jvm_counts == (py_counts[0] - len(dropped), py_counts[1])
    assert jvm_compact == py_compact
    return jvm_nodes, jvm_edges


PEOPLE = [
    (1, "Steve", 30, "NY"),
    (2, "Mark", 40, "NY"),
    (3, "Ann", None, "LA"),
    (4, "Zé", 50, "XX"),
]
DEPTS = [("NY", "east"), ("LA", "west"), ("SF", "west")]


def _people(prov: ProvenanceSession, spark: SparkSession) -> Any:
    df = spark.createDataFrame(PEOPLE, "pid long, name string, age long, city string")
    return prov.source(df, "People")


def _depts(prov: ProvenanceSession, spark: SparkSession) -> Any:
    return prov.source(spark.createDataFrame(DEPTS, ["city", "region"]), "Depts")


def test_sources_joins_and_groups(spark) -> None:  # type: ignore[no-untyped-def]
    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        joined = _people(prov, spark).join(_depts(prov, spark), "city", "left")
        totals = joined.groupBy("region").agg(F.sum("age").alias("s"), F.count("name").alias("n"))
        return totals.named("Totals").collect()

    _same_both_ways(spark, job)


def test_aggregates_of_one_input_share_its_column(spark) -> None:  # type: ignore[no-untyped-def]
    """sum(age), avg(age) and max(age) send age once (count(name) its own column):
    the member block's value_of names the shared column; the stored graph is the same."""

    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        joined = _people(prov, spark).join(_depts(prov, spark), "city", "left")
        totals = joined.groupBy("region").agg(
            F.sum("age").alias("s"),
            F.count("name").alias("n"),
            F.avg("age").alias("a"),
            F.max("age").alias("m"),
        )
        return totals.named("Totals").collect()

    _same_both_ways(spark, job)
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "shared", emitter=emitter, capture="jvm") as prov:
        job(prov, spark)
    shared = [
        m
        for _, value in emitter.messages()
        for m in lineage_pb2.LineageEvent.FromString(value).batch.members
    ]
    assert shared and all(list(m.value_of) == [0, 1, 0, 0] for m in shared)
    assert all((m.aggregates, len(m.values)) == (4, 2) for m in shared)


# Kept values of every type Spark casts to text, nulls and the doubles Java prints apart.
TYPED_SCHEMA = (
    "k long, i int, s short, b byte, d double, f float, m decimal(12,3), day date, "
    "at timestamp, ok boolean, t string, xs array<int>"
)
TYPED = [
    (1, 7, 3, -2, 123.456, 1.5, "12.500", "2024-02-29", "2024-02-29 10:11:12", True, "Zé", [1]),
    (2, -7, None, 0, 1e7, None, None, None, None, False, None, None),
    (3, None, 1, None, 1e-5, 0.1, "-0.001", "1970-01-01", None, None, "", []),
    (-(2**63), 2**31 - 1, 0, 127, -0.0, 3.0, "1.000", None, None, True, "x", [2, 3]),
    (2**63 - 1, 0, 0, 0, float("nan"), float("inf"), "0.000", None, None, None, "y", None),
    (6, 0, 0, 0, float("-inf"), None, None, None, None, None, "z", None),
    (7, 0, 0, 0, None, None, None, None, None, None, "w", None),
    (8, 0, 0, 0, 0.001, None, None, None, None, None, "v", None),
]


def _typed(prov: ProvenanceSession, spark: SparkSession) -> Any:
    df = spark.createDataFrame(
        TYPED,
        TYPED_SCHEMA.replace("date", "string")
        .replace("timestamp", "string")
        .replace("decimal(12,3)", "string"),
    )
    df = df.select(
        *[c for c in df.columns if c not in ("m", "day", "at")],
        F.col("m").cast("decimal(12,3)").alias("m"),
        F.col("day").cast("date").alias("day"),
        F.col("at").cast("timestamp").alias("at"),
        F.array(F.col("k"), F.col("k")).alias("ks"),  # array<bigint>: a value, not id arrays
    )
    return prov.source(df, "Typed")


def test_kept_values_of_every_type_are_the_texts_spark_casts(spark) -> None:  # type: ignore[no-untyped-def]
    """The JVM taps hand numbers over as numbers (ingest writes their text) and cast other types
    themselves; the Python taps get Spark's casts to text. Both store the same texts, for source
    values, named rows' values and members' aggregated values, nulls included."""

    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        typed = _typed(prov, spark)
        sums = typed.groupBy("ok").agg(
            F.min("d").alias("sd"),
            F.max("i").alias("mi"),
            F.sum("b").alias("sb"),
            F.max("m").alias("mm"),
            F.count("t").alias("n"),
        )
        return sums.named("Sums").collect()

    nodes, _ = _same_both_ways(spark, job)
    typed = [n["props"] for n in nodes.values() if n["relation"] == "Typed"]
    assert len(typed) == len(TYPED)
    doubles = {props.get(ATTRIBUTE_PREFIX + "d") for props in typed}
    assert doubles == {"123.456", "1.0E7", "1.0E-5", "-0.0", "NaN", "-Infinity", "0.001", None}
    longs = {props[ATTRIBUTE_PREFIX + "k"] for props in typed}
    assert {str(-(2**63)), str(2**63 - 1)} <= longs
    values = {n["value"] for n in nodes.values() if n["op"] == "VALUE"}
    assert {"1.0E7", "NaN", "-Infinity", "12.500", "127", str(2**31 - 1)} <= values


def test_dates_and_decimals_at_their_edges_are_the_texts_spark_casts(spark) -> None:  # type: ignore[no-untyped-def]
    """Dates travel as days and decimals of up to 18 digits as unscaled longs; ingest writes the
    text Spark's cast gives (the Python taps' texts), at the edges of both: years 0, negative
    and past 9999, the Gregorian switch, 18 digits, scale 0 and the whole precision."""
    days = [0, -1, -719_162, -719_163, -719_529, -141_428, -141_427, 2_932_896, 2_932_897]
    days += [100_000_000, -100_000_000, 11_016]

    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        df = spark.range(len(days)).select(
            F.col("id"),
            F.element_at(F.array(*[F.lit(d) for d in days]), (F.col("id") + 1).cast("int"))
            .cast("long")
            .alias("n"),
        )
        df = df.select(
            "id",
            F.date_from_unix_date("n").alias("day"),
            (F.col("n") * 1_000_000_007).cast("decimal(18,0)").alias("whole"),
            (F.col("n") / F.lit(10**9)).cast("decimal(18,9)").alias("fine"),
            (F.col("n") % 7 - 3).cast("decimal(1,0)").alias("digit"),
            F.when(F.col("n") % 2 == 0, None)
            .otherwise((F.col("n") % 997 / 1e18).cast("decimal(18,18)"))
            .alias("tiny"),
            F.col("n").cast("decimal(20,2)").alias("wide"),  # 20 digits, values of up to 18
            # 38 digits, some values of more than 18 (1e8 * 1e12 at scale 4): those chunks as texts
            (F.col("n").cast("decimal(20,0)") * F.lit(10**12).cast("decimal(13,0)"))
            .cast("decimal(38,4)")
            .alias("huge"),
        )
        tracked = prov.source(df, "Edges")
        groups = tracked.groupBy("digit").agg(F.max("day").alias("mx"), F.min("fine").alias("mn"))
        # Python's dates stop at year 1: the result's dates come back as text.
        return groups.named("G").select("digit", F.col("mx").cast("string"), "mn").collect()

    nodes, _ = _same_both_ways(spark, job)
    edges = [n["props"] for n in nodes.values() if n["relation"] == "Edges"]
    dates = {props[ATTRIBUTE_PREFIX + "day"] for props in edges}
    assert {"0000-12-31", "-0001-12-31", "+10000-01-01", "1582-10-14", "2000-02-29"} <= dates
    tiny = {props.get(ATTRIBUTE_PREFIX + "tiny") for props in edges}
    assert None in tiny and "-0.000000000000000001" in tiny  # n = -1: Java's -1 % 997 is -1
    huge = {props[ATTRIBUTE_PREFIX + "huge"] for props in edges}
    assert {"100000000000000000000.0000", "-1000000000000.0000", "0.0000"} <= huge
    assert {props[ATTRIBUTE_PREFIX + "wide"] for props in edges} >= {"-719162.00", "0.00"}


def test_numbers_travel_as_numbers(spark) -> None:  # type: ignore[no-untyped-def]
    """A kept value of an integral, double, date or decimal (up to 18 digits) column is never
    cast to text inside the job: it travels as StringColumn.longs or .doubles, or, where a
    chunk's doubles are all short decimals, as .decimals with their scale (schema version 4), a
    date as .dates and a decimal as .unscaled with its scale (schema version 5), one of more
    digits too where every value of the chunk fits a long."""
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "jvm-taps", values="all", emitter=emitter, capture="jvm") as prov:
        _typed(prov, spark).groupBy("ok").agg(F.sum("d"), F.max("k")).collect()
        prices = spark.createDataFrame([(52.3,), (1.25,), (None,)], "price double")
        prov.source(prices.coalesce(1), "Prices").collect()  # one chunk
        wide = spark.createDataFrame([("1.5",), ("-9223372036854775.80",)], "w string").select(
            F.col("w").cast("decimal(30,2)").alias("w")
        )
        prov.source(wide.coalesce(1), "Wide").collect()  # each value has up to 18 digits
        huge = spark.createDataFrame([("1.5",), ("92233720368547758.08",)], "h string").select(
            F.col("h").cast("decimal(30,2)").alias("h")
        )
        prov.source(huge.coalesce(1), "Huge").collect()  # one has 19: the chunk as texts
        # A growing key takes 6 bytes a row as it is, 2 as differences (schema version 7).
        keys = spark.range(300).select((F.col("id") * 1000 + 10**12).alias("key"))
        prov.source(keys.coalesce(1), "Keys").collect()
    forms: dict[str, set[str]] = {}
    differences: dict[str, set[bool]] = {}
    keys_read: list[str] = []
    for _, value in emitter.messages():
        event = lineage_pb2.LineageEvent.FromString(value)
        if not event.HasField("batch"):
            continue
        assert event.schema_version == 9
        columns = [
            (name, column)
            for block in event.batch.nodes
            for name, column in zip(block.attribute_names, block.attribute_values, strict=True)
        ]
        columns += [(f"x{i}", c) for m in event.batch.members for i, c in enumerate(m.values)]
        for name, column in columns:
            form = (
                "longs"
                if column.longs
                else "doubles"
                if column.doubles
                else f"decimals/{column.decimal_scale}"
                if column.decimals
                else "dates"
                if column.dates
                else f"unscaled/{column.unscaled_scale}"
                if column.unscaled
                else "texts"
            )
            forms.setdefault(name, set()).add(form)
            differences.setdefault(name, set()).add(column.deltas)
            if name == "key":
                keys_read += string_column_texts(column)
    assert differences["key"] == {True} and differences["price"] == {False}
    assert sorted(keys_read, key=int) == [str(10**12 + 1000 * i) for i in range(300)]
    assert forms["k"] == forms["i"] == forms["s"] == forms["b"] == {"longs"}
    assert forms["d"] == forms["x0"] == {"doubles"}
    assert forms["x1"] == {"longs"}
    assert forms["m"] == {"unscaled/3"} and forms["day"] == {"dates"}
    assert forms["f"] == forms["at"] == forms["t"] == forms["ok"] == forms["h"] == {"texts"}
    assert forms["w"] == {"unscaled/2"}  # a type of 30 digits, each value of up to 18
    assert forms["ks"] == {"texts"}
    assert forms["price"] == {"decimals/2"}  # 52.3 and 1.25 as 5230 and 125


def test_outer_joins_keep_null_sides(spark) -> None:  # type: ignore[no-untyped-def]
    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        return _people(prov, spark).join(_depts(prov, spark), "city", "full").collect()

    _same_both_ways(spark, job)


def test_source_and_join_ids_travel_as_their_inputs(spark) -> None:  # type: ignore[no-untyped-def]
    """The JVM taps send a source row's position and a join row's pair of positions, not their
    ids (lineage.proto's DerivedIds): the comparisons above hold over these derived ids."""
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(
        spark, "jvm-taps", values="all", emitter=emitter, capture="jvm", rows_per_message=3
    ) as prov:
        _people(prov, spark).join(_depts(prov, spark), "city", "full").collect()
    blocks = []
    for _, value in emitter.messages():
        event = lineage_pb2.LineageEvent.FromString(value)
        if event.HasField("batch"):
            assert event.schema_version == 9
            blocks += [(event.batch.tap, b) for b in event.batch.nodes]
            assert not event.batch.edges.src, "join edges are implied by the pairs"
    # Both join sides hold source rows as they are: they travel as positions, not ids.
    kinds = Counter(
        (
            b.op,
            len(b.derived.position_deltas) > 0,
            len(b.derived.left_deltas) > 0 and len(b.derived.right_deltas) > 0,
        )
        for _, b in blocks
    )
    assert set(kinds) == {(lineage_pb2.OP_TOKEN, True, False), (lineage_pb2.OP_TIMES, False, True)}
    assert sum(len(b.derived.position_deltas) for _, b in blocks) == len(PEOPLE) + len(DEPTS)
    assert sum(len(b.derived.left_deltas) for _, b in blocks) == 5  # NY twice, LA, XX, SF
    assert not any(len(b.derived.left) or len(b.derived.right) for _, b in blocks)
    for _, b in blocks:
        assert b.HasField("derived") and not b.ids and not b.labels
    nulls = [len(b.derived.left_null_rows) + len(b.derived.right_null_rows) for _, b in blocks]
    assert sum(nulls) == 2  # Zé's XX has no dept, SF no person


def _members_in(block: lineage_pb2.MemberBlock) -> int:
    """A member block's members: one group each, sent plainly or (schema version 7) as an index
    into the block's group ids."""
    return len(block.groups) + len(block.group_index)


def test_members_of_joined_or_source_rows_travel_as_positions(spark) -> None:  # type: ignore[no-untyped-def]
    """Group members that are a join's rows travel as that join's pairs of positions, members
    that are a source's rows as positions (DerivedIds); the comparisons above hold over them."""

    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        people = _people(prov, spark)
        joined = people.join(_depts(prov, spark), "city", "left")
        by_region = joined.groupBy("region").agg(F.sum("age").alias("s")).named("ByRegion")
        by_city = people.groupBy("city").agg(F.count("pid").alias("n")).named("ByCity")
        return by_region.collect() + by_city.collect()

    _same_both_ways(spark, job)
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(
        spark, "jvm-taps", values="all", emitter=emitter, capture="jvm", rows_per_message=3
    ) as prov:
        job(prov, spark)
    forms = Counter()
    for _, value in emitter.messages():
        event = lineage_pb2.LineageEvent.FromString(value)
        for m in event.batch.members:
            assert not m.members and m.HasField("derived_members")
            d = m.derived_members
            forms["pairs" if len(d.left_deltas) else "positions"] += _members_in(m)
    assert forms == {"pairs": len(PEOPLE), "positions": len(PEOPLE)}


def test_a_join_only_an_aggregation_reads_travels_with_its_members(spark) -> None:  # type: ignore[no-untyped-def]
    """An unnamed inner join read only by an aggregation has no capture point of its own: its
    rows travel in the members' blocks (MemberBlock.join_rows), the same graph either way; the
    Spark conf spark.sparkprov.joinRowsWithMembers=false gives it its own capture point again."""

    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        joined = _people(prov, spark).join(_depts(prov, spark), "city")
        return joined.groupBy("region").agg(F.sum("age").alias("s")).named("ByRegion").collect()

    _same_both_ways(spark, job)

    def taps_and_join_rows(fold: bool) -> tuple[set[str], int]:
        spark.conf.set(JOIN_ROWS_WITH_MEMBERS, str(fold).lower())
        try:
            emitter = MemoryEmitter(spark)
            with ProvenanceSession(
                spark, "jvm-taps", values="all", emitter=emitter, capture="jvm"
            ) as prov:
                job(prov, spark)
        finally:
            spark.conf.unset(JOIN_ROWS_WITH_MEMBERS)
        taps, joined = set(), 0
        for _, value in emitter.messages():
            event = lineage_pb2.LineageEvent.FromString(value)
            if event.HasField("batch"):
                taps.add(event.batch.tap.split("#")[0])
                joined += sum(_members_in(m) for m in event.batch.members if m.join_rows)
        return taps, joined

    folded_taps, folded_rows = taps_and_join_rows(True)
    apart_taps, apart_rows = taps_and_join_rows(False)
    assert "join" not in folded_taps and folded_rows == 3  # NY twice, LA once; XX joins nothing
    assert "join" in apart_taps and apart_rows == 0


def test_semi_joins_distinct_and_named_rows(spark) -> None:  # type: ignore[no-untyped-def]
    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        extra = prov.source(spark.createDataFrame([("NY",), ("NY",), ("LA",)], ["city"]), "Seen")
        semi = _people(prov, spark).join(extra, "city", "left_semi").named("Semi").collect()
        cities = _people(prov, spark).select("city").distinct().named("Cities").collect()
        return semi + cities

    _same_both_ways(spark, job)


def test_anti_joins_record_their_excluded_rows(spark) -> None:  # type: ignore[no-untyped-def]
    """Joined on names and on a condition: EXCLUDED nodes (value: the match's id) for the rows
    a right row matched, nothing for the kept rows, alike on both paths."""

    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        df = spark.createDataFrame([("NY",), ("NY",), ("LA",), (None,)], "city string")
        seen = prov.source(df, "Seen")
        people = _people(prov, spark)
        by_name = people.join(seen, "city", "left_anti").named("Anti").collect()
        on = people.join(seen.withColumnRenamed("city", "c"), F.col("city") == F.col("c"), "anti")
        return by_name + on.named("AntiOn").collect()

    nodes, edges = _same_both_ways(spark, job)
    tokens = {i: n for i, n in nodes.items() if n["op"] == "TOKEN"}
    seen = {i: n["props"].get("a_city") for i, n in tokens.items() if n["relation"] == "Seen"}
    people = {i: n["props"]["a_city"] for i, n in tokens.items() if n["relation"] == "People"}
    excluded = {i: n for i, n in nodes.items() if n["op"] == "EXCLUDED"}
    # NY, NY and LA are excluded, at both joins; XX is kept (the null city matches nothing)
    assert len(excluded) == 6
    for i, node in excluded.items():
        assert node["label"] == "▷"
        (left,) = [s for s, d in edges if d == i and s != int(node["value"])]
        city = people[left]
        matches = [s for s, c in seen.items() if c == city]
        assert int(node["value"]) == min(matches) and edges[(min(matches), i)] == 1
    assert sorted(people[s] for s, d in edges if d in excluded and s in people) == sorted(
        ["NY", "NY", "LA"] * 2
    )


def test_named_rows_travel_as_their_parents(spark) -> None:  # type: ignore[no-untyped-def]
    """A PLUS node over a named row travels as its parent: a position where the parent is a
    source's row (DerivedIds parents); the nodes and edges are those of the Python taps."""

    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        return _people(prov, spark).filter(F.col("pid") > 1).named("Older").collect()

    nodes, edges = _same_both_ways(spark, job)
    assert sum(1 for n in nodes.values() if n["op"] == "PLUS") == len(PEOPLE) - 1
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(
        spark, "jvm-taps", values="all", emitter=emitter, capture="jvm", rows_per_message=3
    ) as prov:
        job(prov, spark)
    pluses = []
    for _, value in emitter.messages():
        event = lineage_pb2.LineageEvent.FromString(value)
        pluses += [b for b in event.batch.nodes if b.op == lineage_pb2.OP_PLUS]
    assert pluses and all(not b.ids and len(b.derived.parent_deltas) for b in pluses)


def test_windows_and_generators(spark) -> None:  # type: ignore[no-untyped-def]
    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        people = _people(prov, spark)
        window = Window.partitionBy("city")
        ranked = people.withColumn("total", F.sum("age").over(window)).named("W").collect()
        df = spark.createDataFrame([("a", [1, 2, 2]), ("b", [])], "k string, items array<int>")
        items = prov.source(df, "T").select("k", F.explode_outer("items").alias("item"))
        return ranked + items.named("E").collect()

    _same_both_ways(spark, job)


def test_python_functions_are_black_boxes_on_both_paths(spark) -> None:  # type: ignore[no-untyped-def]
    @F.udf(returnType=StringType())
    def shout(name: str) -> str:
        return name.upper()

    def totals(pdf: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"city": [pdf["city"].iloc[0]], "n": [len(pdf)]})

    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        people = _people(prov, spark)
        loud = people.withColumn("loud", shout("name")).named("Loud").collect()
        grouped = people.groupBy("city").applyInPandas(totals, "city string, n long")
        return loud + grouped.named("AP").collect()

    _same_both_ways(spark, job)


def test_modules_inputs_outputs_and_state(spark) -> None:  # type: ignore[no-untyped-def]
    def job(prov: ProvenanceSession, spark: SparkSession) -> list[Any]:
        with prov.module("dealer") as m:
            people = m.input(_people(prov, spark), "In")
            state = m.state(spark.createDataFrame([("NY", 1), ("NY", 1)], ["city", "w"]), "S")
            out = m.output(people.join(state, "city"), "Out")
            return out.collect()

    _same_both_ways(spark, job)


def test_plans_carry_the_salts_python_derives(spark) -> None:  # type: ignore[no-untyped-def]
    ctx = TapContext(run_id="r", workflow="w", emitter=None, counts=None)
    group = plan_of(GroupSpec(key="g#1", functions=("sum", "count")), ctx, ("main",))
    assert group["kind"] == "group" and group["input_types"] == ["id", "text", "text"]
    assert [s % 2**64 for s in group["salts"]] == [
        int(salt_of("g#1", i, "aggregate")) for i in range(2)
    ]
    semi = plan_of(SemiJoinSpec(key="s#2"), ctx, ("main",))
    assert semi["input_types"] == ["id", "id", "ids"]
    assert semi["salts"][0] % 2**64 == int(salt_of("s#2", "plus"))
    assert json.loads(json.dumps(group)) == group
    assert set(TapPlan.__annotations__) == set(group)


def test_the_java_record_reads_every_key_of_the_plan() -> None:
    """The Java record (TapPlan.java) and the TypedDict name the same keys."""
    source = Path(__file__).parents[2] / "capture_jar/src/main/java/io/sparkprov/capture"
    java = (source / "TapPlan.java").read_text()
    assert {k for k in TapPlan.__annotations__} == set(
        part.split('"')[1] for part in java.split("@JsonProperty(")[1:]
    )


def test_the_jvm_sizes_its_messages_as_python_and_ingest_do() -> None:
    """CaptureRun.java's default rows per message and largest message are sparkprov's."""
    from sparkprov import defaults
    from sparkprov.events import MAX_EVENT_BYTES

    source = Path(__file__).parents[2] / "capture_jar/src/main/java/io/sparkprov/capture"
    java = (source / "CaptureRun.java").read_text()

    def constant(name: str) -> int:
        (expression,) = re.findall(rf"static final int {name} = ([0-9 *]+);", java)
        return math.prod(int(part) for part in expression.split("*"))

    assert constant("DEFAULT_ROWS_PER_MESSAGE") == defaults.ROWS_PER_MESSAGE
    assert constant("MAX_MESSAGE_BYTES") == MAX_EVENT_BYTES


def test_unsupported_spark_versions_are_refused_by_name() -> None:
    check_spark_version("4.3.0")
    check_spark_version("4.0.1")
    for version in ("3.5.3", "5.0.0"):
        with pytest.raises(RuntimeError, match="supports Spark 4.0 to 4.3.*capture='python'"):
            check_spark_version(version)


def test_a_missing_jar_names_the_fix(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RuntimeError, match="make setup.*SPARKPROV_CAPTURE_JAR"):
        jar_path(str(tmp_path / "nope.jar"))


@pytest.mark.parametrize("codegen", [True, False], ids=["generated", "interpreted"])
def test_node_ids_are_spark_xxhash64_of_run_key_and_columns(spark, codegen: bool) -> None:  # type: ignore[no-untyped-def]
    """The JVM's node ids (xxhash64 seeded with the hash of run and key: RunSeededHash) equal
    ``xxhash64(lit(run), lit(key), cols...)``, the Python taps' ids, for every column type and
    null, generated and interpreted, over few columns (hashed inline) and many (Spark's own
    split code); and they differ per run and key."""
    df = spark.createDataFrame(
        [
            (1, "a", 2.5, Decimal("1.25"), True, datetime.date(2026, 1, 2), 7),
            (None, "Zé", None, None, None, None, None),
            (-(2**62), None, -0.0, Decimal("-3.10"), False, datetime.date(1969, 12, 31), -1),
        ],
        "n long, s string, x double, d decimal(12,2), b boolean, t date, i int",
    )
    conf = {"spark.sql.codegen.wholeStage": str(codegen).lower()}
    if not codegen:
        conf["spark.sql.codegen.factoryMode"] = "NO_CODEGEN"
    before = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        with ProvenanceSession(spark, "jvm-taps", emitter=MemoryEmitter(spark)) as prov:
            jvm = prov.capture.jvm
            assert jvm is not None
            few = [F.col("n"), F.col("s"), F.col("x")]
            many = few + [F.col(c) for c in ("d", "b", "t", "i")] + [F.upper("s")]
            got = df.select(
                jvm.node_id("run-1", "op#3", few).alias("jvm"),
                F.xxhash64(F.lit("run-1"), F.lit("op#3"), *few).alias("spark"),
                jvm.node_id("run-1", "op#6", many).alias("many"),
                F.xxhash64(F.lit("run-1"), F.lit("op#6"), *many).alias("spark_many"),
                jvm.node_id("run-2", "op#3", few).alias("other_run"),
                jvm.node_id("run-1", "op#4", [F.col("n")]).alias("other_key"),
                F.xxhash64(F.lit("run-1"), F.lit("op#4"), F.col("n")).alias("spark_key"),
                jvm.node_id("run-1", "op#5", []).alias("constant"),
                F.xxhash64(F.lit("run-1"), F.lit("op#5")).alias("spark_constant"),
            ).collect()
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    for row in got:
        assert row.jvm == row.spark and row.other_key == row.spark_key
        assert row.many == row.spark_many
        assert row.constant == row.spark_constant
        assert row.other_run != row.jvm
    assert len({row.jvm for row in got}) == 3


def test_the_session_loads_the_jar_and_its_protocol_matches(spark) -> None:  # type: ignore[no-untyped-def]
    with ProvenanceSession(spark, "jvm-taps", emitter=MemoryEmitter(spark)) as prov:
        assert prov.capture_path == "jvm" and prov.capture.jvm is not None
        assert prov.capture.jvm.protocol() == PROTOCOL
    with pytest.raises(ValueError, match="'jvm' or 'python'"):
        ProvenanceSession(spark, "jvm-taps", emitter=MemoryEmitter(spark), capture="scala")


def test_memory_emitter_values_are_the_messages_values_in_order(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MemoryEmitter.values`` hands the JVM sinks' messages over a slice per collect: the
    slices joined are ``messages()``'s values, in the same order."""
    from capture_agent import emitters

    monkeypatch.setattr(emitters, "_COLLECTED_PER_CALL", 4)
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(
        spark, "values", values="all", emitter=emitter, rows_per_message=3
    ) as prov:
        df = spark.range(0, 40, 1, 2).withColumn("k", F.col("id") % 3)
        prov.source(df, "T").groupBy("k").agg(F.sum("id").alias("s")).named("S").collect()
    expected = [value for _, value in emitter.messages()]
    assert len(expected) > 3 * 4, "more messages than three slices"
    assert emitter.values(spark) == expected


# -- the values policy "read" (the sources' default) ----------------------------------------
# The values policy "read" (the sources' default): a source's TOKEN nodes keep the columns the
# query reads after the source, and the scan reads no other column for the tap
# (io.sparkprov.capture.ValuesPruning). Against "all" on the same job: the same rows, node ids,
# ops, labels and edges; only the kept attributes differ, and they are exactly the columns the
# query reads. Through the DataFrame API and through plan capture (SQL text).


ReadJob = Callable[[ProvenanceSession, SparkSession, str, Any], Any]


@pytest.fixture(scope="module")
def tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("values-read")
    spark.createDataFrame(
        [(i, i % 3, f"name{i}", i / 2, "x" * 10) for i in range(60)],
        "k long, g int, name string, amount double, pad string",
    ).write.parquet(str(root / "t"))
    spark.createDataFrame(
        [(g, f"grp{g}", "z") for g in range(3)], "g int, label string, other string"
    ).write.parquet(str(root / "u"))
    return root


@pytest.fixture(scope="module")
def facts(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """W, 6,000 rows over 300 groups, and V, two rows per group: sizes Spark's estimates rank
    as their rows do (a few dozen rows are all parquet's overhead)."""
    root = tmp_path_factory.mktemp("joins-first")
    spark.range(6000).select(
        F.col("id").alias("k"), (F.col("id") % 300).alias("g"), (F.col("id") / 2).alias("amount")
    ).write.parquet(str(root / "w"))
    spark.range(600).select(
        (F.col("id") % 300).alias("g"),
        F.concat(F.lit("grp"), (F.col("id") % 300).cast("string")).alias("label"),
    ).write.parquet(str(root / "v"))
    return root


def _frames(prov: ProvenanceSession, spark: SparkSession, values: str, root: Path) -> Any:
    t = prov.source(spark.read.parquet(str(root / "t")), "T", values=values)
    u = prov.source(spark.read.parquet(str(root / "u")), "U", values=values)
    return t.filter(F.col("amount") > 10).join(u, "g").groupBy("label").agg(F.sum("amount"))


def _sql(prov: ProvenanceSession, spark: SparkSession, values: str, root: Path) -> Any:
    spark.read.parquet(str(root / "t")).createOrReplaceTempView("T")
    spark.read.parquet(str(root / "u")).createOrReplaceTempView("U")
    text = "SELECT label, sum(amount) FROM T JOIN U USING (g) WHERE amount > 10 GROUP BY label"
    return prov.tracked(spark.sql(text), values=values)


def _captured_read(
    spark: SparkSession, job: ReadJob, values: str, root: Path
) -> tuple[list[Any], dict[int, Any], Counter[Any], str]:
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "values-read", emitter=emitter, run_id="one-run") as prov:
        frame = job(prov, spark, values, root)
        plan = materialize(frame)._jdf.queryExecution().executedPlan().toString()
        rows = sorted(frame.collect(), key=repr)
    nodes: dict[int, Any] = {}
    edges: Counter[tuple[int, int]] = Counter()
    for _, value in emitter.messages():
        event = decode(value)
        if isinstance(event, Batch):
            logical = event.expanded()
            nodes.update((n["id"], n) for n in logical.rows())
            edges.update(zip(logical.edges["src"], logical.edges["dst"], strict=True))
    return rows, nodes, edges, plan


def _kept_read(nodes: dict[int, Any], relation: str) -> set[tuple[str, ...]]:
    return {
        tuple(
            sorted(k[len(ATTRIBUTE_PREFIX) :] for k in n["props"] if k.startswith(ATTRIBUTE_PREFIX))
        )
        for n in nodes.values()
        if n.get("relation") == relation and n["op"] == "TOKEN"
    }


def _read_schemas(plan: str) -> list[str]:
    return sorted(re.findall(r"ReadSchema: (struct<[^>]*>)", plan))


def _without_attributes(node: dict[str, Any]) -> dict[str, Any]:
    props = {k: v for k, v in node["props"].items() if not k.startswith(ATTRIBUTE_PREFIX)}
    return {**node, "props": props}


@pytest.mark.parametrize("job", [_frames, _sql], ids=["dataframe", "sql"])
def test_sources_keep_the_columns_the_query_reads_and_the_scan_reads_no_other(
    spark: SparkSession, tables: Path, job: ReadJob
) -> None:
    rows, nodes, edges, plan = _captured_read(spark, job, "read", tables)
    all_rows, all_nodes, all_edges, all_plan = _captured_read(spark, job, "all", tables)
    assert rows == all_rows and len(rows) == 3
    # The same logical graph: ids, ops, labels, edges; only the kept attributes differ.
    assert nodes.keys() == all_nodes.keys() and len(nodes) > 60
    assert all(
        _without_attributes(nodes[i]) == _without_attributes(n) for i, n in all_nodes.items()
    )
    assert edges == all_edges
    # "read": the columns the query reads above the source (the filter's amount, the join's
    # g, the output's label); "all": every column.
    assert _kept_read(nodes, "T") == {("amount", "g")}
    assert _kept_read(nodes, "U") == {("g", "label")}
    assert _kept_read(all_nodes, "T") == {("amount", "g", "k", "name", "pad")}
    assert _kept_read(all_nodes, "U") == {("g", "label", "other")}
    # And the scans read no column for the tap alone (the row index is the source position).
    assert [s for s in _read_schemas(plan) if "pad" in s or "name" in s or "other" in s] == []
    assert any("pad" in s for s in _read_schemas(all_plan))
    # The values kept are the rows' own: those the filter keeps (it runs before the tap).
    amounts = {n["props"]["a_amount"] for n in nodes.values() if n.get("relation") == "T"}
    assert amounts == {str(i / 2) for i in range(60) if i / 2 > 10}


@pytest.mark.parametrize("job", [_frames, _sql], ids=["dataframe", "sql"])
def test_a_filter_over_a_source_runs_before_its_tap_and_in_the_scan(
    spark: SparkSession, tables: Path, job: ReadJob
) -> None:
    """io.sparkprov.capture.SourceFiltersFirst: the source's tap sees only the rows the filter
    keeps, Spark pushes the filter into the parquet scan as without capture, and the run marker
    carries the source's id mask, which tells a dropped row's id from an unknown one."""
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "filters-first", emitter=emitter, run_id="filters") as prov:
        frame = job(prov, spark, "read", tables)
        plan = materialize(frame)._jdf.queryExecution().executedPlan().toString()
        rows = frame.collect()
    assert len(rows) == 3
    scans = re.findall(r"FileScan parquet \S*\[[^\]]*\] .*?DataFilters: \[([^\]]*)\]", plan)
    assert any("amount" in filters and "> 10" in filters for filters in scans), plan
    events = [decode(value) for _, value in emitter.messages()]
    tokens = {
        n["label"]: n["id"]
        for e in events
        if isinstance(e, Batch)
        for n in e.expanded().rows()
        if n.get("relation") == "T" and n["op"] == "TOKEN"
    }
    assert len(tokens) == len([i for i in range(60) if i / 2 > 10])
    (complete,) = [e for e in events if isinstance(e, RunComplete)]
    assert (complete.node_count, complete.edge_count) == prov.counts()
    (source,) = [f for f in complete.source_files if f.relation == "T"]
    (mask,) = source.masks
    for label, node_id in tokens.items():  # the mask gives every stored row's id from its label
        file_index, row = (int(x) for x in label.split("#")[1].split("."))
        assert (file_index << 33 | row) ^ (mask & (2**64 - 1)) == node_id & (2**64 - 1)

    # The session's conf turns the rule off: every row the scan reads is captured again.
    spark.conf.set("spark.sparkprov.sourceFiltersFirst", "false")
    try:
        _, nodes, _, plan = _captured_read(spark, job, "read", tables)
    finally:
        spark.conf.unset("spark.sparkprov.sourceFiltersFirst")
    assert len([n for n in nodes.values() if n.get("relation") == "T" and n["op"] == "TOKEN"]) == 60


def _joined_frames(prov: ProvenanceSession, spark: SparkSession, root: Path) -> Any:
    w = prov.source(spark.read.parquet(str(root / "w")), "W")
    v = prov.source(spark.read.parquet(str(root / "v")), "V")
    return w.join(v.filter(F.col("label") == "grp1"), "g").groupBy("label").agg(F.sum("amount"))


def _joined_sql(prov: ProvenanceSession, spark: SparkSession, root: Path) -> Any:
    spark.read.parquet(str(root / "w")).createOrReplaceTempView("W")
    spark.read.parquet(str(root / "v")).createOrReplaceTempView("V")
    text = "SELECT label, sum(amount) FROM W JOIN V USING (g) WHERE label = 'grp1' GROUP BY label"
    return prov.tracked(spark.sql(text))


def _token_batches(
    spark: SparkSession,
    job: Callable[[ProvenanceSession, SparkSession, Path], Any],
    root: Path,
    plans: list[str] | None = None,
) -> tuple[dict[int, Any], Counter[tuple[int, int]], Counter[int], tuple[int, int]]:
    """The job's nodes and edges, how many times each TOKEN id was sent, and whether the run's
    counts are the graph's; the executed plan appended to ``plans``."""
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "joins-first", emitter=emitter, run_id="joins") as prov:
        frame = job(prov, spark, root)
        assert len(frame.collect()) == 1
        if plans is not None:
            plans.append(materialize(frame)._jdf.queryExecution().executedPlan().toString())
    nodes: dict[int, Any] = {}
    edges: Counter[tuple[int, int]] = Counter()
    sent: Counter[int] = Counter()
    events = [decode(value) for _, value in emitter.messages()]
    for event in events:
        if isinstance(event, Batch):
            logical = event.expanded()
            for n in logical.rows():
                nodes[n["id"]] = n
                sent[n["id"]] += n["op"] == "TOKEN"
            edges.update(zip(logical.edges["src"], logical.edges["dst"], strict=True))
    (complete,) = [e for e in events if isinstance(e, RunComplete)]
    assert (complete.node_count, complete.edge_count) == (len(nodes), sum(edges.values()))
    return nodes, edges, sent, prov.counts()


@pytest.mark.parametrize("job", [_joined_frames, _joined_sql], ids=["dataframe", "sql"])
def test_a_source_row_a_join_drops_is_not_sent(
    spark: SparkSession, facts: Path, job: Callable[[ProvenanceSession, SparkSession, Path], Any]
) -> None:
    """io.sparkprov.capture.SourceJoinsFirst: the sources' capture points run above their join,
    so W's rows without a partner in the filtered V (g other than 1) are not sent; a row of W
    meets two rows of V, one after the other, and is sent once; V, which Spark broadcasts, keeps
    its capture point at its scan (the test below). The graph is the one the rule's conf turned
    off gives, less the TOKEN nodes that feed nothing."""
    nodes, edges, sent, counts = _token_batches(spark, job, facts)
    spark.conf.set("spark.sparkprov.sourceJoinsFirst", "false")
    try:
        all_nodes, all_edges, all_sent, all_counts = _token_batches(spark, job, facts)
    finally:
        spark.conf.unset("spark.sparkprov.sourceJoinsFirst")

    def tokens(of: dict[int, Any], relation: str) -> set[str]:
        return {n["label"] for n in of.values() if n["op"] == "TOKEN" and n["relation"] == relation}

    assert len(tokens(all_nodes, "W")) == 6000  # every row the scan reads
    assert len(tokens(nodes, "W")) == 20  # the rows with g = 1
    assert tokens(nodes, "V") == tokens(all_nodes, "V") and len(tokens(nodes, "V")) == 2
    assert edges == all_edges
    feeding = {src for src, _ in all_edges}
    assert nodes.keys() <= all_nodes.keys()
    assert all(
        all_nodes[i]["op"] == "TOKEN" and i not in feeding for i in all_nodes.keys() - nodes.keys()
    )
    assert all(nodes[i] == all_nodes[i] for i in nodes)  # the same ids, labels and values
    assert counts == (all_counts[0] - 5980, all_counts[1])
    w_rows = [i for i in nodes if nodes[i]["op"] == "TOKEN" and nodes[i]["relation"] == "W"]
    assert {sent[i] for i in w_rows} == {1}
    # V, the side Spark broadcasts, keeps its capture point at its scan: each row once
    v_rows = [i for i in nodes if nodes[i]["op"] == "TOKEN" and nodes[i]["relation"] == "V"]
    assert {sent[i] for i in v_rows} == {1}


def _tap_above_join(plan: str, relation: str) -> bool:
    """Whether the executed plan's capture point of ``relation``'s source sits above its join
    (a plan prints its parents first)."""
    lines = plan.splitlines()
    (tap,) = [i for i, line in enumerate(lines) if f"sparkprov_tap_source:{relation}" in line]
    (join,) = [i for i, line in enumerate(lines) if "Join" in line and "Exchange" not in line]
    return tap < join


@pytest.mark.parametrize(
    ("threshold", "strategy", "v_above"),
    [("10MB", "BroadcastHashJoin", False), ("-1", "SortMergeJoin", True)],
    ids=["broadcast", "shuffled"],
)
def test_a_broadcast_sides_capture_point_stays_at_its_scan(
    spark: SparkSession, facts: Path, threshold: str, strategy: str, v_above: bool
) -> None:
    """SourceJoinsFirst moves no tap above a join from the side Spark broadcasts: every task of
    the other side meets the broadcast rows, so above the join each would be sent once per task
    (V's 2 rows by each of W's tasks). The streamed side's tap moves (W's 20 rows kept of
    6,000). Shuffled, each row of either side meets the join in one task: both taps move, and
    each row is still sent once."""
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", threshold)
    plans: list[str] = []
    try:
        nodes, _, sent, _ = _token_batches(spark, _joined_frames, facts, plans)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    (plan,) = plans
    assert strategy in plan, plan
    assert _tap_above_join(plan, "W"), plan
    assert _tap_above_join(plan, "V") == v_above, plan
    for relation, rows in (("W", 20), ("V", 2)):
        tokens = [i for i, n in nodes.items() if n["op"] == "TOKEN" and n["relation"] == relation]
        assert len(tokens) == rows and {sent[i] for i in tokens} == {1}


def _three_reads(
    spark: SparkSession, root: Path, once: bool
) -> tuple[list[set[int]], dict[int, dict[str, Any]], tuple[int, int], Any]:
    """Three actions of one run over source T, each reading other rows and columns: the TOKEN
    ids each action sent, every TOKEN with the union of the attributes sent for it (what ingest
    stores), the run's counts and its marker."""
    emitter = MemoryEmitter(spark)
    spark.conf.set("spark.sparkprov.sourceRowsOnce", str(once).lower())
    sent: list[set[int]] = []
    stored: dict[int, dict[str, Any]] = {}
    try:
        with ProvenanceSession(spark, "rows-once", emitter=emitter, run_id="rows-once") as prov:
            t = prov.source(spark.read.parquet(str(root / "t")), "T", values="read")
            jobs = [
                t.filter(F.col("amount") > 10).select("g", "amount"),  # amount and g, 39 rows
                t.filter(F.col("amount") > 5).select("amount"),  # amount alone, 49 rows
                t.select("name", "amount"),  # name is new: every row again
            ]
            seen = 0
            for job in jobs:
                job.collect()
                messages = emitter.messages()
                tokens = [
                    n
                    for _, value in messages[seen:]
                    if isinstance(event := decode(value), Batch)
                    for n in event.expanded().rows()
                    if n["op"] == "TOKEN"
                ]
                seen = len(messages)
                sent.append({n["id"] for n in tokens})
                for n in tokens:
                    stored.setdefault(n["id"], {}).update(n["props"])
    finally:
        spark.conf.unset("spark.sparkprov.sourceRowsOnce")
    events = [decode(value) for _, value in emitter.messages()]
    (complete,) = [e for e in events if isinstance(e, RunComplete)]
    return sent, stored, prov.counts(), complete


def test_a_source_row_is_sent_once_per_run_with_the_values_it_keeps(
    spark: SparkSession, tables: Path
) -> None:
    """io.sparkprov.capture.SourceRowsOnce: a later action of the run does not send again a file
    source's row that an earlier one sent with every value it keeps; the stored graph (each row
    with the union of its values) and the run's counts are those of sending everything."""
    sent, stored, counts, complete = _three_reads(spark, tables, once=True)
    every, every_stored, every_counts, _ = _three_reads(spark, tables, once=False)
    over_10 = {i for i in range(60) if i / 2 > 10}
    over_5 = {i for i in range(60) if i / 2 > 5}
    assert [len(ids) for ids in every] == [len(over_10), len(over_5), 60]
    # The second action keeps amount alone: only its rows the first did not send travel.
    assert [len(ids) for ids in sent] == [len(over_10), len(over_5 - over_10), 60]
    assert sent[0] == every[0] and sent[1] == every[1] - every[0] and sent[2] == every[2]
    # The same stored TOKENs, each with the values of every action that read it.
    assert stored == every_stored
    assert {tuple(sorted(p)) for p in stored.values()} >= {("a_amount", "a_g", "a_name")}
    assert counts == every_counts and (complete.node_count, complete.edge_count) == counts


def test_a_column_the_output_returns_is_read(spark: SparkSession, tables: Path) -> None:
    def job(prov: ProvenanceSession, spark: SparkSession, values: str, root: Path) -> Any:
        t = prov.source(spark.read.parquet(str(root / "t")), "T", values=values)
        return t.filter(F.col("g") == 1).select("name")

    rows, nodes, _, _ = _captured_read(spark, job, "read", tables)
    assert len(rows) == 20
    assert _kept_read(nodes, "T") == {("g", "name")}


def test_a_list_of_columns_is_kept_whether_the_query_reads_it_or_not(
    spark: SparkSession, tables: Path
) -> None:
    def job(prov: ProvenanceSession, spark: SparkSession, values: Any, root: Path) -> Any:
        t = prov.source(spark.read.parquet(str(root / "t")), "T", values=["k", "pad"])
        return t.groupBy("g").agg(F.count("*"))

    _, nodes, _, _ = _captured_read(spark, job, "read", tables)
    assert _kept_read(nodes, "T") == {("k", "pad")}


def test_an_unknown_policy_is_refused_by_name(spark: SparkSession, tables: Path) -> None:
    with (
        ProvenanceSession(spark, "values-read", emitter=MemoryEmitter(spark)) as prov,
        pytest.raises(ValueError, match='"read", "all", a list of columns or None'),
    ):
        prov.source(spark.read.parquet(str(tables / "t")), "T", values="some")


# -- the facade's plan helpers (plan capture's py4j round trips) ----------------------------


def test_jvm_lists_slice_and_concatenate_in_the_jvm_as_python_lists_do(
    spark: SparkSession,
) -> None:
    """capture_agent.jvm.JvmList against the Python list of the same elements."""
    df = spark.range(1).select(*[F.lit(i).alias(f"c{i}") for i in range(11)])
    with ProvenanceSession(spark, "jvm-lists", emitter=MemoryEmitter(spark)) as prov:
        taps = prov.capture.jvm
        assert taps is not None
        attributes = taps.output(df._jdf.queryExecution().analyzed())
        names = [str(a.name()) for a in attributes]
        assert names == [f"c{i}" for i in range(11)] and len(attributes) == 11

        def named(xs: Any) -> list[str]:
            return [str(xs.java.get(i).name()) for i in range(int(xs.java.size()))]

        for a, b in [(0, 11), (2, 9), (3, 3), (5, 100), (-4, -1)]:
            part = attributes[a:b]
            assert named(part) == names[a:b] and [str(x.name()) for x in part] == names[a:b]
        made = taps.jvm_list(list(attributes)[:9])  # two calls: eight, then one
        assert named(made) == names[:9]
        both = attributes[:2] + made[7:]
        assert named(both) == [*names[:2], *names[7:9]] and len(both) == 4
        assert taps.index_of_attribute(attributes, list(attributes)[4]) == 4
        assert taps.index_of_attribute(attributes[:3], list(attributes)[4]) == -1


def test_select_through_the_jvm_keeps_the_order_of_columns_and_names(
    spark: SparkSession,
) -> None:
    df = spark.createDataFrame([(1, "x", 2.5)], ["a", "b", "c"])
    with ProvenanceSession(spark, "jvm-select", emitter=MemoryEmitter(spark)) as prov:
        taps = prov.capture.jvm
        assert taps is not None
        items: list[Any] = ["c", (F.col("a") + 1).alias("a1"), "a", F.lit("k").alias("k"), "b"]
        got = taps.select(df, items)
        assert got.columns == df.select(*items).columns == ["c", "a1", "a", "k", "b"]
        assert got.collect() == df.select(*items).collect()
        assert taps.select(df, []).columns == []
        assert taps.select(df, ["b", "b"]).columns == ["b", "b"]
        with pytest.raises(Exception, match="cannot be resolved|UNRESOLVED_COLUMN"):
            taps.select(df, [""])  # Spark's own error, as df.select("") gives


def test_stray_subqueries_are_named_and_joined_ones_pass(spark: SparkSession) -> None:
    spark.createDataFrame([(1,), (2,)], ["x"]).createOrReplaceTempView("stray_t")
    plan = (
        spark.sql(
            "SELECT x FROM stray_t"
            " WHERE x > (SELECT avg(x) FROM stray_t) AND x IN (SELECT x FROM stray_t)"
        )
        ._jdf.queryExecution()
        .analyzed()
    )
    condition = plan.child().condition()
    with ProvenanceSession(spark, "jvm-stray", emitter=MemoryEmitter(spark)) as prov:
        taps = prov.capture.jvm
        assert taps is not None
        scalar = taps.scalar_subqueries([condition, condition])  # found once
        assert len(scalar) == 1 and taps.kind(list(scalar)[0]) == "ScalarSubquery"
        assert taps.stray_subquery(condition, []) == "ScalarSubquery"
        assert taps.stray_subquery(condition, scalar) == "InSubquery"
        assert taps.stray_subquery(plan.child().child().output().apply(0), []) is None
        names = taps.plan_names(plan)
        leaf = plan.collectLeaves().apply(0)
        assert str(names.of(leaf)) == "stray_t"


def test_a_new_spark_context_gets_the_jar_again() -> None:
    """A SparkContext made after another was stopped (a new application) loads and probes the
    jar itself: the facade is cached per application, never reused across them."""
    from examples.spark import local_spark

    for app in ("sparkprov-jvm-first", "sparkprov-jvm-second"):
        spark = local_spark(app)
        try:
            with ProvenanceSession(spark, "jvm-taps", emitter=MemoryEmitter(spark)) as prov:
                rows = prov.source(spark.createDataFrame([(1,)], ["k"]), "T").collect()
            assert rows == [(1,)] and prov.counts() == (1, 0)
        finally:
            spark.stop()
