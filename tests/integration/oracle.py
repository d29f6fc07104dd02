"""Titian's re-execution oracle: an output row's backward trace names its witness, the source
rows it came from; running the same query on only those rows must give the same row back.

A missing witness row (a rounded id, a semi join's decisive right rows left out) makes the
re-run lose the row or change its values; that is what this checks, through the real pipeline:
capture, Kafka, ingest, Neo4j and the query service's trace.

Sources with no row in a witness run empty: that is how a provenance that rightly leaves a side
out (an anti join's or a difference's right side, which decided by absence) is checked too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from capture_agent import ProvenanceSession
from capture_agent.replay import same_text, witness_frames
from sparkprov.client import QueryClient

__all__ = ["Checked", "check_by_reexecution"]

_OUTPUT = "Out"
_MAX_TRACE = 1_000_000  # the query service's maximum limit


@dataclass(frozen=True)
class Checked:
    """What one oracle run checked: the output rows, and the witness size of each."""

    rows: int
    checked: int
    witness_sizes: list[int]


def _values(row: Mapping[str, str | None], columns: list[str]) -> tuple[str | None, ...]:
    return tuple(row.get(c) for c in columns)


def _contains(rows: list[tuple[str | None, ...]], wanted: tuple[str | None, ...]) -> bool:
    return any(all(same_text(a, b) for a, b in zip(row, wanted, strict=True)) for row in rows)


def _as_text(df: DataFrame) -> tuple[list[str], list[tuple[str | None, ...]]]:
    """The frame's rows as text, as the capture agent records values (Spark's cast)."""
    columns = df.columns
    rows = df.select(*[F.col(f"`{c}`").cast("string") for c in columns]).collect()
    return columns, [tuple(r) for r in rows]


def check_by_reexecution(
    spark: SparkSession,
    client: QueryClient,
    sources: Mapping[str, DataFrame],
    keys: Mapping[str, str],
    query: Callable[[dict[str, Any]], Any],
    *,
    max_rows: int = 4,
    workflow: str = "oracle",
) -> Checked:
    """Capture ``query`` over ``sources``, then for up to ``max_rows`` of its output rows
    (spread over the output, in id order) trace back, re-run ``query`` plain on the witness and
    assert the row comes back with the same values. ``keys``: a unique column per source."""
    # values="all": the replay finds witness rows by key columns the query need not read.
    with ProvenanceSession(spark, workflow=workflow, values="all") as prov:
        tracked = {name: prov.source(df, name) for name, df in sources.items()}
        out = query(tracked).named(_OUTPUT)
        columns, produced = _as_text(out.df)
    client.wait_for_run(prov.run_id, timeout_s=300)
    nodes = client.find_nodes(prov.run_id, _OUTPUT, limit=10_000)
    assert len(nodes) == len(produced), (len(nodes), len(produced))
    assert sorted(map(str, (_values(n.attributes, columns) for n in nodes))) == sorted(
        map(str, (tuple(r) for r in produced))
    ), "the output relation's nodes do not carry the rows the query returned"
    step = max(1, len(nodes) // max_rows)
    picked = nodes[::step][:max_rows]
    sizes = []
    for node in picked:
        witness = client.witness([node.id], limit=_MAX_TRACE)
        sizes.append(sum(len(v) for v in witness.values()))
        restricted = witness_frames(sources, witness, keys)
        with ProvenanceSession(spark, workflow=workflow, enabled=False) as plain:
            rerun = query({name: plain.source(df, name) for name, df in restricted.items()})
            _, again = _as_text(rerun.df)
        wanted = _values(node.attributes, columns)
        assert _contains(again, wanted), (
            f"re-running on the witness ({ {k: len(v) for k, v in witness.items()} } rows) did "
            f"not give back {dict(zip(columns, wanted, strict=True))}; it gave {again[:10]}"
        )
    return Checked(len(nodes), len(picked), sizes)
