"""sparkprov.progress: a bar on a terminal, nothing off a terminal or in CI."""

from __future__ import annotations

import io

import pytest

from sparkprov.progress import Progress, shown


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_shown_only_on_a_terminal_outside_ci() -> None:
    assert shown(Terminal(), {})
    assert shown(Terminal(), {"CI": "false"})
    assert not shown(Terminal(), {"CI": "true"})
    assert not shown(io.StringIO(), {})


def test_quiet_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with Progress(100, "loading") as bar:
        assert not bar.enabled
        bar.update(50)
        bar.update(100)
    assert capsys.readouterr().err == ""


def test_a_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr("sys.stderr", terminal)
    with Progress(10, "loading", unit="rows") as bar:
        assert bar.enabled
        bar.update(4)
        bar.update(3)  # never moves back
        bar.update(10)
    text = terminal.getvalue()
    assert "loading: 100%" in text and "10.0/10.0" in text
