"""sparkprov.workflow: canonical DAGs, version ids, the edit between versions, and the DAG's
round trip through the run-complete marker."""

from __future__ import annotations

import json

import pytest

from sparkprov.events import MalformedEvent, RunComplete, decode, encode_run_complete
from sparkprov.v1 import lineage_pb2
from sparkprov.workflow import DagBuilder, WorkflowDag, diff

TWEET = [("tid", "bigint"), ("text", "string"), ("location", "string")]
STATE = [("location", "string"), ("state", "string")]
JOINED = [("location", "string"), ("tid", "bigint"), ("text", "string"), ("state", "string")]


def figure(version: str, order: str = "tweets first") -> WorkflowDag:
    """Version a, b (CA filter before the join) or c (after it, one branch only)."""
    dag = DagBuilder()
    if order == "tweets first":
        t = dag.add("source", {"relation": "tweet"}, [], TWEET)
        s = dag.add("source", {"relation": "state"}, [], STATE)
    else:
        s = dag.add("source", {"relation": "state"}, [], STATE)
        t = dag.add("source", {"relation": "tweet"}, [], TWEET)
    if version == "b":
        s = dag.add("filter", {"predicate": "(state = 'CA')"}, [s], STATE)
    j = dag.add("join", {"how": "inner", "on": '["location"]'}, [t, s], JOINED)
    branch = j
    if version == "c":
        branch = dag.add("filter", {"predicate": "(state = 'CA')"}, [j], JOINED)
    dag.add("named", {"relation": "scatter"}, [branch], JOINED)
    counted = dag.add(
        "aggregate",
        {"keys": '["state"]', "aggregates": '["state", "count(1) AS n"]'},
        [j],
        [("state", "string"), ("n", "bigint")],
    )
    dag.add("named", {"relation": "map"}, [counted], [("state", "string"), ("n", "bigint")])
    return dag.dag()


def test_same_pipeline_written_twice_is_one_version() -> None:
    assert figure("a").version_id == figure("a", order="states first").version_id
    assert figure("a").to_json() == figure("a", order="states first").to_json()
    assert len({figure(v).version_id for v in "abc"}) == 3


def test_a_parameter_changes_the_version() -> None:
    one = DagBuilder()
    one.add("filter", {"predicate": "(x > 1)"}, [one.add("source", {"relation": "r"}, [])])
    other = DagBuilder()
    other.add("filter", {"predicate": "(x > 2)"}, [other.add("source", {"relation": "r"}, [])])
    assert one.dag().version_id != other.dag().version_id
    edit = diff(one.dag(), other.dag())
    assert [(a.param("predicate"), b.param("predicate")) for a, b in edit.changed] == [
        ("(x > 1)", "(x > 2)")
    ]
    assert not edit.added and not edit.removed


def test_edit_of_an_added_and_a_moved_filter() -> None:
    a, b, c = figure("a"), figure("b"), figure("c")
    a_b = diff(a, b)
    assert [o.describe() for o in a_b.added] == ["filter(predicate=(state = 'CA'))"]
    assert not a_b.removed and not a_b.changed
    assert len(a_b.links_added) == 2 and len(a_b.links_removed) == 1
    b_c = diff(b, c)
    assert not b_c.added and not b_c.removed and not b_c.changed
    assert [x.param("predicate") for x, _ in b_c.moved] == ["(state = 'CA')"]
    assert diff(a, a).empty
    assert not diff(a, b).empty


def test_sinks_ancestors_and_json_round_trip() -> None:
    c = figure("c")
    scatter = c.sink("scatter")
    assert scatter is not None and c.sink("nope") is None
    kinds = sorted(c.by_id()[i].kind for i in c.ancestors(scatter.id))
    assert kinds == ["filter", "join", "named", "source", "source"]
    assert WorkflowDag.from_json(c.to_json()) == WorkflowDag(c.ops, c.sinks)
    assert json.loads(c.to_json())["sinks"].keys() == {"scatter", "map", "tweet", "state"}


def test_version_travels_in_the_run_complete_marker() -> None:
    dag = figure("b")
    event = decode(encode_run_complete("run1", "wf", 3, 2, version=dag))
    assert isinstance(event, RunComplete)
    assert event.version is not None and event.version.version_id == dag.version_id
    assert event.version.to_json() == dag.to_json()
    plain = decode(encode_run_complete("run1", "wf", 3, 2))
    assert isinstance(plain, RunComplete) and plain.version is None


def test_a_tampered_version_is_malformed() -> None:
    message = lineage_pb2.LineageEvent()
    message.ParseFromString(encode_run_complete("run1", "wf", 1, 1, version=figure("a")))
    message.run_complete.version.operators[0].params["predicate"] = "(x > 0)"
    with pytest.raises(MalformedEvent, match="version_id"):
        decode(message.SerializeToString())
    message.run_complete.version.operators[0].inputs.append("missing")
    with pytest.raises(MalformedEvent, match="unknown ids"):
        decode(message.SerializeToString())
