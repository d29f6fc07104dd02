"""Environment variable names and laptop defaults shared by the services and the local stack.

Each service builds its own frozen settings object from these in its ``__main__``; nothing else
reads ``os.environ``. The defaults match what ``make up`` starts.
"""

from __future__ import annotations

__all__ = [
    "is_on",
    "ENV_DISABLED",
    "ENV_DLQ_TOPIC",
    "ENV_GRPC_ADDR",
    "ENV_INGEST_HTTP_ADDR",
    "ENV_QUERY_METRICS_ADDR",
    "ENV_KAFKA_BOOTSTRAP",
    "ENV_KAFKA_COMPRESSION",
    "ENV_NEO4J_HTTP_ADDR",
    "ENV_NEO4J_PASSWORD",
    "ENV_NEO4J_DATABASE",
    "ENV_NEO4J_TLS_CA",
    "ENV_NEO4J_URI",
    "ENV_NEO4J_USER",
    "ENV_OPENLINEAGE",
    "ENV_QUERY_TLS",
    "ENV_QUERY_TLS_CA",
    "ENV_QUERY_TOKEN",
    "ENV_TOPIC",
    "ENV_VIEWER_ADDR",
    "KAFKA_BOOTSTRAP",
    "KAFKA_COMPRESSION",
    "KAFKA_ZSTD_LEVEL",
    "KAFKA_LINGER_MS",
    "KAFKA_COMPRESSIONS",
    "ROWS_PER_MESSAGE",
    "DLQ_TOPIC",
    "GRPC_ADDR",
    "INGEST_HTTP_ADDR",
    "QUERY_METRICS_ADDR",
    "NEO4J_HTTP_ADDR",
    "NEO4J_URI",
    "TOPIC",
    "VIEWER_ADDR",
]

ENV_KAFKA_BOOTSTRAP = "SPARKPROV_KAFKA_BOOTSTRAP"
ENV_TOPIC = "SPARKPROV_TOPIC"
# The codec of the capture agent's lineage batches (Kafka's compression.type, applied per record
# batch by the producer, read transparently by every consumer).
ENV_KAFKA_COMPRESSION = "SPARKPROV_KAFKA_COMPRESSION"
ENV_DLQ_TOPIC = "SPARKPROV_DLQ_TOPIC"
ENV_NEO4J_URI = "SPARKPROV_NEO4J_URI"
ENV_NEO4J_USER = "SPARKPROV_NEO4J_USER"
ENV_NEO4J_PASSWORD = "SPARKPROV_NEO4J_PASSWORD"
ENV_NEO4J_TLS_CA = "SPARKPROV_NEO4J_TLS_CA"
ENV_NEO4J_DATABASE = "SPARKPROV_NEO4J_DATABASE"
ENV_GRPC_ADDR = "SPARKPROV_GRPC_ADDR"
ENV_INGEST_HTTP_ADDR = "SPARKPROV_INGEST_HTTP_ADDR"
ENV_QUERY_METRICS_ADDR = "SPARKPROV_QUERY_METRICS_ADDR"
ENV_DISABLED = "SPARKPROV_DISABLED"
ENV_QUERY_TOKEN = "SPARKPROV_QUERY_TOKEN"
# The query service's clients (QueryClient, the CLI, the viewer) over TLS: a PEM file of the CA
# that signed its certificate, or "1" in SPARKPROV_QUERY_TLS for the system's CAs.
ENV_QUERY_TLS_CA = "SPARKPROV_QUERY_TLS_CA"
ENV_QUERY_TLS = "SPARKPROV_QUERY_TLS"
# The trace viewer's address (the viewer serves on it; `sparkprov open` opens it).
ENV_VIEWER_ADDR = "SPARKPROV_VIEWER_ADDR"
# The local Neo4j's HTTP connector: the transactional Cypher endpoint and Neo4j Browser.
ENV_NEO4J_HTTP_ADDR = "SPARKPROV_NEO4J_HTTP_ADDR"
# "1" turns on OpenLineage events of every ProvenanceSession, through the openlineage-python
# client's own configuration (OPENLINEAGE_URL, OPENLINEAGE_CONFIG, openlineage.yml); they are
# also on whenever OPENLINEAGE_URL or OPENLINEAGE_CONFIG is set.
ENV_OPENLINEAGE = "SPARKPROV_OPENLINEAGE"

KAFKA_BOOTSTRAP = "127.0.0.1:9092"
# zstd by default: lineage batches are columns of texts and ids, and zstd keeps up with the
# producer on one core (bench/README.md, "Bytes per input row"). The Python consumer and producer
# read and write it through the `zstandard` package, a dependency of sparkprov.
KAFKA_COMPRESSION = "zstd"
# zstd's level in the JVM producers (Kafka's compression.zstd.level; its default is 3). Level 1
# costs less CPU in the task thread that appends the batch and, on these batches, makes fewer bytes
# too: bench's pipeline at 10M rows 5.9 bytes per input row against 6.8, 1.70x against 1.80x
# (bench/README.md, "zstd at level 1").
KAFKA_ZSTD_LEVEL = 1
# How long the JVM producers (the taps' and the capture extension's) wait to fill a batch. A task
# flushes its producer before it waits for anything, so no task waits for the linger; longer
# lingers make fewer, fuller requests: the broker's and the producer thread's CPU per 1M-row
# pipeline run fell from 0.13 to 0.05 s on 2 cores, CPU the tasks share the cores with
# (bench/README.md, "A longer linger"). capture_jar's CaptureRun.LINGER_MS is the same number.
KAFKA_LINGER_MS = 50
# Rows of one capture point per message (a chunk), unless its texts and id arrays fill one first
# (capture_jar's Chunk.MAX_OBJECT_BYTES). 8,192 rather than 2,048: a quarter of the messages and
# their acknowledgements, and longer zstd frames; bench's pipeline captured 0.77 -> 0.66 s
# (median of 3 runs each, bench/README.md, "Chunks of 8,192 rows"). capture_jar's
# CaptureRun.DEFAULT_ROWS_PER_MESSAGE is the same number.
ROWS_PER_MESSAGE = 8192
# The codecs the ingest service (kafka-python) reads with sparkprov's dependencies alone.
KAFKA_COMPRESSIONS = ("none", "gzip", "zstd")
TOPIC = "sparkprov.lineage"
DLQ_TOPIC = "sparkprov.lineage.dlq"
NEO4J_URI = "bolt://127.0.0.1:7687"
GRPC_ADDR = "127.0.0.1:50051"
INGEST_HTTP_ADDR = "127.0.0.1:9464"
QUERY_METRICS_ADDR = "127.0.0.1:9465"
VIEWER_ADDR = "127.0.0.1:8090"
NEO4J_HTTP_ADDR = "127.0.0.1:7474"


def is_on(value: str | None) -> bool:
    """How every boolean setting reads: "1", "true", "yes" or "on", any case; else off."""
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}
