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
 * Up to {@code capacity} rows of one tap's inputs in primitive arrays: ids, numbers and flags as
 * longs with a null flag, row by row in one array each ({@link #cells}, {@link #cellNulls}: row
 * {@code r}'s input {@code i} at {@code r * width + i}), so that the generated code of a tap
 * writes a row's numbers where they stay, side by side ({@link TapExpression}); texts as UTF-8
 * bytes and id arrays as long[], column by column. Read column by column when the chunk is full
 * ({@link Emission}). How an input is held is its {@link Slot}: an input's type says what it
 * means (an id, a text), its slot how Spark holds it (a "text" input of a numeric column arrives
 * as the number).
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

  /**
   * The texts' and id arrays' bytes at which a chunk is full before its rows are (texts counted
   * up to the plan's longest kept text): a quarter of the 8 MB a message may take (the Kafka
   * producers' max.request.size, ingest's sparkprov.events.MAX_EVENT_BYTES), leaving the rest
   * to the ids and numbers of {@code rowsPerMessage} rows. Rows of large values make more,
   * smaller messages rather than one the broker refuses.
   */
  static final long MAX_OBJECT_BYTES = 2L << 20;
  /** The rows a chunk's arrays hold at first; they double as rows come, up to rowsPerMessage,
   * so that a task of a few rows allocates for a few, not for a full chunk. */
  static final int INITIAL_ROWS = 1024;

  // 10^18: an unscaled value under it has at most 18 digits.
  private static final java.math.BigInteger UNSCALED_BOUND =
      java.math.BigInteger.TEN.pow(Decimal.MAX_LONG_DIGITS());

  private final TapPlan plan;
  private final Slot[] slots;
  private final int[] scales; // a DECIMAL column's scale
  private final int width;
  // Row-major: row r's input i at r * width + i. A null's long is whatever was there before.
  private long[] cells;
  private boolean[] cellNulls;
  private final byte[][][] texts; // UTF-8, as Spark holds them; per input, per row
  private final long[][][] arrays;
  private final int[] refSlots; // the inputs held as objects (texts, arrays, wide decimals)
  // Where the next row's cells begin (size * width): the codegen tap reads it before each row.
  private final int[] next = new int[1];
  // The columns Emission reads from a full chunk, kept for the next one (free again at clear()).
  private final Scratch scratch;
  private final java.util.List<Object[]> writers = new java.util.ArrayList<>(1);
  private int capacity; // the rows the arrays hold now: INITIAL_ROWS, doubled up to the plan's
  private int size;
  private long objectBytes; // the rows' texts and id arrays so far (MAX_OBJECT_BYTES)

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
    this.width = width;
    scratch = new Scratch(plan.rowsPerMessage());
    capacity = Math.min(INITIAL_ROWS, plan.rowsPerMessage());
    // One row more than it holds: where the next row is written while a full chunk waits for
    // its last row's ids (a tap over runs, Tap.Runs), not kept.
    cells = new long[(capacity + 1) * width];
    cellNulls = new boolean[(capacity + 1) * width];
    texts = new byte[width][][];
    arrays = new long[width][][];
    refSlots = java.util.stream.IntStream.range(0, width).filter(i -> isObject(slots[i]))
        .toArray();
    for (int i : refSlots) {
      switch (slots[i]) {
        case TEXT, WIDE_DECIMAL -> texts[i] = new byte[capacity][];
        case ARRAY -> arrays[i] = new long[capacity][];
        default -> throw new IllegalStateException();
      }
    }
  }

  /** Whether Spark hands an input of {@code slot} as an object (copied when its row commits). */
  private static boolean isObject(Slot slot) {
    return slot == Slot.TEXT || slot == Slot.ARRAY || slot == Slot.WIDE_DECIMAL;
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

  /** Whether the chunk holds {@code rowsPerMessage} rows, or texts and id arrays of {@link
   * #MAX_OBJECT_BYTES}. */
  boolean full() {
    return size == plan.rowsPerMessage() || objectBytes >= MAX_OBJECT_BYTES;
  }

  /** Empties the chunk; the columns read from it before ({@link #ids}, {@link #values}, ...)
   * are no longer the reader's: their arrays serve the next rows. */
  void clear() {
    size = 0;
    objectBytes = 0;
    next[0] = 0;
    scratch.reset();
  }

  /** An array of {@code length} longs the caller fills, the reader's until {@link #clear}. */
  long[] scratchLongs(int length) {
    return scratch.longs(length);
  }

  /** An array of {@code length} flags the caller fills, the reader's until {@link #clear}. */
  boolean[] scratchFlags(int length) {
    return scratch.flags(length);
  }

  /**
   * The arrays the codegen tap writes its next row into ({@link TapExpression}): {@code
   * {long[] cells, boolean[] nulls, Object[] refs, int[] next}}. Input {@code i}'s null flag
   * goes to {@code nulls[next[0] + i]} and, if not null, its number to {@code cells[next[0] +
   * i]} (a double's bits, a flag as 0 or 1); an object (a UTF8String, whose bytes Spark may
   * reuse after the call, an ArrayData, a Decimal) to {@code refs[i]}. {@link #commit} then
   * makes it a row of the chunk; a row not committed is written over by the next.
   */
  Object[] writer(Object[] refs, Object... more) {
    Object[] writer = new Object[4 + more.length];
    writer[0] = cells;
    writer[1] = cellNulls;
    writer[2] = refs;
    writer[3] = next;
    System.arraycopy(more, 0, writer, 4, more.length);
    writers.add(writer); // its arrays replaced where the chunk grows (a row reads them anew)
    return writer;
  }

  /** Room for the next row: the arrays doubled (up to the plan's rows) when the rows fill
   * them, and every writer handed out pointed at the new ones. */
  private void makeRoom() {
    if (size < capacity || capacity == plan.rowsPerMessage()) {
      return;
    }
    capacity = (int) Math.min(2L * capacity, plan.rowsPerMessage());
    cells = Arrays.copyOf(cells, (capacity + 1) * width);
    cellNulls = Arrays.copyOf(cellNulls, (capacity + 1) * width);
    for (int i : refSlots) {
      if (texts[i] != null) {
        texts[i] = Arrays.copyOf(texts[i], capacity);
      }
      if (arrays[i] != null) {
        arrays[i] = Arrays.copyOf(arrays[i], capacity);
      }
    }
    for (Object[] writer : writers) {
      writer[0] = cells;
      writer[1] = cellNulls;
    }
  }

  /** The row written at {@code next} ({@link #writer}) as the chunk's next, its objects in
   * {@code refs} copied. */
  void commit(Object[] refs) {
    int r = size;
    int at = r * width;
    for (int i : refSlots) {
      boolean isNull = cellNulls[at + i];
      switch (slots[i]) {
        case TEXT -> texts[i][r] = isNull ? null : ((UTF8String) refs[i]).getBytes();
        case ARRAY -> arrays[i][r] = isNull ? null
            : refs[i] instanceof long[] ids ? ids : longs((ArrayData) refs[i]);
        case WIDE_DECIMAL -> wide(i, r, isNull ? null : (Decimal) refs[i]);
        default -> throw new IllegalStateException();
      }
      objectBytes += objectBytes(i, r);
    }
    size = r + 1;
    next[0] = at + width;
    makeRoom();
  }

  /** The bytes row {@code r}'s object input {@code i} adds to a message (a text up to the
   * longest kept). */
  private long objectBytes(int i, int r) {
    if (arrays[i] != null) {
      long[] ids = arrays[i][r];
      return ids == null ? 0 : 8L * ids.length;
    }
    byte[] text = texts[i][r];
    int kept = plan.maxTextBytes() > 0 ? plan.maxTextBytes() : Integer.MAX_VALUE;
    return text == null ? 0 : Math.min(text.length, kept);
  }

  /** Row {@code r}'s id array {@code i} set to {@code ids} (a row committed before its ids were
   * known: {@link Tap.Runs}). */
  void setArray(int r, int i, long[] ids) {
    objectBytes -= objectBytes(i, r);
    arrays[i][r] = ids;
    objectBytes += objectBytes(i, r);
  }

  /** Row {@code r}'s input {@code i} set to {@code value}, not null. */
  void setLong(int r, int i, long value) {
    cells[r * width + i] = value;
    cellNulls[r * width + i] = false;
  }

  /** The long of input {@code i} in the row being written ({@link #writer}). */
  long written(int i) {
    return cells[next[0] + i];
  }

  /** Where the row being written ({@link #writer}) begins in the cells. */
  int writing() {
    return next[0];
  }

  /** The row written at cell {@code from} moved to where the next row is written (a full chunk
   * sent between the row's writing and its commit: {@link Tap.Runs}). */
  void moveWritten(int from) {
    if (from != next[0]) {
      System.arraycopy(cells, from, cells, next[0], width);
      System.arraycopy(cellNulls, from, cellNulls, next[0], width);
    }
  }

  /** Whether input {@code i} of the row being written ({@link #writer}) is null. */
  boolean writtenNull(int i) {
    return cellNulls[next[0] + i];
  }

  /**
   * Copies one row given as arrays (tests): per input, its null flag, its number in {@code
   * values} or its object in {@code refs}, as {@link #writer} says.
   */
  void add(long[] values, boolean[] isNull, Object[] refs) {
    int at = next[0];
    System.arraycopy(values, 0, cells, at, width);
    System.arraycopy(isNull, 0, cellNulls, at, width);
    commit(refs);
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
      if (isObject(slots[i])) {
        cellNulls[r * width + i] = isNull;
        objectBytes += objectBytes(i, r);
      }
    }
    size = r + 1;
    next[0] = size * width;
    makeRoom();
  }

  /** A wide decimal: its unscaled long at the column's scale where it has at most 18 digits
   * (what StringColumn.unscaled carries), else its text as Spark's cast writes it (plainly, every
   * digit of its scale). */
  private void wide(int i, int r, Decimal value) {
    cellNulls[r * width + i] = value == null;
    texts[i][r] = null;
    if (value == null) {
      return;
    }
    BigDecimal d = value.toJavaBigDecimal();
    if (d.scale() == scales[i] && d.unscaledValue().abs().compareTo(UNSCALED_BOUND) < 0) {
      cells[r * width + i] = d.unscaledValue().longValue();
    } else {
      texts[i][r] = d.toPlainString().getBytes(StandardCharsets.UTF_8);
    }
  }

  private void put(int i, int r, boolean isNull, long value) {
    cellNulls[r * width + i] = isNull;
    cells[r * width + i] = value;
  }

  /** Input {@code i}'s longs over the chunk's rows, 0 where null. */
  private long[] column(int i) {
    long[] out = scratch.longs(size);
    for (int r = 0, at = i; r < size; r++, at += width) {
      out[r] = cellNulls[at] ? 0L : cells[at];
    }
    return out;
  }

  /** Input {@code i}'s null flags over the chunk's rows. */
  private boolean[] nullColumn(int i) {
    boolean[] out = scratch.flags(size);
    for (int r = 0, at = i; r < size; r++, at += width) {
      out[r] = cellNulls[at];
    }
    return out;
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
    for (int r = 0, at = i; r < size; r++, at += width) {
      if (cellNulls[at]) {
        throw new IllegalStateException(
            "id column " + name + " of tap " + plan.key() + " holds nulls where every row needs an id");
      }
    }
    return column(i);
  }

  /** The id column {@code name} (0 where it holds none: {@link #nullMask}), one per row. */
  long[] rawIds(String name) {
    return column(plan.input(name));
  }

  boolean[] nullMask(String name) {
    return nullColumn(plan.input(name));
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
      case LONG -> ValueColumn.ofLongs(column(i), nullColumn(i));
      case DATE -> ValueColumn.ofDates(column(i), nullColumn(i));
      case DECIMAL -> ValueColumn.ofUnscaled(column(i), scales[i], nullColumn(i));
      case WIDE_DECIMAL -> wideValues(i);
      case DOUBLE -> {
        double[] doubles = scratch.doubles(size);
        for (int r = 0, at = i; r < size; r++, at += width) {
          doubles[r] = cellNulls[at] ? 0.0 : Double.longBitsToDouble(cells[at]);
        }
        yield ValueColumn.ofDoubles(doubles, nullColumn(i), scratch.longs(size));
      }
      case BOOL -> {
        long[] flags = column(i);
        boolean[] missing = nullColumn(i);
        byte[][] column = new byte[size][];
        for (int r = 0; r < size; r++) {
          column[r] = missing[r] ? null : (flags[r] != 0 ? TRUE : FALSE);
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
    long[] unscaled = column(i);
    boolean[] missing = nullColumn(i);
    if (fits) {
      return ValueColumn.ofUnscaled(unscaled, scales[i], missing);
    }
    byte[][] column = new byte[size][];
    for (int r = 0; r < size; r++) {
      column[r] = missing[r] ? null : texts[i][r] != null ? texts[i][r]
          : BigDecimal.valueOf(unscaled[r], scales[i]).toPlainString()
              .getBytes(StandardCharsets.UTF_8);
    }
    return ValueColumn.ofTexts(column);
  }

  private static final byte[] TRUE = "true".getBytes(StandardCharsets.UTF_8);
  private static final byte[] FALSE = "false".getBytes(StandardCharsets.UTF_8);

  boolean[] flags(String name) {
    int i = plan.input(name);
    boolean[] out = scratch.flags(size);
    for (int r = 0, at = i; r < size; r++, at += width) {
      out[r] = !cellNulls[at] && cells[at] != 0;
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

  /** Adds the chunk's source positions (its "rowno" input) to {@code rows}: a run of
   * consecutive positions (a scan's rows, in file order) as one range, not row by row. */
  void addPositionsTo(org.roaringbitmap.longlong.Roaring64NavigableMap rows) {
    int at = plan.input("rowno");
    int r = 0;
    while (r < size) {
      long start = cells[at + r * width];
      int end = r + 1;
      while (end < size && cells[at + end * width] == start + (end - r)) {
        end++;
      }
      if (end - r == 1) {
        rows.addLong(start);
      } else {
        rows.addRange(start, start + (end - r));
      }
      r = end;
    }
  }

  /** The smallest value of the "id" input over the chunk (it names the partition's rows). */
  long minId() {
    long low = Long.MAX_VALUE;
    for (int r = 0, at = plan.input("id"); r < size; r++, at += width) {
      low = Math.min(low, cells[at]);
    }
    return low;
  }
}
