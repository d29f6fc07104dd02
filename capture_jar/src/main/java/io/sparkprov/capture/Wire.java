package io.sparkprov.capture;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.WireFormat;
import io.sparkprov.v1.DerivedIds;
import io.sparkprov.v1.EdgeBlock;
import io.sparkprov.v1.LineageBatch;
import io.sparkprov.v1.LineageEvent;
import io.sparkprov.v1.StringColumn;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * LineageEvent batches in proto/sparkprov/v1/lineage.proto's wire format, written with protobuf's
 * own {@link CodedOutputStream} field by field, in one array with no intermediate message (the
 * field numbers are those of the classes protoc generates from the .proto). WireContractTest
 * checks the bytes against the generated classes' for the same batch, byte for byte; Python's
 * sparkprov.events.encode_batch is checked against its generated module the same way.
 */
final class Wire {
  /** 3: node blocks may carry their ids as the inputs they derive from ({@link Derived}); 7:
   * value columns may carry their integers as differences (StringColumn.deltas), member blocks
   * their groups as a dictionary ({@link GroupDictionary}); 8: a semi or an anti join's rows
   * as parents with their matches ({@link Matches}); 9: member blocks may share one value
   * column between aggregates of one input (MemberBlock.value_of). */
  static final int SCHEMA_VERSION = 9;

  // Field numbers: the generated classes' (proto/sparkprov/v1/lineage.proto), never typed here.
  private static final int EVENT_SCHEMA_VERSION = LineageEvent.SCHEMA_VERSION_FIELD_NUMBER;
  private static final int EVENT_RUN_ID = LineageEvent.RUN_ID_FIELD_NUMBER;
  private static final int EVENT_WORKFLOW = LineageEvent.WORKFLOW_FIELD_NUMBER;
  private static final int EVENT_BATCH = LineageEvent.BATCH_FIELD_NUMBER;
  private static final int BATCH_TAP = LineageBatch.TAP_FIELD_NUMBER;
  private static final int BATCH_PARTITION = LineageBatch.PARTITION_FIELD_NUMBER;
  private static final int BATCH_SEQUENCE = LineageBatch.SEQUENCE_FIELD_NUMBER;
  private static final int BATCH_NODES = LineageBatch.NODES_FIELD_NUMBER;
  private static final int BATCH_EDGES = LineageBatch.EDGES_FIELD_NUMBER;
  private static final int BATCH_MEMBERS = LineageBatch.MEMBERS_FIELD_NUMBER;
  private static final int NODE_OP = io.sparkprov.v1.NodeBlock.OP_FIELD_NUMBER;
  private static final int NODE_IDS = io.sparkprov.v1.NodeBlock.IDS_FIELD_NUMBER;
  private static final int NODE_LABEL = io.sparkprov.v1.NodeBlock.LABEL_FIELD_NUMBER;
  private static final int NODE_LABELS = io.sparkprov.v1.NodeBlock.LABELS_FIELD_NUMBER;
  private static final int NODE_RELATION = io.sparkprov.v1.NodeBlock.RELATION_FIELD_NUMBER;
  private static final int NODE_ATTRIBUTE_NAMES =
      io.sparkprov.v1.NodeBlock.ATTRIBUTE_NAMES_FIELD_NUMBER;
  private static final int NODE_ATTRIBUTE_VALUES =
      io.sparkprov.v1.NodeBlock.ATTRIBUTE_VALUES_FIELD_NUMBER;
  private static final int NODE_VALUES = io.sparkprov.v1.NodeBlock.VALUES_FIELD_NUMBER;
  private static final int NODE_SHARED = io.sparkprov.v1.NodeBlock.SHARED_FIELD_NUMBER;
  private static final int NODE_SPLIT = io.sparkprov.v1.NodeBlock.SPLIT_FIELD_NUMBER;
  private static final int NODE_DERIVED = io.sparkprov.v1.NodeBlock.DERIVED_FIELD_NUMBER;
  private static final int DERIVED_SEED = DerivedIds.SEED_FIELD_NUMBER;
  private static final int DERIVED_POSITION_DELTAS = DerivedIds.POSITION_DELTAS_FIELD_NUMBER;
  private static final int DERIVED_LEFT = DerivedIds.LEFT_FIELD_NUMBER;
  private static final int DERIVED_RIGHT = DerivedIds.RIGHT_FIELD_NUMBER;
  private static final int DERIVED_LEFT_NULL_ROWS = DerivedIds.LEFT_NULL_ROWS_FIELD_NUMBER;
  private static final int DERIVED_RIGHT_NULL_ROWS = DerivedIds.RIGHT_NULL_ROWS_FIELD_NUMBER;
  private static final int DERIVED_LEFT_MASK = DerivedIds.LEFT_MASK_FIELD_NUMBER;
  private static final int DERIVED_LEFT_DELTAS = DerivedIds.LEFT_DELTAS_FIELD_NUMBER;
  private static final int DERIVED_RIGHT_MASK = DerivedIds.RIGHT_MASK_FIELD_NUMBER;
  private static final int DERIVED_RIGHT_DELTAS = DerivedIds.RIGHT_DELTAS_FIELD_NUMBER;
  private static final int DERIVED_PARENTS = DerivedIds.PARENTS_FIELD_NUMBER;
  private static final int DERIVED_PARENT_MASK = DerivedIds.PARENT_MASK_FIELD_NUMBER;
  private static final int DERIVED_PARENT_DELTAS = DerivedIds.PARENT_DELTAS_FIELD_NUMBER;
  private static final int DERIVED_MATCH_COUNTS = DerivedIds.MATCH_COUNTS_FIELD_NUMBER;
  private static final int DERIVED_MATCHES = DerivedIds.MATCHES_FIELD_NUMBER;
  private static final int DERIVED_MATCH_MASK = DerivedIds.MATCH_MASK_FIELD_NUMBER;
  private static final int DERIVED_MATCH_DELTAS = DerivedIds.MATCH_DELTAS_FIELD_NUMBER;
  private static final int DERIVED_PLUS_SALT = DerivedIds.PLUS_SALT_FIELD_NUMBER;
  private static final int MEMBER_MEMBERS = io.sparkprov.v1.MemberBlock.MEMBERS_FIELD_NUMBER;
  private static final int MEMBER_GROUPS = io.sparkprov.v1.MemberBlock.GROUPS_FIELD_NUMBER;
  private static final int MEMBER_GROUP_KEY = io.sparkprov.v1.MemberBlock.GROUP_KEY_FIELD_NUMBER;
  private static final int MEMBER_DELTA = io.sparkprov.v1.MemberBlock.DELTA_FIELD_NUMBER;
  private static final int MEMBER_AGGREGATES =
      io.sparkprov.v1.MemberBlock.AGGREGATES_FIELD_NUMBER;
  private static final int MEMBER_VALUES = io.sparkprov.v1.MemberBlock.VALUES_FIELD_NUMBER;
  private static final int MEMBER_SPLIT = io.sparkprov.v1.MemberBlock.SPLIT_FIELD_NUMBER;
  private static final int MEMBER_JOIN_ROWS = io.sparkprov.v1.MemberBlock.JOIN_ROWS_FIELD_NUMBER;
  private static final int MEMBER_GROUP_IDS = io.sparkprov.v1.MemberBlock.GROUP_IDS_FIELD_NUMBER;
  private static final int MEMBER_VALUE_OF = io.sparkprov.v1.MemberBlock.VALUE_OF_FIELD_NUMBER;
  private static final int MEMBER_GROUP_INDEX =
      io.sparkprov.v1.MemberBlock.GROUP_INDEX_FIELD_NUMBER;
  private static final int MEMBER_DERIVED =
      io.sparkprov.v1.MemberBlock.DERIVED_MEMBERS_FIELD_NUMBER;
  private static final int COLUMN_VALUES = StringColumn.VALUES_FIELD_NUMBER;
  private static final int COLUMN_NULL_ROWS = StringColumn.NULL_ROWS_FIELD_NUMBER;
  private static final int COLUMN_LONGS = StringColumn.LONGS_FIELD_NUMBER;
  private static final int COLUMN_DOUBLES = StringColumn.DOUBLES_FIELD_NUMBER;
  private static final int COLUMN_DECIMALS = StringColumn.DECIMALS_FIELD_NUMBER;
  private static final int COLUMN_DECIMAL_SCALE = StringColumn.DECIMAL_SCALE_FIELD_NUMBER;
  private static final int COLUMN_DATES = StringColumn.DATES_FIELD_NUMBER;
  private static final int COLUMN_UNSCALED = StringColumn.UNSCALED_FIELD_NUMBER;
  private static final int COLUMN_DELTAS = StringColumn.DELTAS_FIELD_NUMBER;
  private static final int COLUMN_UNSCALED_SCALE = StringColumn.UNSCALED_SCALE_FIELD_NUMBER;
  private static final int EDGE_SRC = EdgeBlock.SRC_FIELD_NUMBER;
  private static final int EDGE_DST = EdgeBlock.DST_FIELD_NUMBER;

  /** Op numbers of lineage.proto's enum Op. */
  enum Op {
    TOKEN(io.sparkprov.v1.Op.OP_TOKEN_VALUE),
    PLUS(io.sparkprov.v1.Op.OP_PLUS_VALUE),
    TIMES(io.sparkprov.v1.Op.OP_TIMES_VALUE),
    DELTA(io.sparkprov.v1.Op.OP_DELTA_VALUE),
    TENSOR(io.sparkprov.v1.Op.OP_TENSOR_VALUE),
    AGGREGATE(io.sparkprov.v1.Op.OP_AGGREGATE_VALUE),
    BLACK_BOX(io.sparkprov.v1.Op.OP_BLACK_BOX_VALUE),
    MODULE(io.sparkprov.v1.Op.OP_MODULE_VALUE),
    VALUE(io.sparkprov.v1.Op.OP_VALUE_VALUE),
    EXCLUDED(io.sparkprov.v1.Op.OP_EXCLUDED_VALUE);

    final int number;

    Op(int number) {
      this.number = number;
    }
  }

  /** Nodes of one op, column by column (a null column is an empty one); with {@code derived},
   * the ids (and a source's labels, a join's edges) travel as the inputs they derive from and
   * {@code ids} is null. */
  record NodeBlock(
      Op op,
      long[] ids,
      String label,
      String[] labels,
      String relation,
      List<String> attributeNames,
      List<ValueColumn> attributeValues,
      String[] values,
      boolean shared,
      Derived derived) {
    NodeBlock(Op op, long[] ids, String label, String[] labels, String relation,
        List<String> attributeNames, List<ValueColumn> attributeValues, String[] values,
        boolean shared) {
      this(op, ids, label, labels, relation, attributeNames, attributeValues, values, shared,
          null);
    }

    int count() {
      return derived != null ? derived.count() : ids.length;
    }
  }

  /**
   * lineage.proto's DerivedIds. Either {@code positions} (source rows: id = position XOR seed,
   * labels from the positions) or a join's two sides (id = Spark's xxhash64 of the pair seeded
   * with {@code seed}; both edges from them; the rows of a null side in its null rows).
   */
  record Derived(long seed, long[] positions, Side left, Side right, Side parents,
      Matches matches) {
    static Derived positions(long seed, long[] positions) {
      return new Derived(seed, positions, null, null, null, null);
    }

    static Derived pairs(long seed, Side left, Side right) {
      return new Derived(seed, null, left, right, null, null);
    }

    /** Rows with a fresh node over one parent each: id = xxhash64(parent), edge parent -> id. */
    static Derived parents(long seed, Side parents) {
      return new Derived(seed, null, null, null, parents, null);
    }

    /** A semi or an anti join's rows: fresh nodes over their left rows ({@code parents}), each
     * with its matches (lineage.proto's DerivedIds, "With matches"). */
    static Derived matched(long seed, Side parents, Matches matches) {
      return new Derived(seed, null, null, null, parents, matches);
    }

    int count() {
      return positions != null ? positions.length
          : parents != null ? parents.size() : left.size();
    }
  }

  /**
   * A semi or an anti join's matches, in row order: {@code counts} per row (null: one each, an
   * anti join's), the matches as a {@link Side} without null rows, and the salt of a semi join's
   * PLUS nodes.
   */
  record Matches(int[] counts, Side side, long plusSalt) {}

  /**
   * One side of a join's pairs: its {@code ids}, or, where they are a source's TOKEN ids, its
   * {@code positions} (id XOR {@code mask}; a null row repeats the position before it).
   */
  record Side(long[] ids, long mask, long[] positions, int[] nullRows) {
    int size() {
      return ids != null ? ids.length : positions.length;
    }
  }

  /** Group members in compact form (lineage.proto's MemberBlock); with {@code derived}, the
   * members' ids travel as the positions they derive from and {@code members} is null. */
  record MemberBlock(
      long[] members, long[] groups, String groupKey, boolean delta, List<ValueColumn> values,
      Derived derived, boolean joinRows, GroupDictionary dictionary, int[] valueOf) {
    /** {@code valueOf}: per aggregated column, its index in {@code values} (aggregates sharing
     * an input share its column: MemberBlock.value_of); null where column i is values[i]. */
    MemberBlock(long[] members, long[] groups, String groupKey, boolean delta,
        List<ValueColumn> values, Derived derived, boolean joinRows, int[] valueOf) {
      this(members, groups, groupKey, delta, values, derived, joinRows,
          GroupDictionary.of(groups), valueOf);
    }

    MemberBlock(long[] members, long[] groups, String groupKey, boolean delta,
        List<ValueColumn> values, Derived derived, boolean joinRows) {
      this(members, groups, groupKey, delta, values, derived, joinRows, null);
    }

    /** The number of aggregated columns: one per value column, or one per {@code valueOf}. */
    int aggregates() {
      return valueOf == null ? values.size() : valueOf.length;
    }

    MemberBlock(long[] members, long[] groups, String groupKey, boolean delta,
        List<ValueColumn> values, Derived derived) {
      this(members, groups, groupKey, delta, values, derived, false);
    }

    MemberBlock(long[] members, long[] groups, String groupKey, boolean delta,
        List<ValueColumn> values) {
      this(members, groups, groupKey, delta, values, null, false);
    }
  }

  private static final byte[] EMPTY = new byte[0];

  private Wire() {}

  static byte[] batch(
      TapPlan plan,
      int partition,
      int sequence,
      List<NodeBlock> nodes,
      long[] src,
      long[] dst,
      List<MemberBlock> members) {
    Fields event = w -> event(w, plan, partition, sequence, nodes, src, dst, members);
    try {
      return Writer.encode(event);
    } catch (IOException e) { // an array: not expected
      throw new UncheckedIOException(e);
    }
  }

  private static void event(
      Writer w,
      TapPlan plan,
      int partition,
      int sequence,
      List<NodeBlock> nodes,
      long[] src,
      long[] dst,
      List<MemberBlock> members)
      throws IOException {
    w.uint32(EVENT_SCHEMA_VERSION, SCHEMA_VERSION);
    w.string(EVENT_RUN_ID, plan.runId());
    w.string(EVENT_WORKFLOW, plan.workflow());
    w.message(EVENT_BATCH, body -> {
      body.string(BATCH_TAP, plan.key());
      body.int32(BATCH_PARTITION, partition);
      body.int32(BATCH_SEQUENCE, sequence);
      for (NodeBlock block : nodes) {
        body.message(BATCH_NODES, n -> node(n, block, plan.split()));
      }
      if (src != null) {
        body.message(BATCH_EDGES, edges -> {
          edges.fixed64s(EDGE_SRC, src);
          edges.fixed64s(EDGE_DST, dst);
        });
      }
      for (MemberBlock block : members) {
        body.message(BATCH_MEMBERS, m -> member(m, block, plan.split()));
      }
    });
  }

  private static void node(Writer w, NodeBlock block, List<String> split) throws IOException {
    w.uint32(NODE_OP, block.op().number);
    w.fixed64s(NODE_IDS, block.ids());
    w.string(NODE_LABEL, block.label());
    w.strings(NODE_LABELS, block.labels());
    w.string(NODE_RELATION, block.relation());
    for (String name : block.attributeNames()) {
      w.string(NODE_ATTRIBUTE_NAMES, name);
    }
    for (ValueColumn column : block.attributeValues()) {
      w.message(NODE_ATTRIBUTE_VALUES, c -> column(c, column));
    }
    w.strings(NODE_VALUES, block.values());
    w.bool(NODE_SHARED, block.shared());
    for (String part : split) {
      w.string(NODE_SPLIT, part);
    }
    if (block.derived() != null) {
      w.message(NODE_DERIVED, d -> derived(d, block.derived()));
    }
  }

  private static void derived(Writer w, Derived d) throws IOException {
    w.sfixed64(DERIVED_SEED, d.seed());
    if (d.positions() != null) {
      w.packedSint64Deltas(DERIVED_POSITION_DELTAS, d.positions());
      return;
    }
    if (d.parents() != null) {
      w.fixed64s(DERIVED_PARENTS, d.parents().ids());
      positions(w, DERIVED_PARENT_MASK, DERIVED_PARENT_DELTAS, d.parents());
      Matches matches = d.matches();
      if (matches != null) {
        w.packedUint32(DERIVED_MATCH_COUNTS, matches.counts());
        w.fixed64s(DERIVED_MATCHES, matches.side().ids());
        positions(w, DERIVED_MATCH_MASK, DERIVED_MATCH_DELTAS, matches.side());
        w.sfixed64(DERIVED_PLUS_SALT, matches.plusSalt());
      }
      return;
    }
    w.fixed64s(DERIVED_LEFT, d.left().ids());
    w.fixed64s(DERIVED_RIGHT, d.right().ids());
    w.packedUint32(DERIVED_LEFT_NULL_ROWS, d.left().nullRows());
    w.packedUint32(DERIVED_RIGHT_NULL_ROWS, d.right().nullRows());
    positions(w, DERIVED_LEFT_MASK, DERIVED_LEFT_DELTAS, d.left());
    positions(w, DERIVED_RIGHT_MASK, DERIVED_RIGHT_DELTAS, d.right());
  }

  /** A side that travels as positions: its mask, then its delta-coded positions. */
  private static void positions(Writer w, int maskField, int deltasField, Side side)
      throws IOException {
    if (side.positions() != null) {
      w.sfixed64(maskField, side.mask());
      w.packedSint64Deltas(deltasField, side.positions());
    }
  }

  private static void member(Writer w, MemberBlock block, List<String> split) throws IOException {
    w.fixed64s(MEMBER_MEMBERS, block.members());
    GroupDictionary dictionary = block.dictionary();
    if (dictionary == null) {
      w.fixed64s(MEMBER_GROUPS, block.groups());
    }
    w.string(MEMBER_GROUP_KEY, block.groupKey());
    w.bool(MEMBER_DELTA, block.delta());
    w.uint32(MEMBER_AGGREGATES, block.aggregates());
    for (ValueColumn column : block.values()) {
      w.message(MEMBER_VALUES, c -> column(c, column));
    }
    for (String part : split) {
      w.string(MEMBER_SPLIT, part);
    }
    if (block.derived() != null) {
      w.message(MEMBER_DERIVED, d -> derived(d, block.derived()));
    }
    w.bool(MEMBER_JOIN_ROWS, block.joinRows());
    if (dictionary != null) {
      w.fixed64s(MEMBER_GROUP_IDS, dictionary.ids());
      w.packedUint32(MEMBER_GROUP_INDEX, dictionary.index());
    }
    if (block.valueOf() != null) {
      w.packedUint32(MEMBER_VALUE_OF, block.valueOf());
    }
  }

  /** A StringColumn: UTF-8 texts (nulls as ""), or numbers (0 where null: doubles as decimal
   * integers where they all are), plus the null rows. */
  private static void column(Writer w, ValueColumn column) throws IOException {
    int n = column.size();
    int nulls = 0;
    if (column.texts() != null) {
      for (byte[] v : column.texts()) {
        w.utf8(COLUMN_VALUES, v == null ? EMPTY : v);
        nulls += v == null ? 1 : 0;
      }
    } else {
      for (boolean isNull : column.nulls()) {
        nulls += isNull ? 1 : 0;
      }
    }
    if (nulls > 0) {
      int[] rows = new int[nulls];
      for (int r = 0, k = 0; r < n; r++) {
        if (column.isNull(r)) {
          rows[k++] = r;
        }
      }
      w.packedUint32(COLUMN_NULL_ROWS, rows);
    }
    boolean deltas = false;
    if (column.longs() != null) {
      switch (column.kind()) {
        case INTEGER -> deltas = w.packedIntegers(COLUMN_LONGS, column.longs());
        case DATE -> deltas = w.packedIntegers(COLUMN_DATES, column.longs());
        case DECIMAL -> {
          deltas = w.packedIntegers(COLUMN_UNSCALED, column.longs());
          w.uint32(COLUMN_UNSCALED_SCALE, column.scale());
        }
        default -> throw new IllegalStateException();
      }
    } else if (column.decimals() != null) {
      deltas = w.packedIntegers(COLUMN_DECIMALS, column.decimals());
      w.uint32(COLUMN_DECIMAL_SCALE, column.scale());
    } else if (column.doubles() != null) {
      w.packedDoubles(COLUMN_DOUBLES, column.doubles());
    }
    w.bool(COLUMN_DELTAS, deltas);
  }

  /** The fields of one message, written by {@code w} in the .proto's number order. */
  @FunctionalInterface
  private interface Fields {
    void write(Writer w) throws IOException;
  }

  /**
   * Writes a message in two passes over the same {@link Fields}: the first only sums the sizes
   * (protobuf's computeXxxSize) and notes each nested message's size in pre-order; the second
   * writes into one array of exactly that size with protobuf's array encoder, taking the
   * nested messages' length prefixes from the notes. No intermediate buffer, no copy.
   */
  private static final class Writer {
    private final CodedOutputStream out; // null: the sizing pass
    private final int[] sizes;
    private int size;
    private int next;
    private SizeList notes;

    private Writer(CodedOutputStream out, int[] sizes) {
      this.out = out;
      this.sizes = sizes;
    }

    static byte[] encode(Fields message) throws IOException {
      Writer sizing = new Writer(null, null);
      sizing.notes = new SizeList();
      message.write(sizing);
      byte[] bytes = new byte[sizing.size];
      CodedOutputStream array = CodedOutputStream.newInstance(bytes);
      message.write(new Writer(array, sizing.notes.toArray()));
      array.checkNoSpaceLeft();
      return bytes;
    }

    /**
     * A number the sizing pass works out and the write pass needs again (a packed field's
     * length, a choice of form): computed once, in the sizing pass, and noted in pre-order with
     * the messages' sizes; the write pass reads it back at the same point.
     */
    private int noted(java.util.function.IntSupplier value) {
      if (out == null) {
        int slot = notes.reserve();
        int v = value.getAsInt();
        notes.set(slot, v);
        return v;
      }
      return sizes[next++];
    }

    void message(int field, Fields inner) throws IOException {
      if (out == null) {
        int slot = notes.reserve();
        int before = size;
        inner.write(this);
        int length = size - before;
        notes.set(slot, length);
        size += CodedOutputStream.computeTagSize(field)
            + CodedOutputStream.computeUInt32SizeNoTag(length);
        return;
      }
      out.writeTag(field, WireFormat.WIRETYPE_LENGTH_DELIMITED);
      out.writeUInt32NoTag(sizes[next++]);
      inner.write(this);
    }

    void string(int field, String value) throws IOException {
      if (value != null && !value.isEmpty()) {
        repeatedString(field, value);
      }
    }

    void repeatedString(int field, String value) throws IOException {
      if (out == null) {
        size += CodedOutputStream.computeStringSize(field, value);
      } else {
        out.writeString(field, value);
      }
    }

    /** A string field from its UTF-8 bytes (the wire format of a string is its UTF-8). */
    void utf8(int field, byte[] value) throws IOException {
      if (out == null) {
        size += CodedOutputStream.computeByteArraySize(field, value);
      } else {
        out.writeByteArray(field, value);
      }
    }

    void strings(int field, String[] values) throws IOException {
      if (values != null) {
        for (String value : values) {
          repeatedString(field, value);
        }
      }
    }

    void int32(int field, int value) throws IOException {
      if (value == 0) {
        return;
      }
      if (out == null) {
        size += CodedOutputStream.computeInt32Size(field, value);
      } else {
        out.writeInt32(field, value);
      }
    }

    void uint32(int field, int value) throws IOException {
      if (value == 0) {
        return;
      }
      if (out == null) {
        size += CodedOutputStream.computeUInt32Size(field, value);
      } else {
        out.writeUInt32(field, value);
      }
    }

    void bool(int field, boolean value) throws IOException {
      if (!value) {
        return;
      }
      if (out == null) {
        size += CodedOutputStream.computeBoolSize(field, true);
      } else {
        out.writeBool(field, true);
      }
    }

    /** The values of a packed field, written after its tag and length. */
    @FunctionalInterface
    private interface Packed {
      void write(CodedOutputStream out) throws IOException;
    }

    /** A packed field of {@code length} bytes: {@code values} writes them, in the write pass. */
    private void packed(int field, int length, Packed values) throws IOException {
      if (out == null) {
        size += CodedOutputStream.computeTagSize(field)
            + CodedOutputStream.computeUInt32SizeNoTag(length) + length;
        return;
      }
      out.writeTag(field, WireFormat.WIRETYPE_LENGTH_DELIMITED);
      out.writeUInt32NoTag(length);
      values.write(out);
    }

    void fixed64s(int field, long[] values) throws IOException {
      if (values == null || values.length == 0) {
        return;
      }
      packed(field, values.length * 8, o -> {
        for (long v : values) {
          o.writeSFixed64NoTag(v);
        }
      });
    }

    void sfixed64(int field, long value) throws IOException {
      if (value == 0) {
        return;
      }
      if (out == null) {
        size += CodedOutputStream.computeSFixed64Size(field, value);
      } else {
        out.writeSFixed64(field, value);
      }
    }

    /** {@code values[0]}, then each value's difference from the one before, as packed sint64. */
    void packedSint64Deltas(int field, long[] values) throws IOException {
      if (values.length == 0) {
        return;
      }
      packed(field, noted(() -> deltaSize(values)), o -> writeDeltas(o, values));
    }

    /**
     * Packed sint64 {@code values}, as they are or as differences (StringColumn.deltas),
     * whichever takes fewer bytes (as they are on a tie); true where the differences travel.
     */
    boolean packedIntegers(int field, long[] values) throws IOException {
      if (values.length == 0) {
        return false;
      }
      // Both sizes in one pass; the sign of the note says which form was chosen.
      int signed = noted(() -> {
        int plain = 0;
        int deltas = 0;
        long previous = 0;
        for (long v : values) {
          plain += CodedOutputStream.computeSInt64SizeNoTag(v);
          deltas += CodedOutputStream.computeSInt64SizeNoTag(v - previous);
          previous = v;
        }
        return deltas < plain ? -deltas : plain;
      });
      if (signed < 0) {
        packed(field, -signed, o -> writeDeltas(o, values));
        return true;
      }
      packed(field, signed, o -> {
        for (long v : values) {
          o.writeSInt64NoTag(v);
        }
      });
      return false;
    }

    private static int deltaSize(long[] values) {
      int length = 0;
      long previous = 0;
      for (long v : values) {
        length += CodedOutputStream.computeSInt64SizeNoTag(v - previous);
        previous = v;
      }
      return length;
    }

    private static void writeDeltas(CodedOutputStream o, long[] values) throws IOException {
      long before = 0;
      for (long v : values) {
        o.writeSInt64NoTag(v - before);
        before = v;
      }
    }

    void packedDoubles(int field, double[] values) throws IOException {
      if (values.length == 0) {
        return;
      }
      packed(field, values.length * 8, o -> {
        for (double v : values) {
          o.writeDoubleNoTag(v);
        }
      });
    }

    void packedUint32(int field, int[] values) throws IOException {
      if (values == null || values.length == 0) {
        return;
      }
      packed(field, noted(() -> {
        int length = 0;
        for (int v : values) {
          length += CodedOutputStream.computeUInt32SizeNoTag(v);
        }
        return length;
      }), o -> {
        for (int v : values) {
          o.writeUInt32NoTag(v);
        }
      });
    }
  }

  /**
   * A member block's groups as its distinct ids, in order of first use, and each member's index
   * into them (MemberBlock.group_ids, group_index), made where that takes fewer bytes than 8 per
   * member.
   */
  record GroupDictionary(long[] ids, int[] index) {
    /** The dictionary of {@code groups}, or null where it would not be shorter. */
    static GroupDictionary of(long[] groups) {
      int n = groups.length;
      if (n < 2) {
        return null;
      }
      int capacity = Integer.highestOneBit(n * 2 - 1) << 1; // a load of at most 1/2
      int mask = capacity - 1;
      int shift = 64 - Integer.numberOfTrailingZeros(capacity);
      long[] keys = new long[capacity];
      int[] slots = new int[capacity]; // index + 1: 0 is an empty slot
      long[] ids = new long[n];
      int[] index = new int[n];
      int distinct = 0;
      long indexBytes = 0;
      for (int r = 0; r < n; r++) {
        long g = groups[r];
        int h = (int) ((g * 0x9E3779B97F4A7C15L) >>> shift); // Fibonacci hashing
        while (slots[h] != 0 && keys[h] != g) {
          h = (h + 1) & mask;
        }
        if (slots[h] == 0) {
          keys[h] = g;
          ids[distinct] = g;
          slots[h] = ++distinct;
        }
        index[r] = slots[h] - 1;
        indexBytes += CodedOutputStream.computeUInt32SizeNoTag(index[r]);
      }
      // The packed fields' tags and lengths aside: 8 bytes a distinct id, the indexes' varints.
      if (8L * distinct + indexBytes >= 8L * n) {
        return null;
      }
      return new GroupDictionary(java.util.Arrays.copyOf(ids, distinct), index);
    }
  }

  /** A growable list of ints: the nested messages' sizes and the noted numbers, in pre-order. */
  private static final class SizeList {
    private int[] values = new int[64];
    private int count;

    int reserve() {
      if (count == values.length) {
        values = java.util.Arrays.copyOf(values, count * 2);
      }
      return count++;
    }

    void set(int slot, int value) {
      values[slot] = value;
    }

    int[] toArray() {
      return values;
    }
  }
}
