"""Where captured lineage goes: the emission seam of the capture agent.

An :class:`Emitter` is built on the driver and pickled into every capture point, so it must hold
only picklable state. The driver publishes its few events itself (run markers, MODULE nodes:
:meth:`Emitter.publish`, which waits for the acknowledgement); each capture point on an executor
opens one :class:`Sender` per partition, sends its batches and closes it, and the task succeeds
only once :meth:`Sender.close` returned (every message acknowledged). The JVM capture points
(``capture_agent.jvm``, the default) send through the emitter's :meth:`Emitter.jvm_sink` instead,
with the same guarantee.

Three implementations:

- :class:`KafkaEmitter`: the production path (``capture_agent.publisher``), one producer per
  Python process;
- :class:`NoopEmitter`: lineage goes nowhere. A disabled session's (the kill switch is the
  session's, which then captures nothing at all: capture_agent.passthrough); given to an enabled
  session, capture runs in full and every message is dropped;
- :class:`MemoryEmitter`: every message, executors' included, lands in a Spark accumulator that
  the driver reads (:meth:`MemoryEmitter.messages`): capture without a broker, for unit tests.
  Like every accumulator, it keeps what successful tasks sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.accumulators import AccumulatorParam

from capture_agent.errors import PublishError
from capture_agent.publisher import PartitionSender, PublisherConfig, producer_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from capture_agent.jvm import JvmTaps

__all__ = ["Emitter", "KafkaEmitter", "MemoryEmitter", "NoopEmitter", "Sender"]


class Sender(Protocol):
    """The messages of one capture point in one partition."""

    def send(self, value: bytes) -> None: ...

    def close(self) -> None:
        """Returns once every message sent is delivered; raises PublishError otherwise."""


class Emitter(Protocol):
    @property
    def timeout_s(self) -> float:
        """How long delivery may be retried before a PublishError."""

    def describe(self) -> str:
        """Where the lineage goes, for messages: e.g. "Kafka at 127.0.0.1:9092"."""

    def publish(self, value: bytes, key: bytes) -> None:
        """Sends one driver-side event and waits until it is delivered, or PublishError."""

    def sender(self, key: bytes) -> Sender:
        """A sender for one capture point in one partition (called on executors)."""

    def jvm_sink(self, taps: JvmTaps) -> Any:
        """The JVM taps' sink for this destination (an io.sparkprov.capture.Sink), built on
        the driver; the JVM capture points send through it instead of :meth:`sender`."""


@dataclass(frozen=True)
class KafkaEmitter:
    """Lineage to a Kafka topic (``config``: bootstrap, topic, bounds, TLS/SASL)."""

    config: PublisherConfig

    @property
    def timeout_s(self) -> float:
        return self.config.timeout_s

    def describe(self) -> str:
        return f"Kafka at {self.config.bootstrap}"

    def publish(self, value: bytes, key: bytes) -> None:
        producer = producer_for(self.config)  # raises PublishError past the bound
        try:
            future = producer.send(self.config.topic, value=value, key=key)
            # Sent at once rather than after the producer's linger: the driver waits for each
            # marker and MODULE node (one per module invocation).
            producer.flush(timeout=self.config.timeout_s)
            future.get(timeout=self.config.timeout_s)
        except Exception as e:
            raise PublishError(f"could not publish to {self.describe()}: {e}") from e

    def sender(self, key: bytes) -> Sender:
        return PartitionSender(self.config, key=key)

    def jvm_sink(self, taps: JvmTaps) -> Any:
        return taps.kafka_sink(self.config)


@dataclass(frozen=True)
class NoopEmitter:
    """Lineage goes nowhere: every message is dropped."""

    @property
    def timeout_s(self) -> float:
        return 0.0

    def describe(self) -> str:
        return "nowhere"

    def publish(self, value: bytes, key: bytes) -> None:
        return None

    def sender(self, key: bytes) -> Sender:
        return _NoopSender()

    def jvm_sink(self, taps: JvmTaps) -> Any:
        return taps.discard_sink()


class _NoopSender:
    def send(self, value: bytes) -> None:
        return None

    def close(self) -> None:
        return None


class _MessagesParam(AccumulatorParam):  # type: ignore[type-arg]
    def zero(self, value: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        return []

    def addInPlace(  # noqa: N802 - pyspark's name
        self, value1: list[tuple[bytes, bytes]], value2: list[tuple[bytes, bytes]]
    ) -> list[tuple[bytes, bytes]]:
        value1.extend(value2)
        return value1


_COLLECTED_PER_CALL = 512  # messages the JVM sinks hand over per collect (MemoryEmitter.values)


class MemoryEmitter:
    """Every (key, message) in a Spark accumulator: read them on the driver with
    :meth:`messages` once the job's actions returned."""

    def __init__(self, spark: SparkSession) -> None:
        self._messages: Any = spark.sparkContext.accumulator([], _MessagesParam())
        self._jvm_sinks: list[Any] = []  # the JVM taps' memory sinks (driver only)

    def __getstate__(self) -> dict[str, Any]:
        return {"_messages": self._messages, "_jvm_sinks": []}

    @property
    def timeout_s(self) -> float:
        return 0.0

    def describe(self) -> str:
        return "memory"

    def publish(self, value: bytes, key: bytes) -> None:
        self._messages.add([(key, value)])

    def sender(self, key: bytes) -> Sender:
        return _MemorySender(self._messages, key)

    def jvm_sink(self, taps: JvmTaps) -> Any:
        sink = taps.memory_sink()
        self._jvm_sinks.append(sink)
        return sink

    def messages(self) -> list[tuple[bytes, bytes]]:
        """Every (key, value) sent so far by the driver and by successful tasks (those of the
        JVM capture points after the driver's and the Python capture points')."""
        messages = list(self._messages.value)
        for sink in self._jvm_sinks:
            messages.extend(zip(sink.keys(), sink.values(), strict=True))
        return messages

    def values(self, spark: SparkSession) -> list[bytes]:
        """The values of :meth:`messages`, in its order, the JVM capture points' collected as
        a binary Dataset: py4j hands a ``byte[]`` over as one Python int per byte (30 MB of
        lineage took 58 s that way, 6 s this way)."""
        from pyspark.sql import DataFrame

        jvm: Any = spark.sparkContext._jvm
        binary = jvm.org.apache.spark.sql.Encoders.BINARY()
        out = [v for _, v in self._messages.value]
        for sink in self._jvm_sinks:
            values = sink.values()
            total = values.size()
            # A slice at a time: a collect holds its rows twice more in the driver's heap (TPC-DS
            # q14's lineage at SF 0.1 ran a 6 GB heap out in one collect).
            for start in range(0, total, _COLLECTED_PER_CALL):
                part = values.subList(start, min(total, start + _COLLECTED_PER_CALL))
                ds = spark._jsparkSession.createDataset(part, binary)
                out += [bytes(r[0]) for r in DataFrame(ds.toDF(), spark).collect()]
        return out

    def clear(self) -> None:
        """Drops what the driver's accumulator holds (PySpark keeps every accumulator for the
        session: a bench of many runs clears it after each)."""
        self._messages.value = []


class _MemorySender:
    def __init__(self, messages: Any, key: bytes) -> None:
        self._messages = messages
        self._key = key
        self._sent: list[tuple[bytes, bytes]] = []

    def send(self, value: bytes) -> None:
        self._sent.append((self._key, value))

    def close(self) -> None:
        self._messages.add(self._sent)
        self._sent = []
