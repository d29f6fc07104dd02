"""Values that travel as numbers and are stored as text (lineage.proto's StringColumn).

The JVM taps send a column of Spark's integral, double, date or decimal (up to 18 digits) type
as the numbers Spark holds, so a captured job never casts those kept values to text (the casts
were a third of capture's cost on the 1M-row pipeline, and the dates and decimals most of what
kept values cost on TPC-H: bench/README.md, issue 26). The reader writes each as the text
Spark's ``cast(x as string)`` gives: an integer in decimal; a double as Java's
``Double.toString`` prints it, with the shortest digits that read back as the same double (Java
19 and later; Java 17 prints a few doubles with more digits, e.g. 2.82879384806159008E17); a
date as ``java.time.LocalDate.toString`` (proleptic Gregorian); a decimal plainly with all its
scale's digits (ANSI's cast: the taps send decimals as numbers only where ANSI is on).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sparkprov.v1.lineage_pb2 import StringColumn

__all__ = [
    "MAX_DECIMAL_SCALE",
    "column_texts",
    "java_date",
    "java_double",
    "plain_decimal",
    "string_column_texts",
]

# Powers of ten up to here are exact doubles (10^22 is the last), so the writer's check and the
# reader's division agree; the JVM taps try scales 0 to 9.
MAX_DECIMAL_SCALE = 22
# A decimal travels as its unscaled long up to this many digits (Spark's Decimal.MAX_LONG_DIGITS).
MAX_UNSCALED_DIGITS = 18


def java_double(x: float) -> str:
    """``x`` as Java's ``Double.toString`` prints it: plain with at least one fraction digit
    from 1e-3 to 1e7, else ``d.dddE<n>``; ``NaN``, ``Infinity``, ``-Infinity``, ``-0.0``."""
    magnitude = abs(x)
    if 1e-3 <= magnitude < 1e7:
        return repr(x)  # Python prints this range plainly, with the same shortest digits
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    mantissa, _, exponent = repr(magnitude).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # The decimal point sits after `whole` (shifted by the exponent); leading zeros move it left.
    point = len(whole) + (int(exponent) if exponent else 0) - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0") or "0"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def java_date(days: int) -> str:
    """The date ``days`` after 1970-01-01 as ``java.time.LocalDate.toString`` (and so Spark's
    cast) writes it: proleptic Gregorian ``yyyy-MM-dd``; a year past 9999 with a ``+``, one
    before year 1 as ``0000``, ``-0001``, ... (Python's ``date`` stops at years 1 and 9999)."""
    # Howard Hinnant's civil_from_days, in floor division (valid for any integer).
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    if abs(year) < 1000:
        text = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    else:
        text = f"+{year}" if year > 9999 else str(year)
    return f"{text}-{month:02d}-{day:02d}"


def plain_decimal(unscaled: int, scale: int) -> str:
    """``unscaled`` times 10^-``scale`` as ``BigDecimal.toPlainString`` writes it: every digit
    of the scale, no exponent (Spark's cast of a decimal to text under ANSI)."""
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled))
    if not scale:
        return sign + digits
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def column_texts(
    texts: Sequence[str],
    longs: Sequence[int],
    doubles: Sequence[float],
    decimals: Sequence[int] = (),
    decimal_scale: int = 0,
    *,
    dates: Sequence[int] = (),
    unscaled: Sequence[int] = (),
    unscaled_scale: int = 0,
) -> list[str]:
    """A StringColumn's entries as text (null rows included, as whatever their entry holds):
    its ``values``, or its numbers written as Spark writes them; ``decimals`` are doubles sent
    as integers times 10^-``decimal_scale`` (Python's int division is correctly rounded, as the
    writer's check was: the same double); ``dates`` are days since 1970-01-01; ``unscaled``
    are a decimal type's unscaled values at ``unscaled_scale``. More than one form is refused."""
    forms = sum(1 for form in (texts, longs, doubles, decimals, dates, unscaled) if len(form))
    if forms > 1:
        raise ValueError("a value column holds more than one of its forms (values, longs, ...)")
    if decimal_scale and not len(decimals):
        raise ValueError("a value column has a decimal scale but no decimals")
    if unscaled_scale and not len(unscaled):
        raise ValueError("a value column has an unscaled scale but no unscaled values")
    if len(unscaled) and (
        unscaled_scale > MAX_UNSCALED_DIGITS or max(map(abs, unscaled)) >= 10**MAX_UNSCALED_DIGITS
    ):
        raise ValueError(f"a decimal column over {MAX_UNSCALED_DIGITS} digits")
    if decimal_scale > MAX_DECIMAL_SCALE:
        raise ValueError(f"a decimal scale of {decimal_scale}, over {MAX_DECIMAL_SCALE}")
    if len(longs):
        return [str(v) for v in longs]
    if len(dates):
        return [java_date(v) for v in dates]
    if len(unscaled):
        return [plain_decimal(v, unscaled_scale) for v in unscaled]
    if len(doubles):
        return [java_double(v) for v in doubles]
    if len(decimals):
        if any(abs(n) > 2**53 for n in decimals):
            raise ValueError("a decimal column holds an integer over 2^53")
        power = 10**decimal_scale
        return [java_double(n / power) for n in decimals]
    return list(texts)


def running_sum(deltas: Sequence[int]) -> list[int]:
    """The integers a ``StringColumn`` sent as differences (``deltas``): each entry plus all
    before it, wrapping at 64 bits as the writer's subtraction did."""
    summed: list[int] = np.cumsum(np.asarray(deltas, dtype=np.int64), dtype=np.int64).tolist()
    return summed


def string_column_texts(column: StringColumn) -> list[str]:
    """A lineage.proto ``StringColumn``'s entries as text (:func:`column_texts` of its fields;
    null rows hold whatever their entry holds), its integers summed back where they travel as
    differences (``deltas``, schema version 7)."""
    forms: list[Sequence[int]] = [column.longs, column.decimals, column.dates, column.unscaled]
    if column.deltas:
        if sum(1 for form in forms if len(form)) != 1:
            raise ValueError("a value column marks its integers as differences but holds none")
        forms = [running_sum(form) if len(form) else form for form in forms]
    longs, decimals, dates, unscaled = forms
    return column_texts(
        column.values,
        longs,
        column.doubles,
        decimals,
        column.decimal_scale,
        dates=dates,
        unscaled=unscaled,
        unscaled_scale=column.unscaled_scale,
    )
