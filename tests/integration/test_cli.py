"""The ``sparkprov`` command against the real stack after a captured run of examples/people.py:
every command's output, the tree identical to the demo's rendering, one-line errors with the
gRPC status and their exit codes (a bad id, an unknown id, an unreachable server)."""

from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner, Result
from prov.model import ProvDerivation, ProvDocument, ProvEntity

from sparkprov import prov_export
from sparkprov.cli import main
from sparkprov.client import render_trace
from sparkprov.query_model import Trace


@pytest.fixture(scope="module")
def people(people_run, client):  # type: ignore[no-untyped-def]
    run_id, _, _ = people_run
    (ny,) = client.find_nodes(run_id, "AvgAge", {"City": "NY"})
    (steve,) = client.find_nodes(run_id, "Person1", {"Name": "Steve"})
    return {"run": run_id, "ny": ny.id, "steve": steve.id}


@pytest.fixture(scope="module")
def cli(stack):  # type: ignore[no-untyped-def]
    def invoke(*args: str, address: str = stack.settings.grpc_addr) -> Result:
        return CliRunner().invoke(main, ["--address", address, *args])

    return invoke


def test_runs_and_find(cli, people) -> None:  # type: ignore[no-untyped-def]
    result = cli("runs", "--workflow", "people")
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.stdout.splitlines() if x.startswith(people["run"])]
    assert line.split()[1:4] == ["people", "COMPLETE", "nodes=17/17"]
    assert cli("runs", "--workflow", "no-such-workflow").stdout == ""
    found = cli("find", people["run"], "Person1", "City=NY", "Age=30")
    assert found.exit_code == 0
    (row,) = found.stdout.splitlines()
    assert row.startswith(people["steve"] + "  [TOKEN] Person1")
    assert "Name=Steve" in row
    rows = cli("find", people["run"], "Person1", "City=NY", "--json").stdout.splitlines()
    assert sorted(json.loads(r)["attributes"]["Name"] for r in rows) == ["Mark", "Mary", "Steve"]
    assert json.loads(rows[0])["op"] == "TOKEN"
    bad = cli("find", people["run"], "Person1", "City")
    assert bad.exit_code == 2 and "col=value" in bad.output


def test_trace_tree_is_the_demo_rendering(cli, client, people) -> None:  # type: ignore[no-untyped-def]
    result = cli("trace", "back", people["ny"])
    assert result.exit_code == 0, result.output
    demo = render_trace(client.backward_trace([people["ny"]]), people["ny"])
    assert result.stdout == demo + "\n"
    assert result.stdout.splitlines()[0] == "[DELTA] AvgAge δ  Age=35.0 City=NY"
    assert "<- [TOKEN] Person1 Person1#0.0  Age=30 City=NY Name=Steve" in result.stdout
    # a negative id is an argument, not an option; depth and strategy reach the server
    one = cli("trace", "forward", people["steve"], "--depth", "1", "--strategy", "recursive")
    assert one.exit_code == 0, one.output
    assert one.stdout.splitlines() == [
        "[TOKEN] Person1 Person1#0.0  Age=30 City=NY Name=Steve",
        "    -> [PLUS] Person2 +  Age=30 City=NY Name=Steve",
    ]


def test_trace_formats(cli, client, people) -> None:  # type: ignore[no-untyped-def]
    trace = client.backward_trace([people["ny"]])
    data = json.loads(cli("trace", "back", people["ny"], "--format", "json").stdout)
    assert [n["id"] for n in data["nodes"]] == [n.id for n in trace.nodes]
    assert {(e["src"], e["dst"]) for e in data["edges"]} == {(e.src, e.dst) for e in trace.edges}
    assert data["nodes"][0]["op"] == "DELTA" and data["stats"]["strategy"] != "AUTO"
    dot = cli("trace", "back", people["ny"], "--format", "dot").stdout
    assert dot.startswith("digraph trace {") and dot.count(" -> ") == len(trace.edges)
    provn = cli("trace", "back", people["ny"], "--format", "prov-n").stdout
    assert provn.startswith("document") and provn.count("wasDerivedFrom(") == len(trace.edges)


def test_whatif_delete_names_what_disappears_and_the_new_average(cli, people) -> None:  # type: ignore[no-untyped-def]
    result = cli("whatif-delete", people["steve"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "removed: 3 node(s)"
    assert lines[1].startswith(f"  {people['steve']}  [TOKEN] Person1")
    assert "aggregates that change: 1" in lines
    (avg,) = [x for x in lines if " AVG " in x]
    assert "AVG 35.0 -> 40.0 (1 input(s) left)  of [DELTA] AvgAge" in avg


def test_provenance_in_semirings(cli, people) -> None:  # type: ignore[no-untyped-def]
    result = cli("provenance", people["ny"], "--semiring", "counting")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] in ("δ(Person1#0.0 + Person1#0.1)", "δ(Person1#0.1 + Person1#0.0)")
    assert lines[-1] == "COUNTING: 1"
    gone = cli("provenance", people["ny"], "--semiring", "boolean", "--false", people["steve"])
    assert gone.stdout.splitlines()[-1] == "BOOLEAN: true"  # Mark still makes the NY group


def test_errors_are_one_line_with_the_status_and_an_exit_code(cli, people) -> None:  # type: ignore[no-untyped-def]
    cases = [
        (("trace", "back", "not-a-number"), 4, "INVALID_ARGUMENT"),
        (("trace", "back", "123456789"), 3, "NOT_FOUND"),
        (("whatif-delete", "123456789"), 3, "NOT_FOUND"),
        (("find", "no-such-run", "AvgAge"), 3, "NOT_FOUND"),
        (
            ("provenance", people["ny"], "--semiring", "probability", "--probability", "x=2"),
            4,
            "INVALID_ARGUMENT",
        ),
    ]
    for args, code, status in cases:
        result = cli(*args)
        assert result.exit_code == code, (args, result.output)
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"sparkprov: {status}"), line
        assert result.stdout == ""
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    down = cli("--timeout", "3", "runs", address=address)
    assert down.exit_code == 5
    (line,) = down.stderr.splitlines()
    assert line.startswith("sparkprov: UNAVAILABLE: ") or line.startswith(
        "sparkprov: DEADLINE_EXCEEDED: "
    )


def test_address_from_the_environment(stack, people) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(
        main, ["runs"], env={"SPARKPROV_GRPC_ADDR": stack.settings.grpc_addr}
    )
    assert people["run"] in result.stdout


def _prov_check(document: ProvDocument, trace: Trace) -> None:
    """Every node an entity with its op, every edge a derivation used -> derived."""
    entities = {str(r.identifier): r for r in document.get_records(ProvEntity)}
    assert set(entities) == {prov_export.entity_id(n.id) for n in trace.nodes}
    for node in trace.nodes:
        record = entities[prov_export.entity_id(node.id)]
        assert set(record.get_attribute("sparkprov:op")) == {node.op.name}
    derivations = {
        (str(r.formal_attributes[1][1]), str(r.formal_attributes[0][1]))
        for r in document.get_records(ProvDerivation)
    }
    assert derivations == {
        (prov_export.entity_id(e.src), prov_export.entity_id(e.dst)) for e in trace.edges
    }


def test_trace_as_prov_json_validates_and_matches_the_trace(cli, client, people) -> None:  # type: ignore[no-untyped-def]
    for direction, node, call in (
        ("back", people["ny"], client.backward_trace),
        ("forward", people["steve"], client.forward_trace),
    ):
        result = cli("trace", direction, node, "--format", "prov-json")
        assert result.exit_code == 0, result.output
        document = ProvDocument.deserialize(content=result.stdout, format="json")
        trace = call([node])
        assert document == prov_export.document(trace)
        _prov_check(document, trace)


def test_a_whole_run_exports_as_prov(cli, client, people) -> None:  # type: ignore[no-untyped-def]
    result = cli("export", people["run"], "AvgAge")
    assert result.exit_code == 0, result.output
    document = ProvDocument.deserialize(content=result.stdout, format="json")
    whole = client.run_trace(people["run"], ["AvgAge"])
    _prov_check(document, whole)
    relations = {n.relation for n in whole.nodes}
    assert {"AvgAge", "Person2", "Person1"} <= relations
    # Mary (filtered out) reaches no AvgAge row: not part of the run's output provenance
    provn = cli("export", people["run"], "AvgAge", "--format", "prov-n").stdout
    assert "Steve" in provn and "Mary" not in provn
    missing = cli("export", people["run"], "NoSuchRelation")
    assert missing.exit_code == 3 and missing.stderr.startswith("sparkprov: NOT_FOUND")


def test_sources_lists_the_input_rows_of_a_node(cli, client, people) -> None:  # type: ignore[no-untyped-def]
    result = cli("sources", people["ny"])
    assert result.exit_code == 0, result.output
    tokens = [n for n in client.backward_trace([people["ny"]]).nodes if n.op.name == "TOKEN"]
    expected = {
        f"{n.id}  {n.relation}  partition {n.label.split('#')[1].split('.')[0]} "
        f"offset {n.label.split('.')[-1]}  "
        + " ".join(f"{k}={v}" for k, v in sorted(n.attributes.items()))
        for n in tokens
    }
    assert set(result.stdout.splitlines()) == expected and "Name=Steve" in result.stdout
    bad = cli("sources", "12345")
    assert bad.exit_code == 3 and "NOT_FOUND" in bad.output
