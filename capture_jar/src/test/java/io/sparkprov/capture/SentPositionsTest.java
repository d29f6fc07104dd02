package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.junit.jupiter.api.Test;
import org.roaringbitmap.longlong.Roaring64NavigableMap;

/** Rows sent before, looked up row by row as the 64-bit map says; positions added by runs. */
class SentPositionsTest {
  private static long position(int file, long row) {
    return ((long) file << FileOrdinals.ROW_BITS) | row;
  }

  @Test
  void everyPositionIsSentOrNotAsTheMapSaysOverFilesAndTheRowIndexsUpperBit() {
    Random random = new Random(28);
    Roaring64NavigableMap rows = new Roaring64NavigableMap();
    for (int i = 0; i < 50_000; i++) {
      rows.addLong(position(random.nextInt(12), random.nextInt(3_000_000)));
    }
    rows.addRange(position(3, (1L << 32) - 5), position(3, (1L << 32) + 5)); // over the halves
    rows.addLong(position(2_000_000, 9)); // a high half past the signed ints' range
    rows.runOptimize();
    SentPositions sent = SentPositions.of(rows);
    SentPositions.Reader reader = sent.reader();
    assertFalse(sent.isEmpty());
    for (int i = 0; i < 300_000; i++) {
      // mostly in file order, as a task reads, with jumps back and forth
      long p = i % 1_000 == 0
          ? position(random.nextInt(14), random.nextInt(3_000_000))
          : position(i / 25_000, random.nextInt(3_000_000));
      assertEquals(rows.contains(p), reader.contains(p), "position " + p);
    }
    for (long p = position(3, (1L << 32) - 8); p < position(3, (1L << 32) + 8); p++) {
      assertEquals(rows.contains(p), reader.contains(p), "position " + p);
    }
    assertTrue(reader.contains(position(2_000_000, 9)));
    assertFalse(reader.contains(position(2_000_000, 10)));
  }

  @Test
  void noRowsSentBeforeIsEmptyAndHoldsNothing() {
    SentPositions none = SentPositions.of(new Roaring64NavigableMap());
    assertTrue(none.isEmpty());
    assertFalse(none.reader().contains(0));
  }

  @Test
  void aChunksPositionsAddedByRunsAreTheRowsAddedOneByOne() {
    TapPlan source = new TapPlan("source", "k#1", "run", "wf", "R", List.of(),
        List.of("id", "rowno"), List.of("id", "id"), List.of("main"), "", 0, List.of(), "",
        false, 0, List.of(), List.of(), "", 4, 16, false);
    Random random = new Random(26);
    for (int round = 0; round < 20; round++) {
      Chunk chunk = new Chunk(source);
      Roaring64NavigableMap oneByOne = new Roaring64NavigableMap();
      long p = position(random.nextInt(4), (1L << 32) - random.nextInt(3_000));
      int rows = 1 + random.nextInt(2_000);
      for (int r = 0; r < rows && !chunk.full(); r++) {
        // runs of consecutive rows, gaps, a row twice, a jump back
        int step = random.nextInt(10);
        p += step < 6 ? 1 : step < 8 ? 2 + random.nextInt(50) : step < 9 ? 0 : -random.nextInt(30);
        chunk.add(new GenericInternalRow(new Object[] {p, p}));
        oneByOne.addLong(p);
      }
      Roaring64NavigableMap byRuns = new Roaring64NavigableMap();
      chunk.addPositionsTo(byRuns);
      assertEquals(oneByOne, byRuns, "round " + round);
    }
  }
}
