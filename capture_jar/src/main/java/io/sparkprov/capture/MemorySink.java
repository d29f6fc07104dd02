package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import org.apache.spark.SparkContext;
import org.apache.spark.util.CollectionAccumulator;

/**
 * Keeps every message in a Spark accumulator (the unit tests' sink): the driver reads what the
 * successful tasks sent, as capture_agent.emitters.MemoryEmitter does for Python's taps.
 */
public final class MemorySink implements Sink {
  private final CollectionAccumulator<byte[][]> messages;

  public MemorySink(SparkContext sc) {
    messages = sc.collectionAccumulator("sparkprov-memory-sink");
  }

  @Override
  public Future<?> send(byte[] key, byte[] value) {
    messages.add(new byte[][] {key, value});
    return CompletableFuture.completedFuture(null);
  }

  @Override
  public void flush() {}

  @Override
  public long timeoutMs() {
    return 1000;
  }

  @Override
  public String describe() {
    return "memory";
  }

  /** The messages' keys, in the order of {@link #values()}. */
  public List<byte[]> keys() {
    List<byte[]> out = new ArrayList<>();
    for (byte[][] message : messages.value()) {
      out.add(message[0]);
    }
    return out;
  }

  public List<byte[]> values() {
    List<byte[]> out = new ArrayList<>();
    for (byte[][] message : messages.value()) {
      out.add(message[1]);
    }
    return out;
  }
}
