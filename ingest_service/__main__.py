"""``python -m ingest_service``: settings from the environment (see README), then consume."""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
import time
from types import FrameType

from ingest_service import retention
from ingest_service.consumer import Consumer
from ingest_service.indexer import Indexer
from ingest_service.metrics import Metrics
from ingest_service.monitoring import serve
from ingest_service.retention import Expiry
from ingest_service.settings import IngestSettings
from ingest_service.store import Store, StoreUnavailable
from ingest_service.topics import ensure_topics
from sparkprov.runtime import configure_logging

log = logging.getLogger("ingest_service")


def _abandon(grace_s: float) -> None:
    """The flush outlasted the grace period: exit now. Nothing uncommitted is lost: Neo4j rolls
    the open transaction back and the offsets were not committed, so the events come again."""
    log.warning("the current flush outlasted %.0fs after the signal; abandoning it", grace_s)
    logging.shutdown()
    os._exit(0)


def main() -> int:
    configure_logging(os.environ.get("SPARKPROV_LOG_LEVEL", "INFO"))
    settings = IngestSettings.from_env(os.environ)
    store = Store.connect(
        settings.neo4j_uri,
        settings.neo4j_user,
        settings.neo4j_password,
        settings.theta,
        tls_ca=settings.neo4j_tls_ca,
        database=settings.neo4j_database,
        tx_records=settings.tx_records,
    )
    while True:
        try:
            store.ensure_schema()
            break
        except StoreUnavailable as e:
            log.warning("waiting for Neo4j at %s: %s", settings.neo4j_uri, e)
            time.sleep(2)
    ensure_topics(settings)
    metrics = Metrics()
    http = serve(settings.http_addr, metrics)
    consumer = Consumer(settings, store, metrics)
    indexer = Indexer(store, metrics, busy=consumer.busy)
    expiry = None
    if settings.retention_days > 0:
        expiry = Expiry(
            functools.partial(retention.expire, store.driver),
            settings.retention_days * 86400,
            settings.retention_check_s,
        )

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info(
            "signal %d: finishing the current flush (at most %.0fs) and stopping",
            signum,
            settings.shutdown_grace_s,
        )
        consumer.stop()
        indexer.stop()
        if expiry is not None:
            expiry.stop()
        watchdog = threading.Timer(
            settings.shutdown_grace_s, _abandon, (settings.shutdown_grace_s,)
        )
        watchdog.daemon = True
        watchdog.start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info(
        "consuming %s at %s as group %s into %s",
        settings.topic,
        settings.kafka_bootstrap,
        settings.group_id,
        settings.neo4j_uri,
    )
    indexing = indexer.start()
    if expiry is not None:
        expiry.start()
    try:
        consumer.run()
    finally:
        indexer.stop()
        indexing.join(timeout=settings.shutdown_grace_s)
        http.shutdown()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
