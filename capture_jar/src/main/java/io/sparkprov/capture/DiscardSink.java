package io.sparkprov.capture;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

/**
 * Sends nothing: for profiles that separate the taps' own cost from Kafka's
 * (bench/capture_profile_jvm.py). Never a session's sink. {@link #stopAfter} says how far a tap
 * goes with each row before it drops it, to split the taps' cost into its steps.
 */
public final class DiscardSink implements Sink {
  /** The last step a tap takes with its rows. */
  public enum Step {
    /** Spark computes the tap's input struct and calls the tap, which returns at once. */
    CALL,
    /** The tap copies each row into its chunk. */
    COPY,
    /** Each full chunk becomes its nodes, edges and members ({@link Emission}). */
    EMIT,
    /** ... and is encoded as a message ({@link Wire}), which is dropped. */
    ENCODE
  }

  private final Step stopAfter;

  public DiscardSink(String stopAfter) {
    this.stopAfter = Step.valueOf(stopAfter);
  }

  public Step stopAfter() {
    return stopAfter;
  }

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
