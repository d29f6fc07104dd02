"""Delivery of lineage events to Kafka, from executors and from the driver.

One ``KafkaProducer`` per Python process and bootstrap address, created lazily: Spark reuses its
Python workers, so a producer outlives the task that created it and sends batch after batch
asynchronously. Each capture point calls :meth:`PartitionSender.close` when its partition ends,
which flushes and checks every send of that partition, so a task only succeeds once its lineage is
in Kafka. A broker that stays down fails the task (and, after Spark's retries, the job) loudly.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from capture_agent.errors import PublishError

__all__ = ["PartitionSender", "PublisherConfig", "producer_for"]

log = logging.getLogger(__name__)

_producers: dict[str, Any] = {}
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


def producer_for(config: PublisherConfig) -> Any:
    """The process-wide producer for this bootstrap address."""
    with _lock:
        producer = _producers.get(config.bootstrap)
        if producer is None:
            from kafka import KafkaProducer  # lazy: imported on executors only when capturing

            producer = KafkaProducer(
                bootstrap_servers=config.bootstrap.split(","),
                acks="all",
                linger_ms=20,
                batch_size=1024 * 1024,
                max_request_size=config.max_message_bytes,
                max_block_ms=int(config.timeout_s * 1000),
                delivery_timeout_ms=int(config.timeout_s * 1000),
                request_timeout_ms=min(30000, int(config.timeout_s * 1000)),
            )
            _producers[config.bootstrap] = producer
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
        self.messages = 0

    def send(self, value: bytes) -> None:
        while len(self._futures) >= self._config.max_in_flight:
            self._confirm(self._futures.popleft())
        try:
            future = self._producer.send(self._config.topic, value=value, key=self._key)
        except Exception as e:  # KafkaTimeoutError when the broker is unreachable past the bound
            raise PublishError(
                f"could not hand lineage to Kafka at {self._config.bootstrap} "
                f"after {self.messages} messages: {e}"
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
                f"{self._config.timeout_s}s ({self.messages} messages pending): {e}"
            ) from e
        while self._futures:
            self._confirm(self._futures.popleft())

    def _confirm(self, future: Any) -> None:
        try:
            future.get(timeout=self._config.timeout_s)
        except Exception as e:
            raise PublishError(
                f"a lineage message was not acknowledged by Kafka at {self._config.bootstrap} "
                f"({self.messages} sent by this partition so far): {e}"
            ) from e
