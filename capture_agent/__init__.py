"""sparkprov capture agent: row- and value-level provenance for PySpark DataFrame pipelines.

    from capture_agent import ProvenanceSession
    with ProvenanceSession(spark, workflow="people") as prov:
        p1 = prov.source(df, "Person1")
        p2 = p1.filter(F.col("Age") >= 25).named("Person2")
        rows = p2.groupBy("City").agg(F.avg("Age").alias("Age")).named("AvgAge").collect()

Lineage is computed by Spark next to the user's own work and published to Kafka from the
executors; the driver only publishes a run-start and a run-complete marker with the counts.
"""

from capture_agent.errors import CaptureError, PublishError, UnsupportedOperation
from capture_agent.frame import TrackedFrame
from capture_agent.grouping import TrackedGroupedData
from capture_agent.session import ProvenanceSession
from sparkprov.kafka_security import KafkaSecurity

__all__ = [
    "CaptureError",
    "KafkaSecurity",
    "ProvenanceSession",
    "PublishError",
    "TrackedFrame",
    "TrackedGroupedData",
    "UnsupportedOperation",
]
