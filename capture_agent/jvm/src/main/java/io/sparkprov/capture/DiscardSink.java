package io.sparkprov.capture;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

/**
 * Encodes everything and sends nothing: for profiles that separate the taps' own cost from
 * Kafka's (bench/capture_profile_jvm.py). Never a session's sink.
 */
public final class DiscardSink implements Sink {
  @Override
  public Future<?> send(byte[] key, byte[] value) {
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
    return "nowhere (discarded)";
  }
}
