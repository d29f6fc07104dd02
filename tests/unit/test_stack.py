"""The local stack manager's process handling, on harmless stand-in processes (no servers)."""

from __future__ import annotations

import base64
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from localstack.stack import Stack, StackError, StackSettings, _Component, kafka_cluster_id


def _start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def _stack(tmp_path: Path, healthy: Path) -> Stack:
    stack = Stack(StackSettings(directory=tmp_path / "stack", start_timeout_s=15))
    command = [
        sys.executable,
        "-c",
        f"import pathlib, time; pathlib.Path({str(healthy)!r}).touch(); time.sleep(60)",
    ]
    stack._components = {"query": _Component("query", lambda: command, healthy.exists)}  # noqa: SLF001
    return stack


def _adopt(stack: Stack, process: subprocess.Popen[bytes]) -> None:
    """Make ``process`` the stack's own (as if an earlier ``up`` had started it)."""
    run = stack.dir / "run"
    run.mkdir(parents=True, exist_ok=True)
    (run / "query.pid").write_text(f"{process.pid} {_start_time(process.pid)}\n")


def test_up_starts_a_new_process_when_the_old_one_exits_while_waited_for(tmp_path: Path) -> None:
    """`make up` right after a SIGTERM: the old process is still exiting (never healthy again);
    once it is gone, up() starts a new one instead of failing."""
    healthy = tmp_path / "healthy"
    stack = _stack(tmp_path, healthy)
    exiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    _adopt(stack, exiting)
    # Reaped as soon as it exits, as init reaps a process that `make up` did not spawn itself.
    threading.Thread(target=exiting.wait, daemon=True).start()
    try:
        assert stack.up(("query",)) == ["query"]
        assert healthy.exists()
        new = stack.pid("query")
        assert new is not None and new != exiting.pid
    finally:
        exiting.wait()
        stack.down(("query",))
    assert stack.pid("query") is None


def test_up_still_fails_for_a_process_that_runs_but_never_becomes_healthy(tmp_path: Path) -> None:
    stack = Stack(StackSettings(directory=tmp_path / "stack", start_timeout_s=1.5))
    stack._components = {"query": _Component("query", lambda: ["true"], lambda: False)}  # noqa: SLF001
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    _adopt(stack, stuck)
    try:
        with pytest.raises(StackError, match="running but not healthy"):
            stack.up(("query",))
    finally:
        stuck.kill()
        stuck.wait()


def test_kafka_cluster_id_never_starts_with_a_dash() -> None:
    """The storage tool reads an id starting with '-' as an option: the stack failed to start
    once in 64 fresh folders. Bytes 0xF8.. encode to a leading '-' in URL-safe base64."""
    draws = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" * 16)])
    cluster_id = kafka_cluster_id(lambda: next(draws))
    assert cluster_id == base64.urlsafe_b64encode(b"\x01" * 16).decode().rstrip("=")
    assert len(cluster_id) == 22
    assert not any(kafka_cluster_id().startswith("-") for _ in range(2000))
