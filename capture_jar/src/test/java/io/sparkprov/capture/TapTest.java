package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.junit.jupiter.api.Test;

class TapTest {
  /** Spark ships the tap inside the task: a tap that does not serialize fails every job. */
  @Test
  void aTapTravelsWithItsTask() throws Exception {
    TapPlan plan = new TapPlan("source", "k#1", "run", "wf", "R", List.of(), List.of("id"),
        List.of("id"), List.of("main"), "", 0, List.of(), "", false, 0, List.of(), List.of(), "", 4, 16, false);
    Tap tap = new Tap(plan, new DiscardSink("ENCODE"), null);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(tap);
    }
    try (ObjectInputStream in =
        new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      assertEquals(plan, ((Tap) in.readObject()).plan());
    }
  }

  /** A producer that lingers: a message is acknowledged only once the sink is flushed (as
   * Kafka's with a linger longer than the wait), so a wait that does not flush first times out. */
  private static final class LingeringSink implements Sink {
    private final transient List<CompletableFuture<Object>> buffered = new ArrayList<>();
    int flushes;

    @Override
    public Future<?> send(byte[] key, byte[] value) {
      CompletableFuture<Object> future = new CompletableFuture<>();
      buffered.add(future);
      return future;
    }

    @Override
    public void flush() {
      flushes++;
      buffered.forEach(f -> f.complete(null));
      buffered.clear();
    }

    @Override
    public long timeoutMs() {
      return 60_000;
    }

    @Override
    public String describe() {
      return "lingering";
    }
  }

  /** A task with more messages in flight than the tap lets wait flushes before it waits, so it
   * never waits out the producer's linger (CaptureRun.LINGER_MS). */
  @Test
  void aTaskThatMustWaitForAcknowledgementsFlushesFirst() {
    TapPlan plan = new TapPlan("source", "k#1", "run", "wf", "R", List.of(),
        List.of("id", "rowno"), List.of("id", "id"), List.of("main"), "", 0, List.of(), "",
        false, 0, List.of(), List.of(), "", 1, 16, false);
    LingeringSink sink = new LingeringSink();
    Tap tap = new Tap(plan, sink, null);
    assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
      for (long r = 0; r < 100; r++) {
        tap.accept(new GenericInternalRow(new Object[] {r, r}));
      }
    });
    // One message per row; 32 may wait unacknowledged, so the 33rd and every 32nd after flush.
    assertEquals(3, sink.flushes);
  }
}
