package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * The arrays one chunk's {@link Emission} is built from, kept for the next chunk of the same
 * tap in the same task: a full chunk's columns (ids, values, null flags, positions) take an array
 * of the chunk's capacity each, about twenty per chunk. Allocated afresh, they were 178 MB of the
 * 290 MB a 1M-row pipeline run's emission allocated beyond plain (bench/README.md, "A longer
 * linger, arrays kept from chunk to chunk, ...").
 *
 * <p>The contract: an array handed out stays the caller's until {@link #reset}, which the chunk
 * calls when it is cleared, after its emission was encoded; until then no array is handed out
 * twice. An array is not zeroed: the caller writes every element. A length other than the
 * capacity (a task's last, partial chunk) gets a fresh array.
 */
final class Scratch {
  private final Pool<long[]> longs;
  private final Pool<boolean[]> flags;
  private final Pool<double[]> doubles;

  Scratch(int capacity) {
    longs = new Pool<>(capacity, long[]::new);
    flags = new Pool<>(capacity, boolean[]::new);
    doubles = new Pool<>(capacity, double[]::new);
  }

  long[] longs(int length) {
    return longs.take(length);
  }

  boolean[] flags(int length) {
    return flags.take(length);
  }

  double[] doubles(int length) {
    return doubles.take(length);
  }

  /** Every array handed out is free again: the emission that held them was encoded. */
  void reset() {
    longs.reset();
    flags.reset();
    doubles.reset();
  }

  /** Arrays of one type and the capacity's length, handed out in order, again after a reset. */
  private static final class Pool<T> {
    private final int capacity;
    private final IntFunction<T> allocate;
    private final List<T> arrays = new ArrayList<>();
    private int next;

    Pool(int capacity, IntFunction<T> allocate) {
      this.capacity = capacity;
      this.allocate = allocate;
    }

    T take(int length) {
      if (length != capacity) {
        return allocate.apply(length);
      }
      if (next == arrays.size()) {
        arrays.add(allocate.apply(capacity));
      }
      return arrays.get(next++);
    }

    void reset() {
      next = 0;
    }
  }
}
