package io.sparkprov.capture;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;

/**
 * One column of kept values (a relation's attribute, a member's aggregated value), as it
 * travels (lineage.proto's StringColumn): UTF-8 texts, or the numbers Spark holds (integral
 * types as longs, doubles as doubles or as decimal integers, dates as their days since
 * 1970-01-01, decimals of up to 18 digits as their unscaled longs), which the reader writes as
 * text (sparkprov/values.py). A number or date column is never cast to text inside the job:
 * those casts were a third of capture's cost. Exactly one of {@code texts}, {@code longs} and
 * {@code doubles} is set; {@code longs} hold what {@code kind} says; {@code scale} is the
 * decimal digits of a DECIMAL column or of a double column's {@code decimals}; {@code nulls}
 * marks the null rows of a number column (a text column holds null entries instead).
 */
record ValueColumn(
    byte[][] texts, long[] longs, double[] doubles, long[] decimals, int scale,
    boolean[] nulls, Kind kind) {

  /** What a column's longs hold. */
  enum Kind {
    INTEGER, DATE, DECIMAL
  }

  /** The largest decimal scale tried: 10^9, an exact double like every power up to 10^22. */
  static final int MAX_DECIMAL_SCALE = 9;
  private static final double[] POWERS = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  private static final double MAX_EXACT = 0x1p53; // integers up to here are exact doubles
  private static final long NONE = Long.MIN_VALUE;

  static ValueColumn ofTexts(byte[][] texts) {
    return new ValueColumn(texts, null, null, null, 0, null, Kind.INTEGER);
  }

  static ValueColumn ofLongs(long[] longs, boolean[] nulls) {
    return new ValueColumn(null, longs, null, null, 0, nulls, Kind.INTEGER);
  }

  /** A date column: each value's days since 1970-01-01. */
  static ValueColumn ofDates(long[] days, boolean[] nulls) {
    return new ValueColumn(null, days, null, null, 0, nulls, Kind.DATE);
  }

  /** A decimal column of up to 18 digits: each value's unscaled long, at {@code scale}. */
  static ValueColumn ofUnscaled(long[] unscaled, int scale, boolean[] nulls) {
    return new ValueColumn(null, unscaled, null, null, scale, nulls, Kind.DECIMAL);
  }

  /**
   * A double column; where every value is an integer times 10^-k for some k up to {@link
   * #MAX_DECIMAL_SCALE} (the smallest such k), bit for bit, it also holds those integers
   * ({@code decimals}, 0 where null), which travel instead of the doubles: 52.3 as 523.
   */
  static ValueColumn ofDoubles(double[] doubles, boolean[] nulls) {
    return ofDoubles(doubles, nulls, new long[doubles.length]);
  }

  /** {@link #ofDoubles(double[], boolean[])}, its decimals (if any) written into {@code into},
   * an array as long as {@code doubles} that the column then holds. */
  static ValueColumn ofDoubles(double[] doubles, boolean[] nulls, long[] into) {
    for (int k = 0; k <= MAX_DECIMAL_SCALE; k++) {
      if (decimals(doubles, nulls, k, into)) {
        return new ValueColumn(null, null, doubles, into, k, nulls, Kind.INTEGER);
      }
    }
    return new ValueColumn(null, null, doubles, null, 0, nulls, Kind.INTEGER);
  }

  /** Writes each value as n with (double) n / 10^k == the value, bit for bit, into {@code out}
   * (0 where null); false, with {@code out} partly written, if one has none. */
  private static boolean decimals(double[] doubles, boolean[] nulls, int k, long[] out) {
    for (int r = 0; r < doubles.length; r++) {
      if (nulls[r]) {
        out[r] = 0;
        continue;
      }
      long n = decimal(doubles[r], k);
      if (n == NONE) {
        return false;
      }
      out[r] = n;
    }
    return true;
  }

  /**
   * n such that {@code (double) n / 10^k} is {@code v} bit for bit, |n| <= 2^53, else NONE. The
   * division is IEEE's, correctly rounded, as Python's int division the reader does: the same
   * double. NaN, infinities and -0.0 have none.
   */
  static long decimal(double v, int k) {
    double scaled = v * POWERS[k];
    if (!(Math.abs(scaled) <= MAX_EXACT)) {
      return NONE;
    }
    long n = Math.round(scaled);
    boolean exact = Double.doubleToRawLongBits(n / POWERS[k]) == Double.doubleToRawLongBits(v);
    return exact ? n : NONE;
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

  /**
   * Each value as the text Spark's cast to string gives on this JVM (null stays null): a date
   * proleptic Gregorian, {@code yyyy-MM-dd} (a year past 9999 with a sign), a decimal plainly
   * with all its scale's digits (ANSI's cast; the taps cast decimals to text themselves
   * otherwise).
   */
  String[] strings() {
    String[] out = new String[size()];
    for (int r = 0; r < out.length; r++) {
      if (isNull(r)) {
        continue;
      }
      if (texts != null) {
        out[r] = new String(texts[r], StandardCharsets.UTF_8);
      } else if (longs != null) {
        out[r] = switch (kind) {
          case INTEGER -> Long.toString(longs[r]);
          case DATE -> LocalDate.ofEpochDay(longs[r]).toString();
          case DECIMAL -> BigDecimal.valueOf(longs[r], scale).toPlainString();
        };
      } else {
        out[r] = Double.toString(doubles[r]);
      }
    }
    return out;
  }
}
