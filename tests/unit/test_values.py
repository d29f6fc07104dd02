"""sparkprov.values: numbers written as the texts Spark's cast to string gives."""

from __future__ import annotations

import datetime
import math
import random
import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkprov.v1.lineage_pb2 import StringColumn
from sparkprov.values import (
    column_texts,
    java_date,
    java_double,
    plain_decimal,
    string_column_texts,
)

# Java's Double.toString (what Spark's cast prints), on the JVM the tests run.
KNOWN = [
    (1e7, "1.0E7"),
    (9999999.0, "9999999.0"),
    (0.001, "0.001"),
    (0.0009, "9.0E-4"),
    (100.0, "100.0"),
    (123.456, "123.456"),
    (-1.5e-300, "-1.5E-300"),
    (1.7976931348623157e308, "1.7976931348623157E308"),
    (0.30000000000000004, "0.30000000000000004"),
    (float("inf"), "Infinity"),
    (float("-inf"), "-Infinity"),
    (-0.0, "-0.0"),
    (0.0, "0.0"),
    (12345678.9, "1.23456789E7"),
]


@pytest.mark.parametrize(("x", "text"), KNOWN)
def test_known_doubles(x: float, text: str) -> None:
    assert java_double(x) == text


def test_nan() -> None:
    assert java_double(float("nan")) == "NaN"


@given(st.floats(allow_nan=False))
def test_the_text_reads_back_as_the_same_double_in_javas_layout(x: float) -> None:
    text = java_double(x)
    assert float(text.replace("Infinity", "inf")) == x
    if math.isinf(x):
        return
    if x != 0 and not 1e-3 <= abs(x) < 1e7:
        assert re.fullmatch(r"-?[1-9]\.[0-9]+E-?[0-9]+", text), text
    else:
        assert re.fullmatch(r"-?[0-9]+\.[0-9]+", text), text


def _digits(text: str) -> str:
    return text.lstrip("-").split("E")[0].replace(".", "").strip("0")


def test_doubles_as_spark_casts_them(spark) -> None:  # type: ignore[no-untyped-def]
    """Against Spark's own cast on this JVM, over random doubles of every magnitude: the same
    text, except where Java before 19 prints more digits than the shortest that read back as the
    same double (JDK-4511638; e.g. -6.9508572188191104E17 for -6.95085721881911E17)."""
    rng = random.Random(7)
    values = [rng.uniform(-1e3, 1e3) for _ in range(3000)]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-40, 40) for _ in range(3000)]
    values += [x for x, _ in KNOWN]
    df = spark.createDataFrame([(v,) for v in values], "x double")
    longer = 0
    for row in df.selectExpr("x", "cast(x as string) AS s").collect():
        ours = java_double(row.x)
        if ours != row.s:
            longer += 1
            assert float(row.s) == row.x and len(_digits(row.s)) > len(_digits(ours)), row.s
            assert ours.split("E")[1:] == row.s.split("E")[1:], (ours, row.s)
    assert longer < len(values) // 20


def test_a_column_holds_one_form() -> None:
    assert column_texts([], [1, -2], []) == ["1", "-2"]
    assert column_texts(["a"], [], []) == ["a"]
    with pytest.raises(ValueError, match="more than one"):
        column_texts(["a"], [1], [])


# java.time.LocalDate.toString, which Spark's cast of a date to text gives (read off Spark 4).
KNOWN_DATES = [
    (0, "1970-01-01"),
    (-719_162, "0001-01-01"),
    (-719_163, "0000-12-31"),
    (-719_528, "0000-01-01"),
    (-719_529, "-0001-12-31"),
    (-800_000, "-0221-09-04"),
    (-1_000_000, "-0768-02-04"),
    (2_932_896, "9999-12-31"),
    (2_932_897, "+10000-01-01"),
    (-141_428, "1582-10-14"),  # proleptic Gregorian: no Julian switch
    (100_000_000, "+275760-09-13"),
]


@pytest.mark.parametrize(("days", "text"), KNOWN_DATES)
def test_known_dates(days: int, text: str) -> None:
    assert java_date(days) == text


@given(st.dates())
def test_dates_python_can_hold_are_iso(day: datetime.date) -> None:
    assert java_date((day - datetime.date(1970, 1, 1)).days) == day.isoformat()


@given(st.integers(-(10**18) + 1, 10**18 - 1), st.integers(0, 18))
def test_decimals_are_written_plainly_with_every_digit_of_their_scale(n: int, scale: int) -> None:
    assert plain_decimal(n, scale) == format(Decimal(n).scaleb(-scale), "f")


def test_a_column_of_dates_or_decimals() -> None:
    assert column_texts([], [], [], dates=[0, -1]) == ["1970-01-01", "1969-12-31"]
    assert column_texts([], [], [], unscaled=[-1, 1000], unscaled_scale=3) == ["-0.001", "1.000"]
    with pytest.raises(ValueError, match="more than one"):
        column_texts([], [1], [], dates=[1])
    with pytest.raises(ValueError, match="18 digits"):
        column_texts([], [], [], unscaled=[10**18])


def _differences(values: list[int]) -> list[int]:
    """StringColumn.deltas as the JVM writer makes them: each value minus the one before, in
    64-bit two's complement (Java's long subtraction)."""
    out, before = [], 0
    for v in values:
        out.append((v - before + 2**63) % 2**64 - 2**63)
        before = v
    return out


@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=40))
def test_integers_sent_as_differences_read_back_the_same(values: list[int]) -> None:
    column = StringColumn(longs=_differences(values), deltas=True)
    assert string_column_texts(column) == [str(v) for v in values]


def test_every_integer_form_can_travel_as_differences() -> None:
    assert string_column_texts(StringColumn(dates=[19_000, 1, 1], deltas=True)) == [
        "2022-01-08",
        "2022-01-09",
        "2022-01-10",
    ]
    unscaled = StringColumn(unscaled=[150, -300], unscaled_scale=2, deltas=True)
    assert string_column_texts(unscaled) == ["1.50", "-1.50"]
    decimals = StringColumn(decimals=[523, 1], decimal_scale=1, deltas=True)
    assert string_column_texts(decimals) == ["52.3", "52.4"]
    # The same integers as they are: deltas is what makes them differences.
    assert string_column_texts(StringColumn(longs=[5, 1])) == ["5", "1"]
    assert string_column_texts(StringColumn(longs=[5, 1], deltas=True)) == ["5", "6"]


def test_differences_need_integers() -> None:
    for column in (
        StringColumn(values=["a"], deltas=True),
        StringColumn(doubles=[1.5], deltas=True),
    ):
        with pytest.raises(ValueError, match="differences but holds none"):
            string_column_texts(column)
