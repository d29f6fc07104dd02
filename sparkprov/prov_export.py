"""W3C PROV documents of traces and views, built with the ``prov`` library (PROV-DM), so they
serialize to PROV-JSON, PROV-N and PROV-XML and load back with ``ProvDocument.deserialize``.

The mapping (../shared/MODEL.md): every node of the trace is an entity ``sparkprov:n<id>`` (a
row, a value, an aggregate) carrying its op, label, relation, value and row attributes (as one
JSON text, since column names need not be valid qualified names). Every node derived from
others is also the result of one operator application, an activity ``sparkprov:a<id>`` of type
its op: the activity ``used`` each parent, the node ``wasGeneratedBy`` it, and the node
``wasDerivedFrom`` each parent through it. Nodes without parents in the trace (source tokens,
module invocations, values, or the trace's edge) are entities only.
"""

from __future__ import annotations

import json

from prov.model import ProvDocument, ProvEntity

from sparkprov.query_model import GraphView, Op, Trace

__all__ = ["NAMESPACE", "activity_id", "document", "entity_id", "to_prov_json", "to_prov_n"]

NAMESPACE = "urn:sparkprov:"
_PREFIX = "sparkprov"


def entity_id(node_id: str) -> str:
    return f"{_PREFIX}:n{node_id}"


def activity_id(node_id: str) -> str:
    return f"{_PREFIX}:a{node_id}"


def _op_name(op: int) -> str:
    try:
        return Op(op).name
    except ValueError:
        return str(op)


def document(graph: Trace | GraphView) -> ProvDocument:
    """The PROV document of a trace (or a zoom view, or ``QueryClient.run_trace``'s whole run)."""
    doc = ProvDocument()
    doc.add_namespace(_PREFIX, NAMESPACE)
    entities: dict[str, ProvEntity] = {}
    for node in graph.nodes:
        attributes: dict[str, str] = {
            "prov:label": node.label,
            f"{_PREFIX}:op": _op_name(node.op),
            f"{_PREFIX}:run": node.run_id,
        }
        if node.relation:
            attributes[f"{_PREFIX}:relation"] = node.relation
        if node.value:
            attributes[f"{_PREFIX}:value"] = node.value
        if node.attributes:
            attributes[f"{_PREFIX}:attributes"] = json.dumps(node.attributes, sort_keys=True)
        entities[node.id] = doc.entity(entity_id(node.id), attributes)
    parents: dict[str, list[str]] = {}
    for edge in graph.edges:
        if edge.src in entities and edge.dst in entities:
            parents.setdefault(edge.dst, []).append(edge.src)
    for child, used in parents.items():
        entity = entities[child]
        op = str(next(iter(entity.get_attribute(f"{_PREFIX}:op"))))
        application = doc.activity(
            activity_id(child), other_attributes={"prov:type": f"{_PREFIX}:{op}"}
        )
        entity.wasGeneratedBy(application)
        for parent in used:
            application.used(entities[parent])
            entity.wasDerivedFrom(entities[parent], application)
    return doc


def to_prov_json(graph: Trace | GraphView) -> str:
    return str(document(graph).serialize(format="json", indent=2))


def to_prov_n(graph: Trace | GraphView) -> str:
    return str(document(graph).get_provn())
