"""PySpark's call-site capture, suspended while the capture agent builds its own plans.

PySpark 4 records, for every DataFrame and Column call, the user's call site on the JVM (for
error messages' "DataFrame query context"): a Column method costs about 20 py4j round trips
instead of 1 to 3 (``F.col`` 19, ``alias`` 24, ``isNull`` 24 here). The capture agent makes
thousands of such calls per job to build its lineage columns and taps, and the sites recorded
for them would be the agent's own lines, not the user's. So inside a tracked operation the
capture is off (the user's own calls before and after keep it): on Arctic, 41.7k round trips
became ~24k and the captured run 4.7 s shorter (bench/README.md, issue 26).

This sets pyspark.errors.utils' cache of ``spark.python.sql.dataFrameDebugging.enabled`` (the
conf PySpark reads once per process) to false for the duration and restores it; on a PySpark
without that cache it does nothing. Process-wide: a thread building DataFrames at the same
moment records no call sites either (only error messages' context is affected).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

from pyspark.errors import utils as _pyspark_errors

__all__ = ["internal", "internal_calls"]

_CACHE = "_enable_debugging_cache"
_lock = threading.Lock()
_depth = 0
_saved: Any = None

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def internal() -> Iterator[None]:
    """PySpark's call-site capture off for the block (re-entrant, process-wide)."""
    global _depth, _saved
    if not hasattr(_pyspark_errors, _CACHE):
        yield
        return
    with _lock:
        if _depth == 0:
            _saved = getattr(_pyspark_errors, _CACHE)
            setattr(_pyspark_errors, _CACHE, False)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                setattr(_pyspark_errors, _CACHE, _saved)


def internal_calls(func: F) -> F:
    """``func`` run under :func:`internal`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with internal():
            return func(*args, **kwargs)

    return cast(F, wrapper)
