package io.sparkprov.capture;

import java.util.HashMap;
import java.util.Map;
import org.roaringbitmap.RoaringBitmap;

/**
 * The source positions one task's capture point has taken, for a capture point above a join
 * ({@link SourceJoinsFirst}), where a row comes once per partner: a dimension's row, matched
 * by many facts, again and again, in no order. A position ({@link SourcePosition}: the file's
 * ordinal above the row's index, never negative) is kept as its upper bits, each with a
 * RoaringBitmap of its lower 31 bits; a task reads a few files, so the upper bits change
 * seldom and the bitmap of the last ones is at hand. Not thread-safe: one per task.
 */
final class MetPositions {
  private static final int LOW_BITS = 31;
  private static final long LOW_MASK = (1L << LOW_BITS) - 1;

  private final Map<Long, RoaringBitmap> byHigh = new HashMap<>();
  private long lastHigh = -1;
  private RoaringBitmap last;
  private long lastPosition = -1;
  // Of the last upper bits: every lower bits below `ceiling` may be taken, none at or above it
  // is; the run [runStart, ceiling) is taken but not yet in the bitmap (runStart == ceiling:
  // none). A scan meets its rows in order, so most rows are past the ceiling: taken with no
  // lookup, and added to the bitmap a run at a time.
  private long ceiling;
  private long runStart;

  /** Whether {@code position} is taken for the first time (and now marked as taken). */
  boolean firstTime(long position) {
    if (position == lastPosition) {
      return false; // the same row again, for its next partner
    }
    lastPosition = position;
    long high = position >>> LOW_BITS;
    if (high != lastHigh) {
      addRun();
      last = byHigh.computeIfAbsent(high, h -> new RoaringBitmap());
      lastHigh = high;
      ceiling = last.isEmpty() ? 0 : Integer.toUnsignedLong(last.last()) + 1;
      runStart = ceiling;
    }
    long low = position & LOW_MASK;
    if (low >= ceiling) {
      if (low > ceiling) {
        addRun();
        runStart = low;
      }
      ceiling = low + 1;
      return true;
    }
    addRun();
    return last.checkedAdd((int) low);
  }

  /** The run taken past the bitmap's last position, added to it. */
  private void addRun() {
    if (last != null && runStart < ceiling) {
      last.add(runStart, ceiling);
    }
    runStart = ceiling;
  }
}
