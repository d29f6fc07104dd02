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

  /** Whether {@code position} is taken for the first time (and now marked as taken). */
  boolean firstTime(long position) {
    if (position == lastPosition) {
      return false; // the same row again, for its next partner
    }
    lastPosition = position;
    long high = position >>> LOW_BITS;
    if (high != lastHigh) {
      last = byHigh.computeIfAbsent(high, h -> new RoaringBitmap());
      lastHigh = high;
    }
    return last.checkedAdd((int) (position & LOW_MASK));
  }
}
