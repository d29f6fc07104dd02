package io.sparkprov.capture;

import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;

/**
 * Up to {@code capacity} rows of one tap's input struct, column by column, in primitive arrays:
 * ids as longs with a null mask, texts as strings, flags as booleans, id arrays as long[].
 */
final class Chunk {
  private final TapPlan plan;
  private final long[][] ids;
  private final boolean[][] nulls;
  private final byte[][][] texts; // UTF-8, as Spark holds them
  private final boolean[][] flags;
  private final long[][][] arrays;
  private int size;

  Chunk(TapPlan plan) {
    this.plan = plan;
    int width = plan.width();
    int capacity = plan.rowsPerMessage();
    ids = new long[width][];
    nulls = new boolean[width][];
    texts = new byte[width][][];
    flags = new boolean[width][];
    arrays = new long[width][][];
    for (int i = 0; i < width; i++) {
      switch (typeOf(i)) {
        case "id" -> {
          ids[i] = new long[capacity];
          nulls[i] = new boolean[capacity];
        }
        case "text" -> texts[i] = new byte[capacity][];
        case "flag" -> flags[i] = new boolean[capacity];
        case "ids" -> arrays[i] = new long[capacity][];
        default -> throw new IllegalArgumentException(
            "tap " + plan.key() + ": unknown input type " + typeOf(i));
      }
    }
  }

  private String typeOf(int i) {
    return i < plan.inputs().size() ? plan.inputTypes().get(i) : "text";
  }

  int size() {
    return size;
  }

  boolean full() {
    return size == plan.rowsPerMessage();
  }

  void clear() {
    size = 0;
  }

  /** Copies one row of the tap's struct, in Spark's internal types, into the columns. */
  void add(InternalRow row) {
    int r = size;
    for (int i = 0; i < ids.length; i++) {
      if (ids[i] != null) {
        boolean isNull = row.isNullAt(i);
        nulls[i][r] = isNull;
        ids[i][r] = isNull ? 0L : row.getLong(i);
      } else if (texts[i] != null) {
        texts[i][r] = row.isNullAt(i) ? null : row.getUTF8String(i).getBytes();
      } else if (flags[i] != null) {
        flags[i][r] = !row.isNullAt(i) && row.getBoolean(i);
      } else {
        arrays[i][r] = row.isNullAt(i) ? null : longs(row.getArray(i));
      }
    }
    size = r + 1;
  }

  private static long[] longs(ArrayData values) {
    int n = values.numElements();
    long[] out = new long[n];
    for (int k = 0; k < n; k++) {
      if (values.isNullAt(k)) {
        throw new IllegalStateException("an id array holds a null id");
      }
      out[k] = values.getLong(k);
    }
    return out;
  }


  /** The id column {@code name}; a null where the caller needs an id is refused. */
  long[] ids(String name) {
    int i = plan.input(name);
    for (int r = 0; r < size; r++) {
      if (nulls[i][r]) {
        throw new IllegalStateException(
            "id column " + name + " of tap " + plan.key() + " holds nulls where every row needs an id");
      }
    }
    return java.util.Arrays.copyOf(ids[i], size);
  }

  /** The id column {@code name} as it is, and where it holds no id. */
  long[] rawIds(String name) {
    return ids[plan.input(name)];
  }

  boolean[] nullMask(String name) {
    return nulls[plan.input(name)];
  }

  /** The text column {@code name}, decoded (for the few texts that become labels). */
  String[] texts(String name) {
    byte[][] column = texts[plan.input(name)];
    String[] out = new String[size];
    for (int r = 0; r < size; r++) {
      out[r] = column[r] == null ? null : new String(column[r], StandardCharsets.UTF_8);
    }
    return out;
  }

  /** The text column {@code name} as UTF-8 bytes (written as they are). */
  byte[][] textBytes(String name) {
    return java.util.Arrays.copyOf(texts[plan.input(name)], size);
  }

  byte[][] attribute(int i) {
    return java.util.Arrays.copyOf(texts[plan.attribute(i)], size);
  }

  boolean[] flags(String name) {
    return flags[plan.input(name)];
  }

  long[][] arrays(String name) {
    long[][] column = arrays[plan.input(name)];
    for (int r = 0; r < size; r++) {
      if (column[r] == null) {
        throw new IllegalStateException("id array column " + name + " holds a null array");
      }
    }
    return column;
  }

  /** The smallest value of the "id" input over the chunk (it names the partition's rows). */
  long minId() {
    long[] column = ids[plan.input("id")];
    long low = Long.MAX_VALUE;
    for (int r = 0; r < size; r++) {
      low = Math.min(low, column[r]);
    }
    return low;
  }
}
