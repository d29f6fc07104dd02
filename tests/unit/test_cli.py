"""The ``sparkprov`` command without a server: --help on every command, ``open``'s URL (run or
node, viewer address from the flag or SPARKPROV_VIEWER_ADDR), and arguments refused before any
call (exit code 2); ``versions`` and ``diff`` on a fake client (versions named by id, seq or
prefix; unknown or ambiguous ones refused with their exit code)."""

from __future__ import annotations

import json
import webbrowser
from typing import Any

import grpc
import pytest
from click.testing import CliRunner

from sparkprov import cli
from sparkprov.cli import EXIT_CODES, main
from sparkprov.query_errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unauthenticated,
    Unavailable,
)
from sparkprov.query_model import (
    DagLink,
    DagOperator,
    Edge,
    Node,
    Op,
    OperatorChange,
    Run,
    RunReuse,
    RunState,
    SourceRow,
    Trace,
    VersionDiff,
    VersionInfo,
)

COMMANDS = [
    "runs", "find", "trace", "sources", "export", "whatif-delete", "provenance", "open",
    "versions", "diff",
]  # fmt: skip


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)])
def test_help_everywhere(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0 and "Usage: " in result.stdout
    if not command:
        assert all(c in result.stdout for c in COMMANDS)
        assert "3 NOT_FOUND" in result.stdout  # the exit codes are documented


def test_exit_codes_are_distinct() -> None:
    kinds = (NotFound, InvalidArgument, Unavailable, Unauthenticated, FailedPrecondition)
    codes = [EXIT_CODES[e] for e in kinds]
    assert len(set(codes)) == 5 and not {0, 1, 2} & set(codes)


def test_open_prints_the_viewer_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARKPROV_VIEWER_ADDR", raising=False)  # a stack on other ports sets it
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url) or True)
    runner = CliRunner()
    result = runner.invoke(main, ["open", "abc123"])
    assert result.stdout == "http://127.0.0.1:8090/#run=abc123\n"
    assert opened == ["http://127.0.0.1:8090/#run=abc123"]
    result = runner.invoke(main, ["open", "-42", "--viewer", "10.0.0.1:9"])
    assert result.stdout == "http://10.0.0.1:9/#node=-42\n"
    result = runner.invoke(
        main, ["open", "7", "--no-browser"], env={"SPARKPROV_VIEWER_ADDR": "h:1"}
    )
    assert result.stdout == "http://h:1/#node=7\n" and len(opened) == 2


@pytest.mark.parametrize(
    "args",
    [
        ["trace", "sideways", "1"],
        ["trace", "back"],
        ["trace", "back", "1", "--format", "png"],
        ["trace", "back", "1", "--strategy", "fastest"],
        ["provenance", "1", "--semiring", "ring"],
        ["provenance", "1", "--cost", "1"],
        ["find", "run"],
        ["whatif-delete"],
        ["versions"],
        ["diff", "w", "1"],
    ],
)
def test_bad_arguments_are_usage_errors(args: list[str]) -> None:
    result = CliRunner().invoke(main, ["--address", "127.0.0.1:1", *args])
    assert result.exit_code == 2, result.output


V1, V2, V3 = "a1b2c3d4e5f60718", "a1ff00000000aaaa", "9c9c9c9c9c9c9c9c"
FILTER = DagOperator("f1", "filter", {"predicate": "(state = 'CA')"}, ("s1",))


class FakeVersionsClient:
    """Stands in for QueryClient: three versions of workflow ``w``; records the diffs asked."""

    last: FakeVersionsClient  # the one the command made

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.diffs: list[tuple[str, str, str]] = []
        FakeVersionsClient.last = self

    def __enter__(self) -> FakeVersionsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def list_versions(self, workflow: str) -> list[VersionInfo]:
        if workflow != "w":
            raise NotFound(grpc.StatusCode.NOT_FOUND, f"no workflow {workflow}")
        return [
            VersionInfo("w", V1, 1, ("r1", "r2"), 9, ("wordcloud", "choropleth"), 0),
            VersionInfo("w", V2, 2, ("r3",), 10, ("wordcloud",), 0),
            VersionInfo("w", V3, 3, ("r4",), 10, ("wordcloud",), 0),
        ]

    def runs(self, workflow: str = "") -> list[Run]:
        reuse = (RunReuse("ca", "v1", "r1"), RunReuse("wordcloud", "v2", "r1"))
        return [
            Run("r2", "w", True, 5, 4, 5, 4, False, 2, RunState.COMPLETE, 0, reuse),
            Run("r1", "w", True, 9, 8, 9, 8, False, 1, RunState.COMPLETE, 0),
        ]

    def diff_versions(self, workflow: str, a: str, b: str) -> VersionDiff:
        self.diffs.append((workflow, a, b))
        moved = DagOperator("f1", "filter", {"predicate": "(state = 'CA')"}, ("j1",))
        return VersionDiff(
            added=(FILTER,),
            removed=(),
            changed=(),
            links_added=(DagLink("s1", "f1"),),
            links_removed=(DagLink("s1", "j1"),),
            moved=(OperatorChange(FILTER, moved),),
        )


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> type[FakeVersionsClient]:
    monkeypatch.setattr(cli, "QueryClient", FakeVersionsClient)
    return FakeVersionsClient


def test_runs_marks_the_sinks_a_run_reused(fake: type[FakeVersionsClient]) -> None:
    result = CliRunner().invoke(main, ["runs"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "r2  w  COMPLETE  nodes=5/5 edges=4  reused ca<-r1  reused wordcloud<-r1",
        "r1  w  COMPLETE  nodes=9/9 edges=8",
    ]
    result = CliRunner().invoke(main, ["runs", "--json"])
    first = json.loads(result.stdout.splitlines()[0])
    assert first["reuses"][0] == {"sink": "ca", "version": "v1", "run_id": "r1"}


def test_versions_lists_a_workflows_versions(fake: type[FakeVersionsClient]) -> None:
    result = CliRunner().invoke(main, ["versions", "w"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"1  {V1}  operators=9 runs=2  wordcloud,choropleth",
        f"2  {V2}  operators=10 runs=1  wordcloud",
        f"3  {V3}  operators=10 runs=1  wordcloud",
    ]
    result = CliRunner().invoke(main, ["versions", "w", "--json"])
    first = json.loads(result.stdout.splitlines()[0])
    assert (first["version_id"], first["seq"], first["run_ids"]) == (V1, 1, ["r1", "r2"])
    result = CliRunner().invoke(main, ["versions", "nope"])
    assert result.exit_code == EXIT_CODES[NotFound] and "NOT_FOUND: no workflow" in result.stderr


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (V1, V2, (V1, V2)),  # ids
        ("1", "3", (V1, V3)),  # seq numbers
        ("a1b", "9c", (V1, V3)),  # unique prefixes
    ],
)
def test_diff_names_versions_by_id_seq_or_prefix(
    fake: type[FakeVersionsClient], a: str, b: str, expected: tuple[str, str]
) -> None:
    result = CliRunner().invoke(main, ["diff", "w", a, b])
    assert result.exit_code == 0, result.output
    assert fake.last.diffs == [("w", *expected)]
    lines = result.stdout.splitlines()
    assert lines[0] == f"{expected[0]} -> {expected[1]}"
    assert "+ filter(predicate=(state = 'CA'))  f1" in lines
    assert "> filter(predicate=(state = 'CA'))  f1  reads j1 (was s1)" in lines
    assert "+ link s1 -> f1" in lines and "- link s1 -> j1" in lines


@pytest.mark.parametrize(
    ("a", "error"), [("a1", InvalidArgument), ("7", NotFound), ("zz", NotFound)]
)
def test_diff_refuses_unknown_or_ambiguous_versions(
    fake: type[FakeVersionsClient], a: str, error: type[Exception]
) -> None:
    result = CliRunner().invoke(main, ["diff", "w", a, "2"])
    assert result.exit_code == EXIT_CODES[error], result.output  # type: ignore[index]
    assert fake.last.diffs == [] and result.stdout == ""


def test_diff_as_json(fake: type[FakeVersionsClient]) -> None:
    result = CliRunner().invoke(main, ["diff", "w", "1", "2", "--json"])
    edit = json.loads(result.stdout)
    assert edit["added"][0]["params"] == {"predicate": "(state = 'CA')"}
    assert edit["links_removed"] == [{"src": "s1", "dst": "j1"}]


class FakeSourcesClient(FakeVersionsClient):
    """An output row made of a parquet row, an in-memory row and a TIMES between them."""

    asked: list[list[str]] = []

    def backward_trace(self, node_ids: list[str], **kwargs: Any) -> Trace:
        nodes = (
            Node("9", "r", Op.TIMES, "⋈", "Out"),
            Node("1", "r", Op.TOKEN, "orders#1.7", "orders", {"oid": "4", "amt": "2.5"}),
            Node("2", "r", Op.TOKEN, "names#0.3", "names"),
        )
        return Trace(nodes, (Edge("1", "9"), Edge("2", "9")))

    def locate_source_rows(self, node_ids: list[str]) -> list[SourceRow]:
        FakeSourcesClient.asked.append(node_ids)
        rows = {
            "1": SourceRow("1", "r", "orders", True, "file:/o/p1.parquet", 1, 7),
            "2": SourceRow("2", "r", "names", False, partition=0, offset=3),
        }
        return [rows[i] for i in node_ids]


def test_sources_lists_the_input_rows_with_their_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "QueryClient", FakeSourcesClient)
    result = CliRunner().invoke(main, ["sources", "9"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "1  orders  file:/o/p1.parquet:7  amt=2.5 oid=4",
        "2  names  partition 0 offset 3",
    ]
    assert FakeSourcesClient.asked == [["1", "2"]]  # the TOKENs only, in one call
    rows = [
        json.loads(x)
        for x in CliRunner().invoke(main, ["sources", "9", "--json"]).stdout.splitlines()
    ]
    assert rows[0]["file"] == "file:/o/p1.parquet" and rows[0]["attributes"]["oid"] == "4"
    assert rows[1]["by_file"] is False and rows[1]["offset"] == 3
