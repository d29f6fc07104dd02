"""Source rows identified by their files (capture_agent.sources,
io.sparkprov.capture.SourcePosition): a parquet source's rows get the same TOKEN label and id
however Spark splits the files, the label's numbers are the file's ordinal and the row's index
in it, both capture paths and both of Spark's evaluation paths agree, a source Spark gives no row
index for keeps the partition and offset, and the run marker lists each source's files. Through
the in-memory emitter: no broker.

Its sessions keep every source column (values="all"): the tests find source rows by values
the queries need not read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from capture_agent.emitters import MemoryEmitter
from capture_agent.sources import file_key, file_positions, java_sorted, position_in_spark
from sparkprov.events import Batch, RunComplete, decode

SPARK_CONF = {"spark.sql.codegen.fallback": "false"}  # generated code must compile


@pytest.fixture(scope="module")
def orders(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Parquet files of 3,000 orders in a folder whose name needs escaping in a URI."""
    folder = tmp_path_factory.mktemp("sources") / "orders k=v 1"
    rows = spark.range(0, 3000, numPartitions=4).select(
        F.col("id").alias("oid"), (F.col("id") % 17).alias("cust"), (F.col("id") * 3).alias("amt")
    )
    rows.write.parquet(str(folder))
    return str(folder)


def _tokens(
    spark: SparkSession, path: str, capture: str, shuffled: bool = False, **conf: str
) -> dict[int, Any]:
    """The TOKEN nodes (by id) of a filtered, joined, grouped job over ``path``; the run
    marker's source files under the key ``"files"``."""
    before = {k: spark.conf.get(k) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        emitter = MemoryEmitter(spark)
        with ProvenanceSession(
            spark, "positions", values="all", emitter=emitter, capture=capture, run_id="same-run"
        ) as prov:
            read = spark.read.parquet(path)
            read = read.repartition(7).sortWithinPartitions("cust") if shuffled else read
            orders = prov.source(read.filter("amt % 2 = 0"), "Orders")
            custs = prov.source(
                spark.range(17).select(F.col("id").alias("cust"), F.lit("x").alias("c")), "Custs"
            )
            totals = orders.join(custs, "cust").groupBy("c").agg(F.sum("amt").alias("s"))
            totals.named("Totals").collect()
    finally:
        for k, v in before.items():
            spark.conf.set(k, v)
    nodes = {
        n["id"]: n
        for _, value in emitter.messages()
        if isinstance(event := decode(value), Batch)
        for n in event.expanded().rows()
    }
    (done,) = [e for _, v in emitter.messages() if isinstance(e := decode(v), RunComplete)]
    tokens: dict[Any, Any] = {i: n for i, n in nodes.items() if n["op"] == "TOKEN"}
    tokens["files"] = {f.relation: f.files for f in done.source_files}
    return tokens


def _orders(tokens: dict[Any, Any]) -> dict[int, Any]:
    return {i: n for i, n in tokens.items() if i != "files" and n["label"].startswith("Orders#")}


def test_the_same_rows_get_the_same_labels_and_ids_however_spark_splits_the_files(
    spark: SparkSession, orders: str
) -> None:
    whole = _orders(_tokens(spark, orders, "jvm"))
    split = _orders(_tokens(spark, orders, "jvm", **{"spark.sql.files.maxPartitionBytes": "2000"}))
    assert spark.conf.get("spark.sql.files.maxPartitionBytes") != "2000"
    assert len(whole) == 1500
    assert whole == split
    assert whole == _orders(_tokens(spark, orders, "jvm", shuffled=True))  # before the source
    # The files split apart: the plain read has more partitions, so partition and offset
    # (monotonically_increasing_id) would have changed.
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2000")
    try:
        many = spark.read.parquet(orders).rdd.getNumPartitions()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert many > spark.read.parquet(orders).rdd.getNumPartitions()


def test_a_label_is_the_files_ordinal_and_the_rows_index_in_it(
    spark: SparkSession, orders: str
) -> None:
    df = spark.read.parquet(orders)
    files = sorted(df.inputFiles())
    keys = [file_key(f) for f in files]
    where = {
        r["oid"]: f"Orders#{keys.index(file_key(r['file_path']))}.{r['row_index']}"
        for r in df.select("oid", "_metadata.file_path", "_metadata.row_index").collect()
    }
    captured = _tokens(spark, orders, "jvm")
    assert captured["files"] == {"Orders": tuple(files)}  # Custs: in memory, no files
    tokens = _orders(captured)
    assert {n["label"] for n in tokens.values()} == {
        where[int(n["props"]["a_oid"])] for n in tokens.values()
    }
    assert len({int(n["label"].split("#")[1].split(".")[0]) for n in tokens.values()}) > 1


def test_both_capture_paths_and_both_evaluation_paths_agree(
    spark: SparkSession, orders: str
) -> None:
    jvm = _tokens(spark, orders, "jvm")
    assert _tokens(spark, orders, "python") == jvm
    interpreted = {
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    }
    assert _tokens(spark, orders, "jvm", **interpreted) == jvm


def test_partition_positions_when_the_session_says_so(spark: SparkSession, orders: str) -> None:
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(
        spark, "positions", values="all", emitter=emitter, source_positions="partition"
    ) as prov:
        prov.source(spark.read.parquet(orders), "Orders").named("Out").collect()
    events = [decode(v) for _, v in emitter.messages()]
    (done,) = [e for e in events if isinstance(e, RunComplete)]
    assert done.source_files == ()
    labels = {
        n["label"]
        for e in events
        if isinstance(e, Batch)
        for n in e.expanded().rows()
        if n["op"] == "TOKEN"
    }
    ids = spark.read.parquet(orders).select(F.monotonically_increasing_id().alias("m"))
    assert labels == {f"Orders#{r.m >> 33}.{r.m & ((1 << 33) - 1)}" for r in ids.collect()}


def test_sources_without_a_row_index_keep_partition_and_offset(
    spark: SparkSession, orders: str, tmp_path: Path
) -> None:
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "positions", values="all", emitter=emitter) as prov:
        parquet = spark.read.parquet(orders)
        assert file_positions(prov.capture, parquet.filter("oid > 3").select("amt")) is not None
        assert file_positions(prov.capture, parquet.sample(False, 0.5, seed=1)) is not None
        spark.range(5).write.csv(str(tmp_path / "csv"))
        kept = {
            "csv (no row index)": spark.read.csv(str(tmp_path / "csv")),
            "in memory": spark.range(5),
            "a join (a file row in many rows)": parquet.join(spark.range(3).toDF("oid"), "oid"),
            "an explode": parquet.select(F.explode(F.array("oid", "amt")).alias("x")),
            "a sample with replacement": parquet.sample(True, 0.5, seed=1),
            "a union of two scans": parquet.union(parquet),
            "an aggregate": parquet.groupBy("cust").count(),
            "a column named _metadata": parquet.withColumn("_metadata", F.lit(1)),
        }
        for why, df in kept.items():
            assert file_positions(prov.capture, df) is None, why


def test_a_file_outside_the_list_fails_naming_it(spark: SparkSession, orders: str) -> None:
    from capture_agent.jvm import JvmTaps

    df = spark.read.parquet(orders)
    path, row = F.col("_metadata.file_path"), F.col("_metadata.row_index")
    others = ["file:///elsewhere/part-0.parquet"]
    for position in (
        JvmTaps(spark).source_position(path, row, others),
        position_in_spark(path, row, tuple(others)),
    ):
        with pytest.raises(Exception, match="is not one of the 1 files"):
            df.select(position.alias("p")).collect()


def test_sql_over_files_is_positioned_and_named_by_its_path(
    spark: SparkSession, orders: str, tmp_path: Path
) -> None:
    folder = tmp_path / "customers"
    spark.range(17).select(F.col("id").alias("cust"), F.lit("n").alias("name")).write.parquet(
        str(folder)
    )
    spark.read.parquet(orders).createOrReplaceTempView("orders_view")
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "positions", values="all", emitter=emitter) as prov:
        query = spark.sql("SELECT cust, count(*) AS n FROM orders_view GROUP BY cust").join(
            spark.read.parquet(str(folder)), "cust"
        )
        prov.tracked(query).named("Out").collect()
    events = [decode(v) for _, v in emitter.messages()]
    (done,) = [e for e in events if isinstance(e, RunComplete)]
    listed = {f.relation: f.files for f in done.source_files}
    assert listed.keys() == {"orders_view", "customers"}
    assert listed["orders_view"] == tuple(sorted(spark.read.parquet(orders).inputFiles()))
    labels = {
        n["label"]
        for e in events
        if isinstance(e, Batch)
        for n in e.expanded().rows()
        if n["op"] == "TOKEN"
    }
    by_relation = {label.split("#")[0] for label in labels}
    assert by_relation == {"orders_view", "customers"}
    index = {
        (r["file_path"], r["row_index"])
        for r in spark.read.parquet(orders)
        .select("_metadata.file_path", "_metadata.row_index")
        .collect()
    }
    keys = [file_key(f) for f in listed["orders_view"]]
    assert {label for label in labels if label.startswith("orders_view#")} == {
        f"orders_view#{keys.index(file_key(p))}.{r}" for p, r in index
    }


def test_files_are_ordered_as_java_orders_strings() -> None:
    # UTF-16 code units: a surrogate pair (U+D83D...) sorts before U+FFFD, where code points
    # would put U+1F600 after it; both capture paths must give a file the same ordinal.
    assert java_sorted(["b", "a\ufffd", "a\U0001f600"]) == ("a\U0001f600", "a\ufffd", "b")
    assert sorted(["a\ufffd", "a\U0001f600"]) == ["a\ufffd", "a\U0001f600"]
