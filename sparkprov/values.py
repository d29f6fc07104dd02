"""Values that travel as numbers and are stored as text (lineage.proto's StringColumn).

The JVM taps send a column of Spark's integral or double type as the numbers Spark holds, so a
captured job never casts its kept values to text (the casts were a third of capture's cost on
the 1M-row pipeline: bench/README.md, issue 26). The reader writes each number as the text
Spark's ``cast(x as string)`` gives: an integer in decimal; a double as Java's
``Double.toString`` prints it, with the shortest digits that read back as the same double (Java
19 and later; Java 17 prints a few doubles with more digits, e.g. 2.82879384806159008E17).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["MAX_DECIMAL_SCALE", "column_texts", "java_double"]

# Powers of ten up to here are exact doubles (10^22 is the last), so the writer's check and the
# reader's division agree; the JVM taps try scales 0 to 9.
MAX_DECIMAL_SCALE = 22


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


def column_texts(
    texts: Sequence[str],
    longs: Sequence[int],
    doubles: Sequence[float],
    decimals: Sequence[int] = (),
    decimal_scale: int = 0,
) -> list[str]:
    """A StringColumn's entries as text (null rows included, as whatever their entry holds):
    its ``values``, or its numbers written as Spark writes them; ``decimals`` are doubles sent
    as integers times 10^-``decimal_scale`` (Python's int division is correctly rounded, as the
    writer's check was: the same double). More than one form is refused."""
    forms = sum(1 for form in (texts, longs, doubles, decimals) if len(form))
    if forms > 1:
        raise ValueError("a value column holds more than one of values, longs, doubles, decimals")
    if decimal_scale and not len(decimals):
        raise ValueError("a value column has a decimal scale but no decimals")
    if decimal_scale > MAX_DECIMAL_SCALE:
        raise ValueError(f"a decimal scale of {decimal_scale}, over {MAX_DECIMAL_SCALE}")
    if len(longs):
        return [str(v) for v in longs]
    if len(doubles):
        return [java_double(v) for v in doubles]
    if len(decimals):
        if any(abs(n) > 2**53 for n in decimals):
            raise ValueError("a decimal column holds an integer over 2^53")
        power = 10**decimal_scale
        return [java_double(n / power) for n in decimals]
    return list(texts)
