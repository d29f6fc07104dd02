"""capture_agent.workflow_dag on a local Spark, no broker (MemoryEmitter): what a run records of
its workflow DAG, and that the same pipeline written twice is one version."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from capture_agent import ProvenanceSession
from capture_agent.emitters import MemoryEmitter
from sparkprov.events import RunComplete, decode
from sparkprov.workflow import WorkflowDag

SPARK_CORES = 1


def _capture(spark: Any, build: Callable[[Any], None], **kwargs: Any) -> tuple[WorkflowDag, Any]:
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "wf", emitter=emitter, capture="python", **kwargs) as prov:
        build(prov)
    return prov.workflow_dag(), emitter


def _people(spark: Any) -> Any:
    return spark.createDataFrame([(1, "NY", 30), (2, "LA", 40)], "id long, city string, age int")


def test_the_same_pipeline_twice_is_one_version_and_travels(spark: Any) -> None:
    from pyspark.sql import functions as F

    def with_column(prov: Any) -> None:
        people = prov.source(_people(spark), "people")
        people.filter(F.col("age") > 25).groupBy("city").agg(F.avg("age").alias("a")).named(
            "avg"
        ).collect()

    def with_text(prov: Any) -> None:
        people = prov.source(_people(spark), "people")
        kept = people.where("age > 25").cache()  # cache is not an operator of the DAG
        kept.groupBy("city").agg(F.avg(F.col("age")).alias("a")).named("avg").collect()

    one, emitter = _capture(spark, with_column)
    two, _ = _capture(spark, with_text)
    assert one.version_id == two.version_id
    kinds = sorted(o.kind for o in one.operators)
    assert kinds == ["aggregate", "filter", "named", "source"]
    (predicate,) = [o.param("predicate") for o in one.operators if o.kind == "filter"]
    assert predicate == "(age > 25)"
    (aggregate,) = [o for o in one.operators if o.kind == "aggregate"]
    assert aggregate.param("keys") == '["city"]'
    assert "avg(age) AS a" in aggregate.param("aggregates")
    markers = [decode(value) for _, value in emitter.messages()]
    done = [m for m in markers if isinstance(m, RunComplete)]
    assert len(done) == 1 and done[0].version is not None
    assert done[0].version.to_json() == one.to_json()


def test_udfs_are_recorded_by_name_and_code(spark: Any) -> None:
    from pyspark.sql import functions as F

    def labeller(threshold: int) -> Any:
        if threshold == 1:

            @F.udf("int")
            def label(age):  # type: ignore[no-untyped-def]
                return 1 if age > 35 else 0

        else:

            @F.udf("int")
            def label(age):  # type: ignore[no-untyped-def]
                return 1 if age > 35 else 0

        return label

    @F.udf("int")
    def label(age):  # type: ignore[no-untyped-def]
        return 1 if age > 20 else 0

    def build(udf: Any) -> Callable[[Any], None]:
        def run(prov: Any) -> None:
            prov.source(_people(spark), "people").withColumn("l", udf(F.col("age"))).named(
                "labelled"
            ).collect()

        return run

    first, _ = _capture(spark, build(labeller(1)))
    again, _ = _capture(spark, build(labeller(2)))  # the same code, written elsewhere
    other, _ = _capture(spark, build(label))
    assert first.version_id == again.version_id != other.version_id
    (step,) = [o for o in first.operators if o.kind == "with_column"]
    assert step.param("columns") == '["label(age) AS l"]'
    assert step.param("udfs").startswith('[["label", ')


def test_generators_record_their_own_sql(spark: Any) -> None:
    from pyspark.sql import functions as F

    def build(prov: Any) -> None:
        people = prov.source(_people(spark), "people")
        people.select("id", F.explode(F.array("city", "city")).alias("c")).collect()

    dag, _ = _capture(spark, build)
    (projection,) = [o for o in dag.operators if o.kind == "project"]
    assert "explode(array(city, city)) AS c" in projection.param("columns")


def test_the_kill_switch_records_nothing(spark: Any) -> None:
    from pyspark.sql import functions as F

    def build(prov: Any) -> None:
        prov.source(_people(spark), "people").filter(F.col("age") > 1).collect()

    dag, emitter = _capture(spark, build, enabled=False)
    assert not dag.operators
    assert not emitter.messages()


def _projections(spark: Any, prov: Any) -> None:
    """Projections of every kind the workflow DAG records: names, ``*``, SQL text, a Python UDF
    (twice, once nested), a generator, a ranking window, a filter and a group."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    @F.udf("int")
    def bucket(age):  # type: ignore[no-untyped-def]
        return age // 10

    people = prov.source(_people(spark), "people")
    people = people.select("*", (F.col("age") + 1).alias("next"))
    people = people.selectExpr("id", "city", "age", "next", "next * 2 AS twice")
    people = people.withColumn("b", F.coalesce(bucket(F.col("age")), F.lit(0)) + bucket("next"))
    people = people.withColumn("r", F.rank().over(Window.partitionBy("city").orderBy("age")))
    people = people.select("id", "b", "r", F.explode(F.array("city", "city")).alias("c"))
    people.filter(F.col("b") > 1).groupBy("c").agg(F.sum("r").alias("s")).named("out").collect()


def test_the_jar_records_the_workflow_the_python_reference_records(spark: Any) -> None:
    """With the capture jar, a projection's SQL and UDFs come from io.sparkprov.capture.PlanFacts
    in one py4j call; the Python walk (capture="python") is the reference, operator by
    operator."""
    reference, _ = _capture(spark, lambda prov: _projections(spark, prov))
    emitter = MemoryEmitter(spark)
    with ProvenanceSession(spark, "wf", emitter=emitter, capture="jvm") as prov:
        _projections(spark, prov)
    jar = prov.workflow_dag()
    assert [(o.kind, o.params) for o in jar.operators] == [
        (o.kind, o.params) for o in reference.operators
    ]
    assert jar.version_id == reference.version_id
    (udf_step,) = [o for o in jar.operators if o.param("columns").startswith('["(coalesce(')]
    assert [name for name, _ in json.loads(udf_step.param("udfs"))] == ["bucket", "bucket"]


def test_the_jars_projection_facts_equal_the_python_walk(spark: Any) -> None:
    """PlanFacts.projection against capture_agent.plans' walk over py4j: the nodes a projection
    adds (a scalar subquery's plan included, as treeString prints it) and its Python UDFs."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from capture_agent.jvm import JvmTaps
    from capture_agent.plans import projection_facts

    @F.udf("int")
    def twice(age):  # type: ignore[no-untyped-def]
        return age * 2

    people = _people(spark)
    people.createOrReplaceTempView("wf_people")
    projections = [
        people.select("id"),
        people.withColumn("t", twice("age")),
        people.select(F.explode(F.array(twice("age"), F.col("age"))).alias("e")),
        people.withColumn("r", F.rank().over(Window.orderBy("age"))).withColumn("u", twice("r")),
        people.selectExpr("id", "(SELECT max(age) FROM wf_people) AS m"),
    ]
    jvm = JvmTaps(spark)
    before = people._jdf.queryExecution().analyzed()
    kinds = ("Aggregate", "Generate", "Window", "Project")
    found = []
    for after_df in projections:
        after = after_df._jdf.queryExecution().analyzed()
        facts, reference = jvm.projection_facts(before, after), projection_facts(before, after)
        counts = reference["added"]
        expected = {k: counts[k] for k in kinds if counts.get(k, 0) > 0}
        assert {k: v for k, v in facts["added"].items() if k in kinds} == expected
        assert facts["udfs"] == reference["udfs"]
        found.append(facts)
    assert [f["udfs"] for f in found] == [[], ["twice"], ["twice"], ["twice"], []]
    assert found[2]["added"]["Generate"] == 1 and found[3]["added"]["Window"] == 1
    assert found[4]["added"]["Aggregate"] == 1  # the subquery's, which treeString prints too


def test_the_jars_visible_then_id_equals_the_python_reference(spark: Any) -> None:
    """JvmTaps.visible_then_id against capture_agent.frame.visible_then_id: hidden columns
    dropped, the id moved last, repeated visible names (a join's) kept in their places."""
    from capture_agent.frame import visible_then_id
    from capture_agent.jvm import JvmTaps

    left = spark.createDataFrame([(1, "a", 10, 7)], "k long, v string, __sp_id long, __sp_x int")
    right = spark.createDataFrame([(1, "b")], "k long, v string")
    frames = [
        left,  # the id in the middle, another hidden column last
        left.join(right, "k").select(left["v"], "__sp_id", right["v"], "k"),  # repeated names
        left.select("k", "v", "__sp_id"),  # already in order
    ]
    jvm = JvmTaps(spark)
    for df in frames:
        expected = visible_then_id(df)
        got = jvm.visible_then_id(df)
        assert got.columns == expected.columns
        assert got.columns[-1] == "__sp_id" and "__sp_x" not in got.columns
        assert [tuple(r) for r in got.collect()] == [tuple(r) for r in expected.collect()]
    assert jvm.visible_then_id(frames[1]).columns == ["v", "v", "k", "__sp_id"]
