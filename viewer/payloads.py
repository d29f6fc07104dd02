"""The one place that turns ``sparkprov.v1`` protobuf messages into the JSON the page reads.

A node is ``{"id", "run_id", "op", "label", "relation", "attributes", "value"}`` with ``op`` the
name without its ``OP_`` prefix (``DELTA``, ``AGGREGATE``, ...); a run, a deletion and a
recomputed aggregate likewise keep their protobuf field names.
"""

from __future__ import annotations

from typing import Any

from sparkprov.v1 import lineage_pb2, query_pb2

__all__ = ["JSON", "deletion", "node", "run"]

JSON = dict[str, Any]


def node(message: query_pb2.Node) -> JSON:
    return {
        "id": message.id,
        "run_id": message.run_id,
        "op": lineage_pb2.Op.Name(message.op).removeprefix("OP_"),
        "label": message.label,
        "relation": message.relation,
        "attributes": dict(sorted(message.attributes.items())),
        "value": message.value,
    }


def source_row(message: query_pb2.SourceRow) -> JSON:
    """Where a source row lives: ``file`` and ``row`` when ``by_file``, else Spark's
    ``partition`` and ``offset``."""
    where: JSON = {"node_id": message.node_id, "relation": message.relation}
    if message.by_file:
        return {**where, "by_file": True, "file": message.file, "row": message.row}
    return {**where, "by_file": False, "partition": message.partition, "offset": message.offset}


def run(message: query_pb2.Run) -> JSON:
    return {
        "run_id": message.run_id,
        "workflow": message.workflow,
        "state": query_pb2.RunState.Name(message.state).removeprefix("RUN_STATE_"),
        "node_count": message.node_count,
        "edge_count": message.edge_count,
        "started_unix_ms": message.started_unix_ms,
    }


def deletion(message: query_pb2.DeletionResponse) -> JSON:
    return {
        "deleted": list(message.deleted_node_ids),
        "recomputed": [
            {
                "node_id": r.node_id,
                "function": r.function,
                "old_value": r.old_value,
                "new_value": r.new_value,
                "inputs": r.inputs,
            }
            for r in message.recomputed
        ],
    }
