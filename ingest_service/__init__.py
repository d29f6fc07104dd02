"""sparkprov ingest service: Kafka lineage events into Neo4j, idempotently, with component ids.

At-least-once in (offsets are committed only after the Neo4j transaction commits), idempotent
writes (MERGE on the unique node id), so a re-delivered or re-sent event never duplicates a node
or an edge, and a killed process restarts from the last committed offsets and catches up.
"""

from ingest_service.settings import IngestSettings

__all__ = ["IngestSettings"]
