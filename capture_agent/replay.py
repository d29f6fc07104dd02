"""Replaying a job on the rows that made an output (Titian's debugging replay).

``QueryClient.witness(node_ids)`` names the source rows a bad output came from; this module turns
them into DataFrames: each source restricted to its witness rows, matched on a column that
identifies its rows (the sources' values are kept as text, as Spark casts them). Re-running the
job on them, plain or captured, gives the output rows back, and nothing unrelated.

    witness = client.witness([bad_row.id])
    frames = witness_frames({"Orders": orders, "Customers": customers}, witness,
                            keys={"Orders": "order_id", "Customers": "customer_id"})
    job(frames)  # the same job, on just those rows
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["same_text", "witness_frames"]


def witness_frames(
    sources: Mapping[str, DataFrame],
    witness: Mapping[str, Sequence[Mapping[str, str]]],
    keys: Mapping[str, str],
) -> dict[str, DataFrame]:
    """Each source of ``sources`` (relation -> DataFrame) restricted to the rows of ``witness``
    (relation -> rows, as ``QueryClient.witness`` returns them), matched on the column
    ``keys[relation]``, which must identify a source's rows and be among the values its TOKEN
    nodes kept. A source without witness rows comes back empty."""
    from pyspark.sql import functions as F

    missing = sorted(set(sources) - set(keys))
    if missing:
        raise ValueError(f"no key column given for sources {missing}")
    frames = {}
    for relation, df in sources.items():
        key = keys[relation]
        if key not in df.columns:
            raise ValueError(f"key column {key!r} is not a column of source {relation!r}")
        values = set()
        for row in witness.get(relation, ()):
            if key not in row:
                raise ValueError(
                    f"the witness rows of {relation!r} do not carry {key!r}: capture the source "
                    "with that column among its kept values"
                )
            values.add(row[key])
        frames[relation] = df.filter(F.col(f"`{key}`").cast("string").isin(sorted(values)))
    return frames


def same_text(a: str | None, b: str | None) -> bool:
    """Whether two values as text (as capture keeps them) are the same value: equal, or numbers
    equal to 1e-9 (a replay may sum the same numbers in another order)."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    except ValueError:
        return False
