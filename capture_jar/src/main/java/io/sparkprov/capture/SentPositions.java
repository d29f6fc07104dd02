package io.sparkprov.capture;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.roaringbitmap.RoaringBitmap;
import org.roaringbitmap.longlong.Roaring64NavigableMap;

/**
 * Source positions a run sent before ({@link SourceRowsOnce}), made for a task's lookups row by
 * row: each high half of a position (a file's ordinal and the row index's upper bit) with the
 * RoaringBitmap of its low halves. A task reads its rows file by file, so {@link Reader} keeps
 * the last half's bitmap at hand and looks a row up in it alone; asking the 64-bit map itself
 * searched its tree of halves for every row (4% of TPC-H's captured task time, bench/README.md).
 * Made once on the driver, then only read.
 */
final class SentPositions implements Serializable {
  private static final long serialVersionUID = 1L;

  private final int[] highs; // ascending
  private final RoaringBitmap[] lows;

  private SentPositions(int[] highs, RoaringBitmap[] lows) {
    this.highs = highs;
    this.lows = lows;
  }

  /**
   * The positions of {@code rows}, split by the portable 64-bit format of RoaringFormatSpec (a
   * little-endian count of halves, then each half's upper 32 bits and its 32-bit bitmap), which
   * {@link Roaring64NavigableMap#serializePortable} writes.
   */
  static SentPositions of(Roaring64NavigableMap rows) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      rows.serializePortable(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    ByteBuffer in = ByteBuffer.wrap(bytes.toByteArray()).order(ByteOrder.LITTLE_ENDIAN);
    long count = in.getLong();
    if (count < 0 || count > Integer.MAX_VALUE) {
      throw new IllegalStateException("positions in " + count + " halves");
    }
    int[] highs = new int[(int) count];
    RoaringBitmap[] lows = new RoaringBitmap[(int) count];
    for (int i = 0; i < count; i++) {
      highs[i] = in.getInt();
      RoaringBitmap low = new RoaringBitmap();
      try {
        low.deserialize(in.slice().order(ByteOrder.LITTLE_ENDIAN));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      in.position(in.position() + low.serializedSizeInBytes());
      if (i > 0 && Integer.compareUnsigned(highs[i - 1], highs[i]) >= 0) {
        throw new IllegalStateException("positions' halves out of order at " + highs[i]);
      }
      lows[i] = low;
    }
    return new SentPositions(highs, lows);
  }

  boolean isEmpty() {
    return highs.length == 0;
  }

  /** Lookups for one task (not thread-safe). */
  Reader reader() {
    return new Reader();
  }

  /** One task's lookups: the last half's bitmap kept at hand. */
  final class Reader {
    private int lastHigh;
    private RoaringBitmap last;
    private boolean primed;

    boolean contains(long position) {
      int high = (int) (position >>> 32);
      if (!primed || high != lastHigh) {
        last = find(high);
        lastHigh = high;
        primed = true;
      }
      return last != null && last.contains((int) position);
    }
  }

  private RoaringBitmap find(int high) {
    int lo = 0;
    int hi = highs.length - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      int c = Integer.compareUnsigned(highs[mid], high);
      if (c == 0) {
        return lows[mid];
      }
      if (c < 0) {
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return null;
  }
}
