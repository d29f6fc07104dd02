"""Unchanged code captured: while a session with ``actions=True`` is open, an action on a plain
DataFrame (``collect``, ``count``, ``toPandas``, ``take``, ``head``, ``first``, ``show``, and
writes through ``df.write``) runs captured from its plan (capture_agent.plan_capture), whether
the DataFrame came from ``spark.sql`` text, DataFrame calls, or both.

Each captured action's result is a named relation: ``result<N>`` in the order of the actions,
or, for a write to a path, the path's last part. The capture's own Spark jobs, and actions on
frames already tracked, run as they are. The hooks are the classic DataFrame class's methods,
replaced while the session is open and put back when it closes; one session at a time.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from capture_agent.taps import TAP_PREFIX

if TYPE_CHECKING:
    from capture_agent.session import ProvenanceSession

__all__ = ["ACTIONS", "ActionCapture"]

ACTIONS = ("collect", "count", "toPandas", "take", "head", "first", "show")
_local = threading.local()


def _busy() -> bool:
    return bool(getattr(_local, "busy", False))


@contextmanager
def _inside() -> Iterator[None]:
    """Actions run by capture itself (the captured action, probes) are not captured again."""
    before = _busy()
    _local.busy = True
    try:
        yield
    finally:
        _local.busy = before


def _already_tracked(df: Any) -> bool:
    """A DataFrame a tracked frame handed out: its plan holds sparkprov's taps."""
    return TAP_PREFIX in df._jdf.queryExecution().analyzed().toString()


class ActionCapture:
    """The hooks of one session (a context manager around its ``with`` block)."""

    _open: ActionCapture | None = None
    _lock = threading.Lock()

    def __init__(self, prov: ProvenanceSession) -> None:
        self._prov = prov
        self._results = 0
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> ActionCapture:
        from pyspark.sql.classic.dataframe import DataFrame

        with ActionCapture._lock:
            if ActionCapture._open is not None:
                raise RuntimeError("another ProvenanceSession with actions=True is open")
            ActionCapture._open = self
        for name in ACTIONS:
            original = DataFrame.__dict__[name]
            self._saved[name] = original
            setattr(DataFrame, name, self._hook(name, original))
        self._saved["write"] = DataFrame.__dict__["write"]
        DataFrame.write = property(self._write_hook(self._saved["write"]))  # type: ignore[assignment,method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        from pyspark.sql.classic.dataframe import DataFrame

        for name, original in self._saved.items():
            setattr(DataFrame, name, original)
        self._saved.clear()
        with ActionCapture._lock:
            ActionCapture._open = None

    def _captures(self, df: Any) -> bool:
        return not _busy() and not _already_tracked(df)

    def _tracked(self, df: Any, relation: str) -> Any:
        return self._prov.tracked(df).named(relation)

    def _next_result(self) -> str:
        self._results += 1
        return f"result{self._results}"

    def _hook(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def action(df: Any, *args: Any, **kwargs: Any) -> Any:
            if not self._captures(df):
                return original(df, *args, **kwargs)
            with _inside():
                frame = self._tracked(df, self._next_result())
                return getattr(frame, name)(*args, **kwargs)

        return action

    def _write_hook(self, original: property) -> Callable[[Any], Any]:
        capture = self

        def write(df: Any) -> Any:
            plain = original.__get__(df)
            if not capture._captures(df):
                return plain
            return _DeferredWriter(capture, df, plain)

        return write


class _DeferredWriter:
    """``df.write`` of a plain DataFrame: the writer's settings are kept, and the save methods
    write the captured frame (named by the path's last part) with the same settings."""

    _SAVES = ("save", "parquet", "csv", "json", "orc", "text", "saveAsTable", "insertInto")

    def __init__(self, capture: ActionCapture, df: Any, plain: Any) -> None:
        self._capture = capture
        self._df = df
        self._calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self._plain = plain

    def __getattr__(self, name: str) -> Any:
        if name in self._SAVES:
            return functools.partial(self._save, name)
        if not callable(getattr(self._plain, name)):
            return getattr(self._plain, name)

        def setting(*args: Any, **kwargs: Any) -> _DeferredWriter:
            self._calls.append((name, args, kwargs))
            return self

        return setting

    def _save(self, method: str, *args: Any, **kwargs: Any) -> Any:
        target = kwargs.get("path") or kwargs.get("tableName") or (args[0] if args else "")
        table = method in ("saveAsTable", "insertInto")
        relation = _relation_of(str(target), table) or self._capture._next_result()
        with _inside():
            writer = self._capture._tracked(self._df, relation).write
            for name, a, k in self._calls:
                writer = getattr(writer, name)(*a, **k)
            return getattr(writer, method)(*args, **kwargs)


def _relation_of(target: str, table: bool) -> str:
    """A relation name from a table name (its last part) or a path (its last part without the
    extension), in letters, digits and _."""
    if table:
        last = target.split(".")[-1]
    else:
        last = re.split(r"[/\\]", target.rstrip("/\\"))[-1].split(".")[0]
    return re.sub(r"[^A-Za-z0-9_]", "_", last).strip("_")
