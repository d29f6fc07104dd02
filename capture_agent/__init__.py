"""sparkprov capture agent: row- and value-level provenance for PySpark DataFrame pipelines.

    from capture_agent import ProvenanceSession
    with ProvenanceSession(spark, workflow="people") as prov:
        p1 = prov.source(df, "Person1")
        p2 = p1.filter(F.col("Age") >= 25).named("Person2")
        rows = p2.groupBy("City").agg(F.avg("Age").alias("Age")).named("AvgAge").collect()

Lineage is computed by Spark next to the user's own work and published to Kafka from the
executors; the driver only publishes a run-start and a run-complete marker with the counts.
Settings come from the driver's environment (``CaptureSettings``); with the kill switch on
(``SPARKPROV_DISABLED=1``) the same job runs on plain DataFrames (``PlainFrame``).
"""

from capture_agent.errors import CaptureError, PublishError, SettingsError, UnsupportedOperation
from capture_agent.frame import TrackedFrame
from capture_agent.grouping import TrackedGroupedData
from capture_agent.passthrough import PlainFrame
from capture_agent.session import ProvenanceSession
from capture_agent.settings import CaptureSettings
from sparkprov.kafka_security import KafkaSecurity

__all__ = [
    "CaptureError",
    "CaptureSettings",
    "KafkaSecurity",
    "PlainFrame",
    "ProvenanceSession",
    "PublishError",
    "SettingsError",
    "TrackedFrame",
    "TrackedGroupedData",
    "UnsupportedOperation",
]
