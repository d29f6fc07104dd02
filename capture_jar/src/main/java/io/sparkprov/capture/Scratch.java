package io.sparkprov.capture;

import java.util.Arrays;

/**
 * The arrays one chunk's {@link Emission} is built from, kept for the next chunk of the same
 * tap in the same task: a full chunk's columns (ids, values, null flags, positions) take an array
 * of the chunk's capacity each, about twenty per chunk, and allocating them afresh made the JVM's
 * collector the third largest cost capture added to a job (bench/README.md, "Arrays kept from
 * chunk to chunk").
 *
 * <p>The contract: an array handed out stays the caller's until {@link #reset}, which the chunk
 * calls when it is cleared, after its emission was encoded; until then no array is handed out
 * twice. An array is not zeroed: the caller writes every element. A length other than the
 * capacity (a task's last, partial chunk) gets a fresh array.
 */
final class Scratch {
  private final int capacity;
  private long[][] longs = new long[8][];
  private boolean[][] flags = new boolean[8][];
  private double[][] doubles = new double[2][];
  private int nextLongs;
  private int nextFlags;
  private int nextDoubles;

  Scratch(int capacity) {
    this.capacity = capacity;
  }

  long[] longs(int length) {
    if (length != capacity) {
      return new long[length];
    }
    if (nextLongs == longs.length) {
      longs = Arrays.copyOf(longs, longs.length * 2);
    }
    long[] out = longs[nextLongs];
    if (out == null) {
      out = longs[nextLongs] = new long[capacity];
    }
    nextLongs++;
    return out;
  }

  boolean[] flags(int length) {
    if (length != capacity) {
      return new boolean[length];
    }
    if (nextFlags == flags.length) {
      flags = Arrays.copyOf(flags, flags.length * 2);
    }
    boolean[] out = flags[nextFlags];
    if (out == null) {
      out = flags[nextFlags] = new boolean[capacity];
    }
    nextFlags++;
    return out;
  }

  double[] doubles(int length) {
    if (length != capacity) {
      return new double[length];
    }
    if (nextDoubles == doubles.length) {
      doubles = Arrays.copyOf(doubles, doubles.length * 2);
    }
    double[] out = doubles[nextDoubles];
    if (out == null) {
      out = doubles[nextDoubles] = new double[capacity];
    }
    nextDoubles++;
    return out;
  }

  /** Every array handed out is free again: the emission that held them was encoded. */
  void reset() {
    nextLongs = 0;
    nextFlags = 0;
    nextDoubles = 0;
  }
}
