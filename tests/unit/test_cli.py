"""The ``sparkprov`` command without a server: --help on every command, ``open``'s URL (run or
node, viewer address from the flag or SPARKPROV_VIEWER_ADDR), and arguments refused before any
call (exit code 2)."""

from __future__ import annotations

import webbrowser

import pytest
from click.testing import CliRunner

from sparkprov.cli import EXIT_CODES, main
from sparkprov.query_errors import InvalidArgument, NotFound, Unauthenticated, Unavailable

COMMANDS = ["runs", "find", "trace", "export", "whatif-delete", "provenance", "open"]


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)])
def test_help_everywhere(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0 and "Usage: " in result.stdout
    if not command:
        assert all(c in result.stdout for c in COMMANDS)
        assert "3 NOT_FOUND" in result.stdout  # the exit codes are documented


def test_exit_codes_are_distinct() -> None:
    codes = [EXIT_CODES[e] for e in (NotFound, InvalidArgument, Unavailable, Unauthenticated)]
    assert len(set(codes)) == 4 and not {0, 1, 2} & set(codes)


def test_open_prints_the_viewer_url(monkeypatch: pytest.MonkeyPatch) -> None:
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
    ],
)
def test_bad_arguments_are_usage_errors(args: list[str]) -> None:
    result = CliRunner().invoke(main, ["--address", "127.0.0.1:1", *args])
    assert result.exit_code == 2, result.output
