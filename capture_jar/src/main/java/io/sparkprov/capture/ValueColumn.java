package io.sparkprov.capture;

import java.nio.charset.StandardCharsets;

/**
 * One column of kept values (a relation's attribute, a member's aggregated value), as it
 * travels (lineage.proto's StringColumn): UTF-8 texts, or the numbers Spark holds (integral
 * types as longs, doubles as doubles), which the reader writes as text (sparkprov/values.py). A
 * number column is never cast to text inside the job: that cast was a third of capture's cost.
 * Exactly one of {@code texts}, {@code longs} and {@code doubles} is set; {@code nulls} marks
 * the null rows of a number column (a text column holds null entries instead).
 */
record ValueColumn(byte[][] texts, long[] longs, double[] doubles, boolean[] nulls) {

  static ValueColumn ofTexts(byte[][] texts) {
    return new ValueColumn(texts, null, null, null);
  }

  static ValueColumn ofLongs(long[] longs, boolean[] nulls) {
    return new ValueColumn(null, longs, null, nulls);
  }

  static ValueColumn ofDoubles(double[] doubles, boolean[] nulls) {
    return new ValueColumn(null, null, doubles, nulls);
  }

  int size() {
    return texts != null ? texts.length : longs != null ? longs.length : doubles.length;
  }

  boolean isNull(int r) {
    return texts != null ? texts[r] == null : nulls[r];
  }

  /** Rows that hold a value. */
  long present() {
    long count = 0;
    for (int r = 0; r < size(); r++) {
      count += isNull(r) ? 0 : 1;
    }
    return count;
  }

  /** Texts over {@code limit} bytes truncated in place ({@link Texts}); numbers always fit. */
  ValueColumn truncated(int limit) {
    if (texts != null) {
      Texts.truncateAll(texts, limit);
    }
    return this;
  }

  /** Each value as the text Spark's cast to string gives on this JVM (null stays null). */
  String[] strings() {
    String[] out = new String[size()];
    for (int r = 0; r < out.length; r++) {
      if (isNull(r)) {
        continue;
      }
      if (texts != null) {
        out[r] = new String(texts[r], StandardCharsets.UTF_8);
      } else if (longs != null) {
        out[r] = Long.toString(longs[r]);
      } else {
        out[r] = Double.toString(doubles[r]);
      }
    }
    return out;
  }
}
