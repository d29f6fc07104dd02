package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A task's positions taken above a join: each row once, in any order, over several files. */
class MetPositionsTest {
  @Test
  void aRowAgainRightAfterItselfOrLaterIsNotTakenTwice() {
    MetPositions met = new MetPositions();
    long row = (3L << 33) | 17;
    assertTrue(met.firstTime(row));
    assertFalse(met.firstTime(row)); // its next partner
    assertTrue(met.firstTime(row + 1));
    assertFalse(met.firstTime(row)); // a partner further on
    assertTrue(met.firstTime(17)); // the same row index of another file
    assertTrue(met.firstTime((3L << 33) | (1L << 31) | 17)); // past the lower 31 bits
    assertFalse(met.firstTime(row + 1));
  }

  @Test
  void scatteredRowsOfManyFilesAreEachTakenOnceAsAHashSetSays() {
    MetPositions met = new MetPositions();
    Set<Long> seen = new HashSet<>();
    Random random = new Random(26);
    for (int i = 0; i < 200_000; i++) {
      long position = ((long) random.nextInt(40) << 33) | random.nextInt(5_000_000);
      assertEquals(seen.add(position), met.firstTime(position), "position " + position);
    }
  }
  @Test
  void rowsMostlyInOrderWithStepsBackAndOtherFilesAreEachTakenOnceAsAHashSetSays() {
    // A scan's rows in order (taken past the ceiling, a run at a time), partners met again
    // further on, gaps, other files between: the runs and the bitmap answer together.
    MetPositions met = new MetPositions();
    Set<Long> seen = new HashSet<>();
    Random random = new Random(27);
    long[] next = new long[3];
    for (int i = 0; i < 300_000; i++) {
      int file = random.nextInt(10) == 0 ? random.nextInt(3) : i / 100_000;
      long low;
      int step = random.nextInt(100);
      if (step < 80) {
        low = next[file]++;
      } else if (step < 90) {
        low = next[file] += 1 + random.nextInt(50); // a gap
      } else {
        low = Math.max(0, next[file] - 1 - random.nextInt(200)); // back to a row met before
      }
      long position = ((long) file << 33) | low;
      assertEquals(seen.add(position), met.firstTime(position), "step " + i);
    }
  }
}
