package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** A chunk of large texts is full before its rows are: no message the broker refuses. */
class ChunkBytesTest {
  private static final int KEPT = 65_536;

  private static TapPlan source(int rowsPerMessage) {
    return new TapPlan("source", "k#1", "run", "wf", "R", List.of("text"), List.of("id"),
        List.of("id"), List.of("main"), "", 0, List.of(), "", false, 0, List.of(), List.of(), "",
        rowsPerMessage, KEPT, false);
  }

  private static int rowsUntilFull(Chunk chunk, int textBytes, int limit) {
    UTF8String text = UTF8String.fromString("x".repeat(textBytes));
    int rows = 0;
    while (!chunk.full() && rows < limit) {
      chunk.add(new GenericInternalRow(new Object[] {(long) rows, text}));
      rows++;
    }
    return rows;
  }

  @Test
  void textsOverTheBoundEndTheChunkEachCountedUpToTheLongestKept() {
    Chunk chunk = new Chunk(source(8192));
    // 100 KB values count as the 64 KB kept: 32 of them reach 2 MB.
    assertEquals(Chunk.MAX_OBJECT_BYTES / KEPT, rowsUntilFull(chunk, 100_000, 10_000));
    chunk.clear();
    assertFalse(chunk.full());
    assertEquals(8192, rowsUntilFull(chunk, 10, 10_000)); // short texts: the rows' bound
  }

  @Test
  void aChunkGrowsAsItsRowsComeAndItsWritersSeeTheNewArrays() {
    Chunk chunk = new Chunk(source(8192));
    Object[] refs = new Object[2];
    Object[] writer = chunk.writer(refs);
    int rows = 0;
    while (!chunk.full()) { // as the generated code writes: the writer's arrays read per row
      int at = ((int[]) writer[3])[0];
      ((long[]) writer[0])[at] = 7L * rows;
      ((boolean[]) writer[1])[at] = false;
      ((boolean[]) writer[1])[at + 1] = false;
      refs[1] = UTF8String.fromString("t" + rows);
      chunk.commit(refs);
      rows++;
    }
    assertEquals(8192, rows);
    long[] ids = chunk.ids("id");
    for (int r = 0; r < rows; r++) {
      assertEquals(7L * r, ids[r], "row " + r);
    }
    String[] texts = chunk.attribute(0).strings();
    assertEquals("t0", texts[0]);
    assertEquals("t8191", texts[8191]);
  }

  @Test
  void aChunkIsFullAtItsRowsWhateverItsTexts() {
    Chunk chunk = new Chunk(source(4));
    assertEquals(4, rowsUntilFull(chunk, 1, 100));
    assertTrue(chunk.full());
  }
}
