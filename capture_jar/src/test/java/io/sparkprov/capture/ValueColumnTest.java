package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Random;
import org.junit.jupiter.api.Test;

class ValueColumnTest {
  private static ValueColumn doubles(double... values) {
    return ValueColumn.ofDoubles(values, new boolean[values.length]);
  }

  @Test
  void shortDecimalsTravelAsIntegersAtTheSmallestScale() {
    ValueColumn c = doubles(52.3, 0.0, -7.25, 100.0);
    assertEquals(2, c.scale());
    assertArrayEquals(new long[] {5230, 0, -725, 10000}, c.decimals());
    ValueColumn whole = doubles(3.0, -4.0);
    assertEquals(0, whole.scale());
    assertArrayEquals(new long[] {3, -4}, whole.decimals());
  }

  @Test
  void nullRowsAreZeroAndDoNotDecide() {
    ValueColumn c = ValueColumn.ofDoubles(new double[] {Double.NaN, 1.5}, new boolean[] {true, false});
    assertEquals(1, c.scale());
    assertArrayEquals(new long[] {0, 15}, c.decimals());
  }

  /** The decimals go into an array reused from an earlier chunk (Scratch): its old values
   * never show, a null row's included. */
  @Test
  void decimalsWrittenIntoAReusedArrayAreZeroWhereNull() {
    long[] reused = {99, 99, 99};
    ValueColumn c = ValueColumn.ofDoubles(new double[] {2.5, 0.0, 3.0},
        new boolean[] {false, true, false}, reused);
    assertArrayEquals(new long[] {25, 0, 30}, c.decimals());
  }

  @Test
  void valuesWithoutAShortDecimalTravelAsDoubles() {
    for (double v : new double[] {Double.NaN, Double.POSITIVE_INFINITY, -0.0, 0.1 + 0.2, 1e20,
        1e-10, Math.PI}) {
      ValueColumn c = doubles(1.5, v);
      assertNull(c.decimals(), Double.toString(v));
      assertArrayEquals(new double[] {1.5, v}, c.doubles());
    }
  }

  /** Dates and decimals read as the text Spark's (ANSI) cast gives, which the reader writes. */
  @Test
  void datesAndDecimalsReadAsSparksCast() {
    ValueColumn dates = ValueColumn.ofDates(
        new long[] {0, -719_163, -719_529, 2_932_897, 0}, new boolean[] {false, false, false, false, true});
    assertArrayEquals(new String[] {"1970-01-01", "0000-12-31", "-0001-12-31", "+10000-01-01", null},
        dates.strings());
    ValueColumn decimals = ValueColumn.ofUnscaled(new long[] {-150, 0, 5}, 4, new boolean[3]);
    assertArrayEquals(new String[] {"-0.0150", "0.0000", "0.0005"}, decimals.strings());
  }

  /** Whatever the scale, the integer divided by 10^scale is the value, bit for bit. */
  @Test
  void decimalsReadBackBitForBit() {
    Random random = new Random(3);
    for (int i = 0; i < 100_000; i++) {
      int k = random.nextInt(ValueColumn.MAX_DECIMAL_SCALE + 1);
      double v = random.nextBoolean() ? random.nextLong() % 10_000_000_000L / Math.pow(10, k)
          : random.nextGaussian() * Math.pow(10, random.nextInt(12));
      long n = ValueColumn.decimal(v, k);
      if (n != Long.MIN_VALUE) {
        assertEquals(Double.doubleToRawLongBits(v),
            Double.doubleToRawLongBits(n / Math.pow(10, k)), v + " at scale " + k);
      }
    }
  }
}
