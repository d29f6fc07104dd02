package io.sparkprov.capture;

import java.io.Serializable;
import java.util.concurrent.Future;

/**
 * Where a tap's messages go: Kafka ({@link KafkaSink}) or, in tests, a Spark accumulator
 * ({@link MemorySink}). Built on the driver and serialized into every tap.
 */
public interface Sink extends Serializable {
  /** Hands one message over; the future completes once it is acknowledged. */
  Future<?> send(byte[] key, byte[] value);

  /** Sends whatever is buffered now (a task's last messages should not wait for a linger). */
  void flush();

  /** How long a message may wait for its acknowledgement. */
  long timeoutMs();

  /** Where the messages go, for error messages. */
  String describe();
}
