package io.sparkprov.capture;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Up to {@code capacity} rows of one tap's inputs, column by column, in primitive arrays: ids,
 * numbers and flags as longs with a null mask, texts as UTF-8 bytes, id arrays as long[]. How a
 * column is held is its {@link Slot}: an input's type says what it means (an id, a text), its
 * slot how Spark holds it (a "text" input of a numeric column arrives as the number).
 */
final class Chunk {
  /** How Spark hands a tap one input: the physical side of a TapPlan input type. */
  enum Slot {
    /** A number held as a long; a date as its days since 1970-01-01 (DATE); a decimal of up to
     * 18 digits as its unscaled long (DECIMAL, its scale kept beside the slots); a decimal type
     * of more digits (scale up to 18) as the unscaled long of a value of up to 18 digits, else as
     * its text (WIDE_DECIMAL: a chunk whose values all have up to 18 digits travels as a DECIMAL
     * column, else as texts). */
    LONG, DOUBLE, BOOL, TEXT, ARRAY, DATE, DECIMAL, WIDE_DECIMAL;

    /** The slot an input of TapPlan type {@code type} takes when Spark holds it as text. */
    static Slot of(String type) {
      return switch (type) {
        case "id" -> LONG;
        case "ids" -> ARRAY;
        case "flag" -> BOOL;
        case "text" -> TEXT;
        default -> throw new IllegalArgumentException("unknown input type " + type);
      };
    }
  }

  // 10^18: an unscaled value under it has at most 18 digits.
  private static final java.math.BigInteger UNSCALED_BOUND =
      java.math.BigInteger.TEN.pow(Decimal.MAX_LONG_DIGITS());

  private final TapPlan plan;
  private final Slot[] slots;
  private final int[] scales; // a DECIMAL column's scale
  private final long[][] longs;
  private final boolean[][] nulls;
  private final byte[][][] texts; // UTF-8, as Spark holds them
  private final long[][][] arrays;
  private int size;

  /** A chunk whose texts arrive as texts (the slots the plan's input types name). */
  Chunk(TapPlan plan) {
    this(plan, defaultSlots(plan));
  }

  Chunk(TapPlan plan, Slot[] slots) {
    this(plan, slots, new int[slots.length]);
  }

  /** A chunk whose inputs Spark holds in {@code slots}, a DECIMAL one at {@code scales[i]}. */
  Chunk(TapPlan plan, Slot[] slots, int[] scales) {
    this.plan = plan;
    this.slots = slots;
    this.scales = scales;
    int width = plan.width();
    if (slots.length != width || scales.length != width) {
      throw new IllegalArgumentException(
          "tap " + plan.key() + " has " + width + " inputs, its rows " + slots.length
              + " slots and " + scales.length + " scales");
    }
    int capacity = plan.rowsPerMessage();
    longs = new long[width][];
    nulls = new boolean[width][];
    texts = new byte[width][][];
    arrays = new long[width][][];
    for (int i = 0; i < width; i++) {
      switch (slots[i]) {
        case LONG, DOUBLE, BOOL, DATE, DECIMAL -> {
          longs[i] = new long[capacity];
          nulls[i] = new boolean[capacity];
        }
        case TEXT -> texts[i] = new byte[capacity][];
        case ARRAY -> arrays[i] = new long[capacity][];
        case WIDE_DECIMAL -> {
          longs[i] = new long[capacity];
          nulls[i] = new boolean[capacity];
          texts[i] = new byte[capacity][];
        }
        default -> throw new IllegalStateException();
      }
    }
  }

  static Slot[] defaultSlots(TapPlan plan) {
    Slot[] slots = new Slot[plan.width()];
    for (int i = 0; i < slots.length; i++) {
      slots[i] = i < plan.inputs().size() ? Slot.of(plan.inputTypes().get(i)) : Slot.TEXT;
    }
    return slots;
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

  /**
   * Copies one row as the codegen tap hands it ({@link TapExpression}): per input, its null
   * flag, its number in {@code values} (a double's bits, a flag as 0 or 1), or its object in
   * {@code refs} (a UTF8String, whose bytes may be reused by Spark after the call, or an
   * ArrayData).
   */
  void add(long[] values, boolean[] isNull, Object[] refs) {
    int r = size;
    for (int i = 0; i < slots.length; i++) {
      switch (slots[i]) {
        case LONG, DOUBLE, BOOL, DATE, DECIMAL -> {
          nulls[i][r] = isNull[i];
          longs[i][r] = isNull[i] ? 0L : values[i];
        }
        case TEXT -> texts[i][r] = isNull[i] ? null : ((UTF8String) refs[i]).getBytes();
        case ARRAY -> arrays[i][r] = isNull[i] ? null : longs((ArrayData) refs[i]);
        case WIDE_DECIMAL -> wide(i, r, isNull[i] ? null : (Decimal) refs[i]);
        default -> throw new IllegalStateException();
      }
    }
    size = r + 1;
  }

  /** Copies one row of Spark's internal types (the interpreted path, tests). */
  void add(InternalRow row) {
    int r = size;
    for (int i = 0; i < slots.length; i++) {
      boolean isNull = row.isNullAt(i);
      switch (slots[i]) {
        case LONG -> put(i, r, isNull, isNull ? 0L : row.getLong(i));
        case DOUBLE -> put(i, r, isNull,
            isNull ? 0L : Double.doubleToRawLongBits(row.getDouble(i)));
        case BOOL -> put(i, r, isNull, !isNull && row.getBoolean(i) ? 1L : 0L);
        case DATE -> put(i, r, isNull, isNull ? 0L : row.getInt(i));
        case DECIMAL -> put(i, r, isNull,
            isNull ? 0L : row.getDecimal(i, Decimal.MAX_LONG_DIGITS(), scales[i]).toUnscaledLong());
        case TEXT -> texts[i][r] = isNull ? null : row.getUTF8String(i).getBytes();
        case ARRAY -> arrays[i][r] = isNull ? null : longs(row.getArray(i));
        case WIDE_DECIMAL ->
            wide(i, r, isNull ? null : row.getDecimal(i, DecimalType.MAX_PRECISION(), scales[i]));
        default -> throw new IllegalStateException();
      }
    }
    size = r + 1;
  }

  /** A wide decimal: its unscaled long at the column's scale where it has at most 18 digits
   * (what StringColumn.unscaled carries), else its text as Spark's cast writes it (plainly, every
   * digit of its scale). */
  private void wide(int i, int r, Decimal value) {
    nulls[i][r] = value == null;
    texts[i][r] = null;
    if (value == null) {
      return;
    }
    BigDecimal d = value.toJavaBigDecimal();
    if (d.scale() == scales[i] && d.unscaledValue().abs().compareTo(UNSCALED_BOUND) < 0) {
      longs[i][r] = d.unscaledValue().longValue();
    } else {
      texts[i][r] = d.toPlainString().getBytes(StandardCharsets.UTF_8);
    }
  }

  private void put(int i, int r, boolean isNull, long value) {
    nulls[i][r] = isNull;
    longs[i][r] = value;
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
    return Arrays.copyOf(longs[i], size);
  }

  /** The id column {@code name} as it is, and where it holds no id. */
  long[] rawIds(String name) {
    return longs[plan.input(name)];
  }

  boolean[] nullMask(String name) {
    return nulls[plan.input(name)];
  }

  /** The text column {@code name}, as text (for the few texts that become labels). */
  String[] texts(String name) {
    return values(plan.input(name)).strings();
  }

  /** The value column {@code name} as it travels. */
  ValueColumn values(String name) {
    return values(plan.input(name));
  }

  ValueColumn attribute(int i) {
    return values(plan.attribute(i));
  }

  private ValueColumn values(int i) {
    return switch (slots[i]) {
      case TEXT -> ValueColumn.ofTexts(Arrays.copyOf(texts[i], size));
      case LONG -> ValueColumn.ofLongs(Arrays.copyOf(longs[i], size), Arrays.copyOf(nulls[i], size));
      case DATE -> ValueColumn.ofDates(Arrays.copyOf(longs[i], size), Arrays.copyOf(nulls[i], size));
      case DECIMAL -> ValueColumn.ofUnscaled(
          Arrays.copyOf(longs[i], size), scales[i], Arrays.copyOf(nulls[i], size));
      case WIDE_DECIMAL -> wideValues(i);
      case DOUBLE -> {
        double[] doubles = new double[size];
        for (int r = 0; r < size; r++) {
          doubles[r] = Double.longBitsToDouble(longs[i][r]);
        }
        yield ValueColumn.ofDoubles(doubles, Arrays.copyOf(nulls[i], size));
      }
      case BOOL -> {
        byte[][] column = new byte[size][];
        for (int r = 0; r < size; r++) {
          column[r] = nulls[i][r] ? null : (longs[i][r] != 0 ? TRUE : FALSE);
        }
        yield ValueColumn.ofTexts(column);
      }
      case ARRAY -> throw new IllegalStateException(
          "input " + i + " of tap " + plan.key() + " is an id array, not a value");
    };
  }

  /** A wide decimal column: unscaled longs if every value of the chunk fits one, else texts. */
  private ValueColumn wideValues(int i) {
    boolean fits = true;
    for (int r = 0; r < size && fits; r++) {
      fits = texts[i][r] == null;
    }
    if (fits) {
      return ValueColumn.ofUnscaled(
          Arrays.copyOf(longs[i], size), scales[i], Arrays.copyOf(nulls[i], size));
    }
    byte[][] column = new byte[size][];
    for (int r = 0; r < size; r++) {
      column[r] = nulls[i][r] ? null : texts[i][r] != null ? texts[i][r]
          : BigDecimal.valueOf(longs[i][r], scales[i]).toPlainString()
              .getBytes(StandardCharsets.UTF_8);
    }
    return ValueColumn.ofTexts(column);
  }

  private static final byte[] TRUE = "true".getBytes(StandardCharsets.UTF_8);
  private static final byte[] FALSE = "false".getBytes(StandardCharsets.UTF_8);

  boolean[] flags(String name) {
    int i = plan.input(name);
    boolean[] out = new boolean[size];
    for (int r = 0; r < size; r++) {
      out[r] = !nulls[i][r] && longs[i][r] != 0;
    }
    return out;
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

  /** Adds the chunk's source positions (its "rowno" input) to {@code rows}. */
  void addPositionsTo(org.roaringbitmap.longlong.Roaring64NavigableMap rows) {
    long[] column = longs[plan.input("rowno")];
    for (int r = 0; r < size; r++) {
      rows.addLong(column[r]);
    }
  }

  /** The smallest value of the "id" input over the chunk (it names the partition's rows). */
  long minId() {
    long[] column = longs[plan.input("id")];
    long low = Long.MAX_VALUE;
    for (int r = 0; r < size; r++) {
      low = Math.min(low, column[r]);
    }
    return low;
  }
}
