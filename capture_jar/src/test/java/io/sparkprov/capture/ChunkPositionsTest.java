package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Random;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.junit.jupiter.api.Test;
import org.roaringbitmap.longlong.Roaring64NavigableMap;

/** A chunk's source positions added to the task's set by runs of consecutive rows. */
class ChunkPositionsTest {
  private static long position(int file, long row) {
    return ((long) file << FileOrdinals.ROW_BITS) | row;
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
