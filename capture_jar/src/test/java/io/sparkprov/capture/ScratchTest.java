package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.IdentityHashMap;
import java.util.List;
import org.junit.jupiter.api.Test;

class ScratchTest {
  @Test
  void noArrayIsHandedOutTwiceBeforeAReset() {
    Scratch scratch = new Scratch(16);
    IdentityHashMap<Object, Boolean> seen = new IdentityHashMap<>();
    for (int i = 0; i < 40; i++) {
      assertEquals(null, seen.put(scratch.longs(16), true));
      assertEquals(null, seen.put(scratch.flags(16), true));
      assertEquals(null, seen.put(scratch.doubles(16), true));
    }
  }

  @Test
  void afterAResetTheSameArraysServeAgainInTheSameOrder() {
    Scratch scratch = new Scratch(16);
    long[] first = scratch.longs(16);
    long[] second = scratch.longs(16);
    boolean[] flags = scratch.flags(16);
    scratch.reset();
    assertSame(first, scratch.longs(16));
    assertSame(second, scratch.longs(16));
    assertSame(flags, scratch.flags(16));
  }

  @Test
  void aLengthOtherThanTheCapacityGetsAFreshArrayOfThatLength() {
    Scratch scratch = new Scratch(16);
    long[] partial = scratch.longs(5);
    assertEquals(5, partial.length);
    scratch.reset();
    assertNotSame(partial, scratch.longs(5));
  }

  /** A chunk's columns are the reader's until the chunk is cleared; then they serve its next
   * rows, and a column read again holds those rows, not the old ones. */
  @Test
  void aChunksColumnsServeItsNextRowsOnceCleared() {
    TapPlan plan = new TapPlan("source", "k#1", "run", "wf", "R", List.of(),
        List.of("id", "rowno"), List.of("id", "id"), List.of("main"), "", 0, List.of(), "",
        false, 0, List.of(), List.of(), "", 2, 16, false);
    Chunk chunk = new Chunk(plan);
    chunk.add(new long[] {1, 10}, new boolean[2], new Object[2]);
    chunk.add(new long[] {2, 20}, new boolean[2], new Object[2]);
    long[] ids = chunk.ids("id");
    long[] rows = chunk.ids("rowno");
    assertNotSame(ids, rows);
    assertEquals(List.of(1L, 2L), List.of(ids[0], ids[1]));
    chunk.clear();
    chunk.add(new long[] {3, 30}, new boolean[2], new Object[2]);
    chunk.add(new long[] {4, 40}, new boolean[2], new Object[2]);
    long[] again = chunk.ids("id");
    assertSame(ids, again);
    assertEquals(List.of(3L, 4L), List.of(again[0], again[1]));
  }
}
