"""Workflow versions on the real stack (Drove's Figure 1): capture -> Kafka -> ingest -> Neo4j ->
the version RPCs. Version a labels climate tweets, joins them with their state and feeds a
wordcloud, a scatterplot (unrelated tweets, unnested coordinates) and a choropleth (related
tweets counted by state); b adds ``filter state = CA`` before the join; c moves it after the
join, to the scatterplot branch only; d swaps the labelling UDF."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from typing import Any

import grpc
import pytest

from capture_agent import ProvenanceSession
from sparkprov.client import QueryClient
from sparkprov.query_errors import InvalidArgument, NotFound, QueryError
from sparkprov.query_model import Equivalence, Verdict

CITIES = {"LA": "CA", "SF": "CA", "NYC": "NY", "Austin": "TX", "Seattle": "WA"}
WORDS = ["climate", "wildfire", "rain", "heat", "flood", "sun", "policy"]


def _tweets(spark: Any) -> tuple[Any, Any]:
    rng = random.Random(17)
    rows = []
    for tid in range(80):
        words = rng.sample(WORDS, 3)
        city = rng.choice(sorted(CITIES))
        rows.append((tid, " ".join(words), city, f"{rng.randint(0, 9)},{rng.randint(0, 9)}"))
    # Related and unrelated tweets in and out of California, whatever the draw.
    for tid, text, city in [
        (100, "climate wildfire", "LA"),
        (101, "climate wildfire", "Austin"),
        (102, "climate rain", "SF"),
        (103, "climate sun", "NYC"),
    ]:
        rows.append((tid, text, city, "1,2"))
    tweets = spark.createDataFrame(rows, "tid long, text string, location string, coords string")
    states = spark.createDataFrame(sorted(CITIES.items()), "location string, state string")
    return tweets, states


def _run(spark: Any, workflow: str, version: str) -> tuple[str, str, dict[str, list[Any]]]:
    from pyspark.sql import functions as F

    @F.udf("int")
    def label(text):  # type: ignore[no-untyped-def]  # no hints: Spark would infer an Arrow UDF
        return 1 if "wildfire" in text else 0

    @F.udf("int")
    def label_heat(text):  # type: ignore[no-untyped-def]
        return 1 if "heat" in text else 0

    tweets, states = _tweets(spark)
    with ProvenanceSession(spark, workflow) as prov:
        t = prov.source(tweets, "tweet")
        s = prov.source(states, "state_table")
        climate = t.filter(F.col("text").rlike("climate"))
        wordcloud = climate.select("tid", "text").named("wordcloud")
        labelled = climate.withColumn(
            "label", (label_heat if version == "d" else label)(F.col("text"))
        )
        if version == "b":
            s = s.filter(F.col("state") == "CA")
        joined = labelled.join(s, on="location")
        branch = joined.filter("state = 'CA'") if version == "c" else joined
        scatter = (
            branch.filter(F.col("label") == 0)
            .select("tid", "location", F.explode(F.split("coords", ",")).alias("coordinate"))
            .named("scatterplot")
        )
        choropleth = (
            joined.filter(F.col("label") == 1)
            .groupBy("state")
            .agg(F.count("*").alias("tweets"))
            .named("choropleth")
        )
        rows = {
            "wordcloud": wordcloud.collect(),
            "scatterplot": scatter.collect(),
            "choropleth": choropleth.collect(),
        }
    return prov.run_id, prov.version_id, rows


@pytest.fixture(scope="module")
def versions(spark, client) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    workflow = f"drove-{uuid.uuid4().hex[:8]}"
    out: dict[str, Any] = {"workflow": workflow, "runs": {}, "ids": {}, "rows": {}}
    for name in ("a", "a2", "b", "c", "d"):
        run_id, version_id, rows = _run(spark, workflow, name[0])
        client.wait_for_run(run_id)
        out["runs"][name], out["ids"][name], out["rows"][name] = run_id, version_id, rows
    return out


def _bag(rows: list[Any]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in rows)


def test_same_pipeline_twice_is_one_version(versions, client) -> None:  # type: ignore[no-untyped-def]
    ids = versions["ids"]
    assert ids["a"] == ids["a2"]
    assert len({ids["a"], ids["b"], ids["c"], ids["d"]}) == 4
    listed = client.list_versions(versions["workflow"])
    assert [v.version_id for v in listed] == [ids["a"], ids["b"], ids["c"], ids["d"]]
    assert [v.seq for v in listed] == [1, 2, 3, 4]
    assert {v.workflow for v in listed} == {versions["workflow"]}
    runs = versions["runs"]
    assert sorted(listed[0].run_ids) == sorted([runs["a"], runs["a2"]])
    assert listed[2].run_ids == (runs["c"],)
    assert set(listed[0].sinks) >= {"wordcloud", "scatterplot", "choropleth"}


def test_versions_stored_once_with_edits(versions, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    records, _, _ = neo4j_driver.execute_query(
        "MATCH (v:Version)-[:OF]->(:Workflow {name: $w}) "
        "OPTIONAL MATCH (v)-[e:NEXT]->(n:Version) "
        "WITH v, n, e ORDER BY v.seq "
        "RETURN v.id AS v, n.id AS next, e.added AS added",
        w=versions["workflow"],
    )
    ids = versions["ids"]
    assert [(r["v"], r["next"]) for r in records] == [
        (ids["a"], ids["b"]),
        (ids["b"], ids["c"]),
        (ids["c"], ids["d"]),
        (ids["d"], None),
    ]
    assert records[0]["added"] == ["filter(predicate=(state = 'CA'))"]


def test_diff_versions(versions, client) -> None:  # type: ignore[no-untyped-def]
    ids, workflow = versions["ids"], versions["workflow"]
    a_b = client.diff_versions(workflow, ids["a"], ids["b"])
    assert [(o.kind, o.params) for o in a_b.added] == [("filter", {"predicate": "(state = 'CA')"})]
    assert not a_b.removed and not a_b.changed
    # state_table -> join is cut; state_table -> filter -> join is added
    assert len(a_b.links_removed) == 1 and len(a_b.links_added) == 2
    b_c = client.diff_versions(workflow, ids["b"], ids["c"])
    # the filter moved: the same operator, other links
    assert not b_c.added and not b_c.removed and not b_c.changed
    assert "(state = 'CA')" in [m.before.params.get("predicate") for m in b_c.moved]
    assert len(b_c.links_removed) == 3 and len(b_c.links_added) == 3
    a_d = client.diff_versions(workflow, ids["a"], ids["d"])
    assert [(x.before.kind, x.after.kind) for x in a_d.changed] == [("with_column", "with_column")]
    assert "label_heat" in a_d.changed[0].after.params["udfs"]


def _check(client: QueryClient, versions: dict[str, Any], a: str, b: str, sink: str) -> Equivalence:
    ids = versions["ids"]
    return client.check_equivalence(versions["workflow"], ids[a], ids[b], sink)


def test_figure_1_equivalences(versions, client) -> None:  # type: ignore[no-untyped-def]
    rows = versions["rows"]
    wordcloud = _check(client, versions, "a", "c", "wordcloud")
    assert wordcloud.verdict == Verdict.EQUIVALENT and wordcloud.method == "identical"
    assert _bag(rows["a"]["wordcloud"]) == _bag(rows["c"]["wordcloud"])

    choropleth = _check(client, versions, "b", "c", "choropleth")
    assert choropleth.verdict == Verdict.NOT_EQUIVALENT, choropleth.reason
    assert choropleth.counterexample
    assert _bag(rows["b"]["choropleth"]) != _bag(rows["c"]["choropleth"])

    # The explode above the join does not block: the covering segment below it is proven.
    scatter = _check(client, versions, "b", "c", "scatterplot")
    assert scatter.verdict == Verdict.EQUIVALENT, scatter.reason
    assert scatter.method == "smt"
    assert {o.kind for o in scatter.segment_a} == {"filter", "join"}
    assert _bag(rows["b"]["scatterplot"]) == _bag(rows["c"]["scatterplot"])


def test_unknown_where_the_verifier_cannot_decide(versions, client) -> None:  # type: ignore[no-untyped-def]
    # a vs c scatterplot: the segments differ, but the explode above them may hide it.
    scatter = _check(client, versions, "a", "c", "scatterplot")
    assert scatter.verdict == Verdict.UNKNOWN
    assert "generate" in scatter.reason or "project" in scatter.reason
    # a vs d: the changed UDF is inside the segment.
    udf = _check(client, versions, "a", "d", "choropleth")
    assert udf.verdict == Verdict.UNKNOWN
    assert "UDF label" in udf.reason


def test_compare_results(versions, client) -> None:  # type: ignore[no-untyped-def]
    runs, rows = versions["runs"], versions["rows"]
    answer = client.compare_results(runs["a"], "choropleth", runs["b"], "choropleth")
    only_a = {r.attributes["state"]: r for r in answer.only_a}
    both = {r.attributes["state"] for r in answer.both}
    expected_a = {r["state"] for r in rows["a"]["choropleth"]}
    assert both == {"CA"} and set(only_a) == expected_a - {"CA"}
    assert not answer.only_b
    for state, row in only_a.items():
        assert (row.count_a, row.count_b) == (1, 0) and len(row.node_ids) == 1
        relations = {n.relation for n in row.sources}
        assert relations == {"tweet", "state_table"}
        assert {n.attributes["state"] for n in row.sources if n.relation == "state_table"} == {
            state
        }
        # the row vanished because of b's new filter, which lies on its path
        assert [(o.kind, o.params["predicate"]) for o in row.edit_operators] == [
            ("filter", "(state = 'CA')")
        ]
    same = client.compare_results(runs["b"], "scatterplot", runs["c"], "scatterplot")
    assert not same.only_a and not same.only_b
    assert sum(r.count_a for r in same.both) == len(rows["b"]["scatterplot"])


def test_versions_of(versions, client) -> None:  # type: ignore[no-untyped-def]
    runs, ids = versions["runs"], versions["ids"]
    found = client.find_nodes(runs["a"], "scatterplot", limit=1000)
    by_state: dict[bool, Any] = {}
    for node in found:
        by_state.setdefault(CITIES[node.attributes["location"]] == "CA", node)
    answer = client.versions_of([by_state[True].id, by_state[False].id])
    results = {r.node_id: r for r in answer}
    in_ca = {v.version_id: set(v.run_ids) for v in results[by_state[True].id].versions}
    elsewhere = {v.version_id: set(v.run_ids) for v in results[by_state[False].id].versions}
    # a CA row of version a's scatterplot is also in b's and c's (d labels differently)
    assert {ids["a"], ids["b"], ids["c"]} <= set(in_ca)
    assert in_ca[ids["a"]] == {runs["a"], runs["a2"]}
    # a row from elsewhere only in version a's (and maybe d's)
    assert ids["a"] in elsewhere and ids["b"] not in elsewhere and ids["c"] not in elsewhere
    assert results[by_state[True].id].relation == "scatterplot"


INVALID, MISSING = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    ("call", "code", "error"),
    [
        (lambda c: c.list_versions(""), INVALID, InvalidArgument),
        (lambda c: c.diff_versions("nope", "x", "y"), MISSING, NotFound),
        (lambda c: c.versions_of(["x!"]), INVALID, InvalidArgument),
        (lambda c: c.versions_of(["12345"]), MISSING, NotFound),
        (lambda c: c.compare_results("nope", "r", "nope"), MISSING, NotFound),
        (lambda c: c.compare_results("nope", "", ""), INVALID, InvalidArgument),
        (lambda c: c.check_equivalence("w", "a", "b", ""), INVALID, InvalidArgument),
    ],
    ids=[
        "ListVersions-no-workflow",
        "DiffVersions-unknown",
        "VersionsOf-malformed-id",
        "VersionsOf-unknown-id",
        "CompareResults-unknown-run",
        "CompareResults-no-relation",
        "CheckEquivalence-no-sink",
    ],
)
def test_bad_requests(client, call, code, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QueryError) as info:
        call(client)
    assert info.value.code == code, info.value.details
    assert type(info.value) is error and isinstance(info.value.__cause__, grpc.RpcError)


def test_bad_sink_and_run(versions, client) -> None:  # type: ignore[no-untyped-def]
    ids, runs = versions["ids"], versions["runs"]
    with pytest.raises(NotFound):
        client.check_equivalence(versions["workflow"], ids["a"], ids["b"], "nope")
    with pytest.raises(NotFound):
        client.compare_results(runs["a"], "nope", runs["b"], "choropleth")


def test_a_redelivered_marker_changes_nothing(versions, stack, neo4j_driver) -> None:  # type: ignore[no-untyped-def]
    from kafka import KafkaProducer

    from sparkprov import defaults
    from sparkprov.events import encode_run_complete
    from sparkprov.workflow import WorkflowDag

    from .kafka_tools import wait_group_caught_up

    count = (
        "MATCH (v:Version)-[:OF]->(:Workflow {name: $w}) "
        "OPTIONAL MATCH (r:Run)-[:OF_VERSION]->(v) OPTIONAL MATCH (v)-[e:NEXT]->() "
        "RETURN count(DISTINCT v) AS versions, count(DISTINCT r) AS runs, "
        "count(DISTINCT e) AS edits, collect(DISTINCT v.seq) AS seqs"
    )
    before = neo4j_driver.execute_query(count, w=versions["workflow"]).records[0].data()
    run_id = versions["runs"]["c"]
    run = neo4j_driver.execute_query(
        "MATCH (r:Run {run_id: $r})-[:OF_VERSION]->(v:Version) "
        "RETURN r.expected_nodes AS nodes, r.expected_edges AS edges, v.dag AS dag",
        r=run_id,
    ).records[0]
    marker = encode_run_complete(
        run_id,
        versions["workflow"],
        run["nodes"],
        run["edges"],
        version=WorkflowDag.from_json(run["dag"]),
    )
    bootstrap = stack.settings.kafka_bootstrap
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(defaults.TOPIC, key=run_id.encode(), value=marker).get(timeout=30)
    producer.close()
    wait_group_caught_up(bootstrap, "sparkprov-ingest", defaults.TOPIC)
    after = neo4j_driver.execute_query(count, w=versions["workflow"]).records[0].data()
    assert after == before
    assert before["versions"] == 4 and before["runs"] == 5 and before["edits"] == 3
