"""QueryClient.witness closes the backward trace's rows under the anti joins' exclusions
(docs/capture.md, "Semi and anti joins"), on an in-memory graph served by a fake client: an
EXCLUDED node whose left parent the witness reaches brings its match's sources in, to a
fixpoint; one reached only through its match brings nothing; a truncated trace is refused."""

from __future__ import annotations

from typing import Any

import pytest

from sparkprov import query_adapter
from sparkprov.client import QueryClient, TraceTruncated
from sparkprov.query_model import Trace
from sparkprov.v1 import lineage_pb2, query_pb2

TOKEN, TIMES, EXCLUDED = lineage_pb2.OP_TOKEN, lineage_pb2.OP_TIMES, lineage_pb2.OP_EXCLUDED

# id -> (op, relation, value); edges parent -> child
NODES: dict[str, tuple[int, str, str]] = {
    "1": (TOKEN, "C", ""),  # the output's customer
    "2": (TIMES, "", ""),  # the output row
    "3": (TIMES, "", ""),  # customer 1 at anti join A's left input
    "4": (TOKEN, "O", ""),  # an order ...
    "5": (TOKEN, "X", ""),  # ... joined with an X row: the match of customer 1 at A
    "6": (TIMES, "", ""),
    "7": (EXCLUDED, "", "6"),  # A excluded 3, matched by 6
    "8": (TIMES, "", ""),  # the X row at anti join B's left input
    "9": (TOKEN, "P", ""),  # B's match for it
    "10": (EXCLUDED, "", "9"),
    "11": (TOKEN, "Z", ""),  # a left row no witness row reaches ...
    "12": (EXCLUDED, "", "1"),  # ... excluded by customer 1: not followed
    "13": (TOKEN, "Q", ""),  # a row nothing excludes
}
EDGES = [
    ("1", "2"), ("1", "3"), ("3", "7"), ("4", "6"), ("5", "6"), ("6", "7"),
    ("5", "8"), ("8", "10"), ("9", "10"), ("11", "12"), ("1", "12"), ("13", "2"),
]  # fmt: skip


class FakeClient(QueryClient):
    def __init__(self, limit: int = 1_000) -> None:
        self.limit = limit
        self.calls: list[tuple[str, list[str]]] = []

    def _walk(self, ids: list[str], backward: bool, limit: int) -> Trace:
        order = dict.fromkeys(ids)
        frontier, edges = list(ids), []
        while frontier:
            following = []
            for n in frontier:
                for s, d in EDGES:
                    if (d if backward else s) == n:
                        edges.append(query_pb2.Edge(src=s, dst=d))
                        reached = s if backward else d
                        if reached not in order:
                            order[reached] = None
                            following.append(reached)
            frontier = following
        nodes = [
            query_pb2.Node(
                id=i,
                op=NODES[i][0],
                relation=NODES[i][1],
                value=NODES[i][2],
                attributes={"key": i} if NODES[i][0] == TOKEN else {},
            )
            for i in order
        ]
        return query_adapter.trace(
            query_pb2.TraceResponse(
                nodes=nodes[: min(limit, self.limit)],
                edges=edges,
                truncated=len(nodes) > self.limit,
            )
        )

    def backward_trace(self, node_ids: list[str], **options: Any) -> Trace:
        self.calls.append(("backward", node_ids))
        return self._walk(node_ids, True, options["limit"])

    def forward_trace(self, node_ids: list[str], **options: Any) -> Trace:
        self.calls.append(("forward", node_ids))
        return self._walk(node_ids, False, options["limit"])


def test_the_witness_is_closed_under_exclusions_to_a_fixpoint() -> None:
    client = FakeClient()
    witness = client.witness(["2"])
    assert {r: sorted(row["key"] for row in rows) for r, rows in witness.items()} == {
        "C": ["1"],  # the backward trace
        "Q": ["13"],
        "O": ["4"],  # customer 1 reaches A's left row 3: its match 6's sources
        "X": ["5"],
        "P": ["9"],  # X row 5 reaches B's left row 8: its match 9 (second round)
    }  # Z (11) is not in it: 12's left row is not reached, only its match (1)
    assert client.calls == [
        ("backward", ["2"]),
        ("forward", ["1", "13"]),
        ("backward", ["6"]),
        ("forward", ["4", "5"]),
        ("backward", ["9"]),
        ("forward", ["9"]),
    ]


def test_without_exclusions_one_forward_trace_and_the_backward_tokens() -> None:
    client = FakeClient()
    assert client.witness(["13"]) == {"Q": [{"key": "13"}]}
    assert client.calls == [("backward", ["13"]), ("forward", ["13"])]


def test_a_truncated_forward_trace_is_refused() -> None:
    client = FakeClient(limit=4)  # the backward trace of 2 holds 3 nodes, the forward one more
    with pytest.raises(TraceTruncated, match="would be partial"):
        client.witness(["2"])
