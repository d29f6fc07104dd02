"""Settings of the ingest service, built once from the environment in ``__main__``."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from ingest_service.levels import DEFAULT_THETA
from sparkprov import defaults
from sparkprov.kafka_security import KafkaSecurity

__all__ = ["IngestSettings"]


@dataclass(frozen=True)
class IngestSettings:
    kafka_bootstrap: str = defaults.KAFKA_BOOTSTRAP
    # TLS and SASL of the consumer, the dead-letter producer and the admin client alike; the
    # capture agent reads the same variables (sparkprov.kafka_security).
    kafka_security: KafkaSecurity = field(default_factory=KafkaSecurity)
    topic: str = defaults.TOPIC
    dlq_topic: str = defaults.DLQ_TOPIC
    group_id: str = "sparkprov-ingest"
    # How the broker names this process's consumer in the group (unique per process), so the
    # membership watchdog can find it there.
    client_id: str = field(default_factory=lambda: f"sparkprov-ingest-{uuid.uuid4().hex[:12]}")
    # A consumer that holds no partition for this long is checked against the broker's view of
    # the group, and recreated if the group left it out (ingest_service.membership); the bound
    # doubles after each recreation.
    unassigned_s: float = 15.0
    # Created with this many partitions when missing; more partitions let more consumers share.
    topic_partitions: int = 4
    neo4j_uri: str = defaults.NEO4J_URI
    neo4j_user: str = ""
    neo4j_password: str = field(default="", repr=False)
    # A PEM file of the CA that signed Neo4j's certificate, for a bolt+s:// or neo4j+s:// URI
    # (the system's CAs when empty).
    neo4j_tls_ca: str = ""
    # The Neo4j database (empty: the user's home database; Community has one, `neo4j`).
    neo4j_database: str = ""
    http_addr: str = defaults.INGEST_HTTP_ADDR
    # A flush happens when this many nodes+edges are buffered or the oldest waited batch_ms.
    batch_rows: int = 20000
    batch_ms: int = 250
    # Neo4j commits a write's records in transactions of this many (0: one transaction per
    # write): smaller transactions are faster (bench/README.md, "Transactions of the size the
    # engine likes"); each adds its own counts to its runs, so a write cut short counts no record
    # twice when it is sent again.
    tx_records: int = 2000
    max_poll_records: int = 500
    # Kafka drops a member that does not poll for this long. The loop polls between any two
    # writes of at most batch_rows each, so one write must stay well below it.
    max_poll_interval_ms: int = 300000
    # A connected set that reaches this many nodes is refined by its sub-splits (CSProv theta).
    theta: int = DEFAULT_THETA
    # After SIGTERM/SIGINT the current flush may finish for this long; past it the process exits
    # at once, abandoning the flush: its open transaction rolls back (those of its tx_records
    # transactions that committed stay, counted) and its offsets stay uncommitted,
    # so it is redelivered (as after a SIGKILL). Below docker's and systemd's 10 s kill timeouts.
    shutdown_grace_s: float = 8.0
    # Retention: runs older than this many days (since completed, or started if never) are
    # deleted, checked every retention_check_s (ingest_service.retention); 0 keeps every run.
    retention_days: float = 0.0
    retention_check_s: float = 3600.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> IngestSettings:
        def get(name: str, default: str) -> str:
            return environ.get(name, default)

        return cls(
            kafka_bootstrap=get(defaults.ENV_KAFKA_BOOTSTRAP, defaults.KAFKA_BOOTSTRAP),
            kafka_security=KafkaSecurity.from_env(environ),
            topic=get(defaults.ENV_TOPIC, defaults.TOPIC),
            dlq_topic=get(defaults.ENV_DLQ_TOPIC, defaults.DLQ_TOPIC),
            group_id=get("SPARKPROV_INGEST_GROUP", cls.group_id),
            topic_partitions=int(get("SPARKPROV_TOPIC_PARTITIONS", str(cls.topic_partitions))),
            neo4j_uri=get(defaults.ENV_NEO4J_URI, defaults.NEO4J_URI),
            neo4j_user=get(defaults.ENV_NEO4J_USER, ""),
            neo4j_password=get(defaults.ENV_NEO4J_PASSWORD, ""),
            neo4j_tls_ca=get(defaults.ENV_NEO4J_TLS_CA, ""),
            neo4j_database=get(defaults.ENV_NEO4J_DATABASE, ""),
            http_addr=get(defaults.ENV_INGEST_HTTP_ADDR, defaults.INGEST_HTTP_ADDR),
            batch_rows=int(get("SPARKPROV_INGEST_BATCH_ROWS", str(cls.batch_rows))),
            batch_ms=int(get("SPARKPROV_INGEST_BATCH_MS", str(cls.batch_ms))),
            tx_records=int(get("SPARKPROV_INGEST_TX_RECORDS", str(cls.tx_records))),
            max_poll_records=int(
                get("SPARKPROV_INGEST_MAX_POLL_RECORDS", str(cls.max_poll_records))
            ),
            max_poll_interval_ms=int(
                get("SPARKPROV_INGEST_MAX_POLL_INTERVAL_MS", str(cls.max_poll_interval_ms))
            ),
            theta=int(get("SPARKPROV_SET_THETA", str(cls.theta))),
            shutdown_grace_s=float(get("SPARKPROV_INGEST_SHUTDOWN_S", str(cls.shutdown_grace_s))),
            unassigned_s=float(get("SPARKPROV_INGEST_UNASSIGNED_S", str(cls.unassigned_s))),
            retention_days=float(get("SPARKPROV_RETENTION_DAYS", str(cls.retention_days))),
            retention_check_s=float(get("SPARKPROV_RETENTION_CHECK_S", str(cls.retention_check_s))),
        )
