package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.List;
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
}
