"""Delivery of lineage events to Kafka, from executors and from the driver.

One ``KafkaProducer`` per Python process, bootstrap address, security settings and bounds, created
lazily:
Spark reuses its Python workers, so a producer outlives the task that created it and sends batch
after batch asynchronously. Each capture point calls :meth:`PartitionSender.close` when its
partition ends, which flushes and checks every send of that partition, so a task only succeeds once
its lineage is in Kafka. A broker that is down is waited for and retried (kafka-python reconnects
with backoff) for at most ``timeout_s``: connecting, handing over a message and each
acknowledgement have that bound. Past it the task fails (and, after Spark's retries, the job) with
a :class:`PublishError` that says how many messages were sent and how many were left
unacknowledged; the session then fails the run with the counts of what completed tasks delivered.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from capture_agent.errors import PublishError
from sparkprov import defaults
from sparkprov.kafka_security import KafkaSecurity

__all__ = ["PartitionSender", "PublisherConfig", "producer_bounds", "producer_for"]

log = logging.getLogger(__name__)

_producers: dict[tuple[str, KafkaSecurity, float, int, str], Any] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class PublisherConfig:
    bootstrap: str
    topic: str
    # How long a send may wait for buffer space or metadata, and a flush for acknowledgements.
    timeout_s: float = 60.0
    max_message_bytes: int = 8 * 1024 * 1024
    # Messages a partition may have unacknowledged before send() waits: bounds executor memory.
    max_in_flight: int = 32
    # TLS and SASL (sparkprov.kafka_security): built on the driver, pickled to the executors
    # with the rest of the config, so they need no environment.
    security: KafkaSecurity = field(default_factory=KafkaSecurity)
    # Kafka's compression.type for the lineage batches: one of defaults.KAFKA_COMPRESSIONS.
    compression: str = defaults.KAFKA_COMPRESSION

    def __post_init__(self) -> None:
        if self.compression not in defaults.KAFKA_COMPRESSIONS:
            raise ValueError(
                f"Kafka compression must be one of {', '.join(defaults.KAFKA_COMPRESSIONS)}, "
                f"got {self.compression!r} ({defaults.ENV_KAFKA_COMPRESSION})"
            )


def producer_bounds(config: PublisherConfig, linger_ms: int) -> tuple[int, int, int]:
    """(bound, request, delivery) timeouts in ms of a producer lingering ``linger_ms``: every
    wait ends after ``config.timeout_s``, and delivery exceeds linger + request as both Kafka
    clients require. Shared by the Python producer here and the JVM taps' (capture_agent.jvm)."""
    bound_ms = int(config.timeout_s * 1000)
    request_ms = min(30000, max(500, bound_ms // 2))
    return bound_ms, request_ms, max(bound_ms, request_ms + linger_ms + 1)


def producer_for(config: PublisherConfig) -> Any:
    """The process-wide producer for this bootstrap address, these security settings and these
    bounds. The bounds are part of the key: a producer made for a session with a short
    ``timeout_s`` must not serve a later session of the same process that allows a longer one
    (its records would expire after the first session's bound)."""
    key = (
        config.bootstrap,
        config.security,
        config.timeout_s,
        config.max_message_bytes,
        config.compression,
    )
    with _lock:
        producer = _producers.get(key)
        if producer is None:
            from kafka import KafkaProducer  # lazy: imported on executors only when capturing

            linger_ms = 20
            bound_ms, request_ms, delivery_ms = producer_bounds(config, linger_ms)
            started = time.monotonic()
            try:
                producer = KafkaProducer(
                    bootstrap_servers=config.bootstrap.split(","),
                    acks="all",
                    linger_ms=linger_ms,
                    batch_size=1024 * 1024,
                    max_request_size=config.max_message_bytes,
                    compression_type=None if config.compression == "none" else config.compression,
                    max_block_ms=bound_ms,
                    delivery_timeout_ms=delivery_ms,
                    request_timeout_ms=request_ms,
                    # Retries the connection with backoff for at most the bound (the default
                    # would wait 30 s whatever the bound).
                    bootstrap_timeout_ms=bound_ms,
                    **config.security.as_kafka_kwargs(),
                )
            except Exception as e:  # KafkaTimeoutError, NoBrokersAvailable
                raise PublishError(
                    f"no Kafka producer for {config.bootstrap} (broker unreachable?): "
                    f"gave up after "
                    f"{time.monotonic() - started:.1f}s (bound {config.timeout_s}s): {e}"
                ) from e
            _producers[key] = producer
        return producer


@atexit.register
def _close_all() -> None:
    with _lock:
        for producer in _producers.values():
            try:
                producer.close(timeout=10)
            except Exception:  # noqa: BLE001 - best effort at interpreter exit
                log.debug("producer close failed", exc_info=True)
        _producers.clear()


class PartitionSender:
    """Sends the events of one capture point in one partition and confirms them all at the end."""

    def __init__(self, config: PublisherConfig, key: bytes | None = None) -> None:
        self._config = config
        self._key = key
        self._producer = producer_for(config)
        self._futures: deque[Any] = deque()
        self.messages = 0  # handed to the producer
        self.acknowledged = 0

    def send(self, value: bytes) -> None:
        while len(self._futures) >= self._config.max_in_flight:
            self._confirm(self._futures.popleft())
        try:
            future = self._producer.send(self._config.topic, value=value, key=self._key)
        except Exception as e:  # KafkaTimeoutError when the broker is unreachable past the bound
            raise PublishError(
                f"could not hand lineage to Kafka at {self._config.bootstrap} within "
                f"{self._config.timeout_s}s: {self._counts()}: {e}"
            ) from e
        self._futures.append(future)
        self.messages += 1

    def close(self) -> None:
        """Wait until Kafka acknowledged every message of this partition, or raise."""
        try:
            self._producer.flush(timeout=self._config.timeout_s)
        except Exception as e:
            raise PublishError(
                f"lineage not acknowledged by Kafka at {self._config.bootstrap} within "
                f"{self._config.timeout_s}s: {self._counts()}: {e}"
            ) from e
        while self._futures:
            self._confirm(self._futures.popleft())

    def _counts(self) -> str:
        return (
            f"{self.messages} messages sent by this partition, {self.acknowledged} acknowledged, "
            f"{self.messages - self.acknowledged} unacknowledged"
        )

    def _confirm(self, future: Any) -> None:
        try:
            future.get(timeout=self._config.timeout_s)
        except Exception as e:
            raise PublishError(
                f"a lineage message was not acknowledged by Kafka at {self._config.bootstrap} "
                f"within {self._config.timeout_s}s: {self._counts()}: {e}"
            ) from e
        self.acknowledged += 1
