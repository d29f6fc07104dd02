"""The kill switch's frames: what a disabled :class:`~capture_agent.session.ProvenanceSession`
hands back.

With capture off (``ProvenanceSession(enabled=False)`` or ``SPARKPROV_DISABLED=1``) nothing of
the capture machinery runs: ``prov.source(df, ...)`` returns a :class:`PlainFrame` around ``df``
itself. Every DataFrame operation on it is Spark's own, called on that very DataFrame, its result
a PlainFrame again (a ``groupBy``, ``.na`` or ``.stat`` forwards likewise, and frames passed as
arguments are unwrapped); ``.df`` is the DataFrame, with no hidden column and no capture point in
its plan, and ``.write`` Spark's own writer. What only a tracked frame has, ``.named()``, is a
no-op, and :class:`PlainInvocation` stands in for a module invocation, so the same job code runs
with capture on or off. Nothing here records, computes or publishes lineage, and no operator of
the capture agent ever sees these frames: they need no ``enabled`` branch.

Unlike a tracked frame, a plain one refuses nothing: operations sparkprov cannot capture
(``UnsupportedOperation`` with capture on) run as Spark runs them.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from capture_agent.frame import Values

__all__ = ["PlainFrame", "PlainInvocation"]


class _Forwarding:
    """Spark's object ``target``: attributes and calls go to it; DataFrames (and the grouped
    data and helpers that make them) come back wrapped, frames given as arguments unwrapped."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_target":  # protocols, and copies before __init__
            raise AttributeError(name)
        value = getattr(self._target, name)
        if not isinstance(value, types.MethodType):  # a property, or a Column (df.name)
            return _wrap(value)

        def call(*args: Any, **kwargs: Any) -> Any:
            plain = [_unwrap(a) for a in args]
            return _wrap(value(*plain, **{k: _unwrap(v) for k, v in kwargs.items()}))

        return call

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *dir(self._target)})

    def __repr__(self) -> str:
        return repr(self._target)


class PlainFrame(_Forwarding):
    """A DataFrame under the kill switch; ``.df`` is the DataFrame itself."""

    @property
    def df(self) -> DataFrame:
        return self._target  # type: ignore[no-any-return]

    def named(self, relation: str, values: Values = "all") -> PlainFrame:
        """Capture off: names nothing, the rows as they are."""
        return self

    def __getitem__(self, item: Any) -> Any:
        return _wrap(self._target[_unwrap(item)])


class PlainInvocation:
    """``prov.module(name)`` under the kill switch: the ``with`` block and nothing else (no MODULE
    node). Inputs and outputs are the frames given; a state relation is its distinct tuples, as
    with capture on (a state relation is a set, whether captured or not)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> PlainInvocation:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def input(self, frame: Any, relation: str, values: Values = "all") -> Any:
        return _wrap(frame)

    def output(self, frame: Any, relation: str, values: Values = "all") -> Any:
        return _wrap(frame)

    def state(self, df: Any, relation: str, values: Values = "all") -> PlainFrame:
        return PlainFrame(_unwrap(df).dropDuplicates())


def _unwrap(value: Any) -> Any:
    return value._target if isinstance(value, _Forwarding) else value


def _wrap(value: Any) -> Any:
    from pyspark.sql import DataFrame, GroupedData
    from pyspark.sql.dataframe import DataFrameNaFunctions, DataFrameStatFunctions

    if isinstance(value, DataFrame):
        return PlainFrame(value)
    if isinstance(value, GroupedData | DataFrameNaFunctions | DataFrameStatFunctions):
        return _Forwarding(value)
    if isinstance(value, list) and value and all(isinstance(v, DataFrame) for v in value):
        return [PlainFrame(v) for v in value]  # randomSplit
    return value
