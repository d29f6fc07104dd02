"""sparkprov.prov_export on a small trace: the document round-trips through PROV-JSON with the
prov library, every node is an entity, every derived node one activity that used its parents,
and every edge a wasDerivedFrom through that activity."""

from __future__ import annotations

from prov.model import (
    ProvDerivation,
    ProvDocument,
    ProvEntity,
    ProvGeneration,
    ProvRecord,
    ProvUsage,
)

from sparkprov import prov_export
from sparkprov.query_model import Edge, Node, Op, Trace

TRACE = Trace(
    nodes=(
        Node("5", "r", Op.DELTA, "δ", "Avg", {"City": "NY", "odd name": "x"}),
        Node("-3", "r", Op.TOKEN, "P#0", "P", {"Age": "30"}),
        Node("-4", "r", Op.TOKEN, "P#1", "P", {"Age": "40"}),
        Node("6", "r", Op.AGGREGATE, "AVG", value="35.0"),
    ),
    edges=(Edge("-3", "5"), Edge("-4", "5"), Edge("-3", "6"), Edge("-4", "6"), Edge("6", "5")),
)


def _formal(record: ProvRecord, n: int) -> tuple[str, ...]:
    return tuple(str(value) for _, value in record.formal_attributes[:n])


def test_round_trip_and_mapping() -> None:
    document = prov_export.document(TRACE)
    loaded = ProvDocument.deserialize(content=prov_export.to_prov_json(TRACE), format="json")
    assert loaded == document
    entities = {str(r.identifier) for r in loaded.get_records(ProvEntity)}
    assert entities == {prov_export.entity_id(n.id) for n in TRACE.nodes}
    derived = {
        (
            str(r.formal_attributes[1][1]),
            str(r.formal_attributes[0][1]),
            str(r.formal_attributes[2][1]),
        )
        for r in loaded.get_records(ProvDerivation)
    }  # (used, generated, activity)
    assert derived == {
        (prov_export.entity_id(e.src), prov_export.entity_id(e.dst), prov_export.activity_id(e.dst))
        for e in TRACE.edges
    }
    used = {
        (str(r.formal_attributes[0][1]), str(r.formal_attributes[1][1]))
        for r in loaded.get_records(ProvUsage)
    }
    assert used == {
        (prov_export.activity_id(e.dst), prov_export.entity_id(e.src)) for e in TRACE.edges
    }
    generated = {str(r.formal_attributes[0][1]) for r in loaded.get_records(ProvGeneration)}
    assert generated == {prov_export.entity_id("5"), prov_export.entity_id("6")}  # not tokens
    provn = prov_export.to_prov_n(TRACE)
    assert 'sparkprov:op="AGGREGATE"' in provn and 'sparkprov:value="35.0"' in provn
