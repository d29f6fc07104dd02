"""Two engines' results compared as multisets of rows, numbers within a relative tolerance.

Spark and DuckDB type the same expression differently (``avg`` of a decimal: a decimal in Spark,
a double in DuckDB; ``sum`` of an int: bigint vs hugeint), so every number (int, Decimal, float)
is compared as a float with ``math.isclose(rel_tol=1e-6)`` (a decimal also within half its last
place when the other side was rounded differently, see :class:`Num`); NULLs equal NULLs;
everything else (strings, dates) must be equal. Row order is ignored: rows are sorted by a key
that rounds numbers coarsely, compared pairwise, and only if that fails matched greedily, so two
numbers a rounding boundary apart cannot make equal results look different.

``ORDER BY ... LIMIT n`` with ties at the n-th row lets each engine keep a different tied row.
:func:`tie_equal` accepts exactly that case, given the output columns the ORDER BY sorts on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

__all__ = ["REL_TOL", "equal", "normalise", "tie_equal"]

REL_TOL = 1e-6
ABS_TOL = 1e-9  # sums of money that cancel to zero come back as 0 in one engine, 1e-13 in another
GREEDY_LIMIT = 20_000  # rows; past this an O(n^2) match is too slow to be worth it

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Num:
    """A number as a float, with the rounding unit of the decimal it came from (0: exact/float).

    Spark's ``avg`` of a ``decimal(15,2)`` is a ``decimal(19,6)``, rounded to 6 places, where
    DuckDB returns a double: half a unit of the decimal's last place is tolerated on top of
    the relative tolerance, so a correctly rounded decimal equals the double it rounds. Two
    numbers rounded alike (the same scale, or both exact) get no such allowance."""

    value: float
    quantum: float = 0.0


def _quantum(value: Decimal) -> float:
    exponent = value.as_tuple().exponent
    return 10.0**exponent if isinstance(exponent, int) else 0.0


def _value(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, Decimal):
        return Num(float(value), _quantum(value))
    if isinstance(value, int | float):
        return Num(float(value))
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, date | str):
        return value
    return str(value)


def normalise(rows: Sequence[Sequence[Any]]) -> list[Row]:
    """Rows as tuples of :class:`Num` (every number), strings, dates, booleans and ``None``."""
    return [tuple(_value(v) for v in row) for row in rows]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Num) and isinstance(b, Num):
        x, y = a.value, b.value
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        # Half the coarser decimal's last place, only when the two were rounded differently:
        # two decimal(7,2) sums must agree to the cent.
        rounding = max(a.quantum, b.quantum) / 2 if a.quantum != b.quantum else 0.0
        return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=max(ABS_TOL, rounding * (1 + REL_TOL)))
    return bool(type(a) is type(b) and a == b)


def same_row(a: Row, b: Row) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))


def _key(row: Row) -> tuple[Any, ...]:
    """A sort key where every type has its own slot, so mixed NULLs and values still sort."""
    out: list[Any] = []
    for value in row:
        if value is None:
            out.append((0, 0, ""))
        elif isinstance(value, Num):
            number = value.value
            finite = math.isfinite(number)
            out.append((1, 0, float(f"{number:.3g}")) if finite else (1, 1, str(number)))
        else:
            out.append((2, 0, str(value)))
    return tuple(out)


def _greedy(left: list[Row], right: list[Row]) -> bool:
    pool = list(right)
    for row in left:
        hit = next((i for i, other in enumerate(pool) if same_row(row, other)), None)
        if hit is None:
            return False
        pool.pop(hit)
    return True


def equal(left: Sequence[Sequence[Any]], right: Sequence[Sequence[Any]]) -> bool:
    """Whether the two results are the same multiset of rows (see the module's tolerance)."""
    a, b = normalise(left), normalise(right)
    if len(a) != len(b):
        return False
    a.sort(key=_key)
    b.sort(key=_key)
    if all(same_row(x, y) for x, y in zip(a, b, strict=True)):
        return True
    return len(a) <= GREEDY_LIMIT and _greedy(a, b)


def _project(row: Row, columns: Sequence[int]) -> Row:
    return tuple(row[i] for i in columns)


def tie_equal(
    spark: Sequence[Sequence[Any]],
    limited: Sequence[Sequence[Any]],
    unlimited: Sequence[Sequence[Any]],
    order: Sequence[int],
) -> bool:
    """Spark's ``ORDER BY ... LIMIT n`` result against DuckDB's, tolerating ties at the boundary.

    ``order`` are the output columns the ORDER BY sorts on; ``unlimited`` is DuckDB's result of
    the same text without LIMIT. Equal when both have as many rows, the rows whose sort key is
    not the last row's are the same multiset, and Spark's rows with the last row's key are all
    rows of ``unlimited`` with that key: the engines then differ only in which tied rows fill the
    last places."""
    s, d, full = normalise(spark), normalise(limited), normalise(unlimited)
    if len(s) != len(d):
        return False
    if not d:
        return True
    edge = _project(d[-1], order)

    def tied(row: Row) -> bool:
        return same_row(_project(row, order), edge)

    if not equal([r for r in s if not tied(r)], [r for r in d if not tied(r)]):
        return False
    pool = [r for r in full if tied(r)]
    return len(pool) <= GREEDY_LIMIT and _greedy([r for r in s if tied(r)], pool)
