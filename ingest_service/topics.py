"""Creates the lineage and dead-letter topics when they are missing (idempotent)."""

from __future__ import annotations

import logging

from ingest_service.settings import IngestSettings

__all__ = ["ensure_topics"]

log = logging.getLogger(__name__)


def ensure_topics(settings: IngestSettings) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(
        bootstrap_servers=settings.kafka_bootstrap.split(","),
        **settings.kafka_security.as_kafka_kwargs(),
    )
    try:
        existing = set(admin.list_topics())
        wanted = [
            NewTopic(
                settings.topic,
                settings.topic_partitions,
                1,
                topic_configs={"max.message.bytes": "8500000"},
            ),
            NewTopic(settings.dlq_topic, 1, 1, topic_configs={"max.message.bytes": "16800000"}),
        ]
        missing = [t for t in wanted if t.name not in existing]
        if missing:
            try:
                admin.create_topics(missing)
                log.info("created topics %s", [t.name for t in missing])
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()
