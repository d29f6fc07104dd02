package io.sparkprov.capture;

import com.google.protobuf.CodedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * LineageEvent batches in proto/sparkprov/v1/lineage.proto's wire format, written with protobuf's
 * own {@link CodedOutputStream} field by field (the numbers below are the .proto's). Python's
 * sparkprov.events.decode reads them; tests/unit/test_jvm_wire.py checks that it decodes what
 * this class writes to the same batch as sparkprov.events.encode_batch.
 */
final class Wire {
  static final int SCHEMA_VERSION = 2;

  // LineageEvent
  private static final int EVENT_SCHEMA_VERSION = 1;
  private static final int EVENT_RUN_ID = 2;
  private static final int EVENT_WORKFLOW = 3;
  private static final int EVENT_BATCH = 10;
  // LineageBatch
  private static final int BATCH_TAP = 1;
  private static final int BATCH_PARTITION = 2;
  private static final int BATCH_SEQUENCE = 3;
  private static final int BATCH_NODES = 4;
  private static final int BATCH_EDGES = 5;
  private static final int BATCH_MEMBERS = 6;
  // NodeBlock
  private static final int NODE_OP = 1;
  private static final int NODE_IDS = 2;
  private static final int NODE_LABEL = 3;
  private static final int NODE_LABELS = 4;
  private static final int NODE_RELATION = 5;
  private static final int NODE_ATTRIBUTE_NAMES = 6;
  private static final int NODE_ATTRIBUTE_VALUES = 7;
  private static final int NODE_VALUES = 8;
  private static final int NODE_SHARED = 9;
  private static final int NODE_SPLIT = 10;
  // MemberBlock
  private static final int MEMBER_MEMBERS = 1;
  private static final int MEMBER_GROUPS = 2;
  private static final int MEMBER_GROUP_KEY = 3;
  private static final int MEMBER_DELTA = 4;
  private static final int MEMBER_AGGREGATES = 5;
  private static final int MEMBER_VALUES = 6;
  private static final int MEMBER_SPLIT = 7;
  // StringColumn
  private static final int COLUMN_VALUES = 1;
  private static final int COLUMN_NULL_ROWS = 2;
  // EdgeBlock
  private static final int EDGE_SRC = 1;
  private static final int EDGE_DST = 2;

  /** Op numbers of lineage.proto's enum Op. */
  enum Op {
    TOKEN(1), PLUS(2), TIMES(3), DELTA(4), TENSOR(5), AGGREGATE(6), BLACK_BOX(7), MODULE(8),
    VALUE(9), EXCLUDED(10);

    final int number;

    Op(int number) {
      this.number = number;
    }
  }

  /** Nodes of one op, column by column (a null column is an empty one). */
  record NodeBlock(
      Op op,
      long[] ids,
      String label,
      String[] labels,
      String relation,
      List<String> attributeNames,
      List<String[]> attributeValues,
      String[] values,
      boolean shared) {}

  /** Group members in compact form (lineage.proto's MemberBlock). */
  record MemberBlock(
      long[] members, long[] groups, String groupKey, boolean delta, List<String[]> values) {}

  private Wire() {}

  static byte[] batch(
      TapPlan plan,
      int partition,
      int sequence,
      List<NodeBlock> nodes,
      long[] src,
      long[] dst,
      List<MemberBlock> members) {
    try {
      return event(plan, partition, sequence, nodes, src, dst, members);
    } catch (IOException e) { // an in-memory stream: not expected
      throw new UncheckedIOException(e);
    }
  }

  private static byte[] event(
      TapPlan plan,
      int partition,
      int sequence,
      List<NodeBlock> nodes,
      long[] src,
      long[] dst,
      List<MemberBlock> members)
      throws IOException {
    Writer body = new Writer();
    body.string(BATCH_TAP, plan.key());
    body.int32(BATCH_PARTITION, partition);
    body.int32(BATCH_SEQUENCE, sequence);
    for (NodeBlock block : nodes) {
      body.message(BATCH_NODES, node(block, plan.split()));
    }
    if (src != null) {
      Writer edges = new Writer();
      edges.fixed64s(EDGE_SRC, src);
      edges.fixed64s(EDGE_DST, dst);
      body.message(BATCH_EDGES, edges);
    }
    for (MemberBlock block : members) {
      body.message(BATCH_MEMBERS, member(block, plan.split()));
    }
    Writer event = new Writer();
    event.uint32(EVENT_SCHEMA_VERSION, SCHEMA_VERSION);
    event.string(EVENT_RUN_ID, plan.runId());
    event.string(EVENT_WORKFLOW, plan.workflow());
    event.message(EVENT_BATCH, body);
    return event.bytes();
  }

  private static Writer node(NodeBlock block, List<String> split) throws IOException {
    Writer w = new Writer();
    w.uint32(NODE_OP, block.op().number);
    w.fixed64s(NODE_IDS, block.ids());
    w.string(NODE_LABEL, block.label());
    w.strings(NODE_LABELS, block.labels());
    w.string(NODE_RELATION, block.relation());
    for (String name : block.attributeNames()) {
      w.string(NODE_ATTRIBUTE_NAMES, name);
    }
    for (String[] column : block.attributeValues()) {
      w.message(NODE_ATTRIBUTE_VALUES, column(column));
    }
    w.strings(NODE_VALUES, block.values());
    w.bool(NODE_SHARED, block.shared());
    for (String part : split) {
      w.string(NODE_SPLIT, part);
    }
    return w;
  }

  private static Writer member(MemberBlock block, List<String> split) throws IOException {
    Writer w = new Writer();
    w.fixed64s(MEMBER_MEMBERS, block.members());
    w.fixed64s(MEMBER_GROUPS, block.groups());
    w.string(MEMBER_GROUP_KEY, block.groupKey());
    w.bool(MEMBER_DELTA, block.delta());
    w.uint32(MEMBER_AGGREGATES, block.values().size());
    for (String[] column : block.values()) {
      w.message(MEMBER_VALUES, column(column));
    }
    for (String part : split) {
      w.string(MEMBER_SPLIT, part);
    }
    return w;
  }

  /** A StringColumn: nulls as "" plus their rows. */
  private static Writer column(String[] values) throws IOException {
    Writer w = new Writer();
    int nulls = 0;
    for (String v : values) {
      w.repeatedString(COLUMN_VALUES, v == null ? "" : v);
      nulls += v == null ? 1 : 0;
    }
    if (nulls > 0) {
      int[] rows = new int[nulls];
      for (int r = 0, k = 0; r < values.length; r++) {
        if (values[r] == null) {
          rows[k++] = r;
        }
      }
      w.packedUint32(COLUMN_NULL_ROWS, rows);
    }
    return w;
  }

  /**
   * One message's fields, written in the order given (the .proto's number order), into memory
   * (the IOException of the stream API is caught once, by {@link #batch}).
   */
  private static final class Writer {
    private final ByteArrayOutputStream buffer = new ByteArrayOutputStream(256);
    private final CodedOutputStream out = CodedOutputStream.newInstance(buffer, 4096);

    void string(int field, String value) throws IOException {
      if (value != null && !value.isEmpty()) {
        repeatedString(field, value);
      }
    }

    void repeatedString(int field, String value) throws IOException {
      out.writeString(field, value);
    }

    void strings(int field, String[] values) throws IOException {
      if (values != null) {
        for (String value : values) {
          repeatedString(field, value);
        }
      }
    }

    void int32(int field, int value) throws IOException {
      if (value != 0) {
        out.writeInt32(field, value);
      }
    }

    void uint32(int field, int value) throws IOException {
      if (value != 0) {
        out.writeUInt32(field, value);
      }
    }

    void bool(int field, boolean value) throws IOException {
      if (value) {
        out.writeBool(field, true);
      }
    }

    void fixed64s(int field, long[] values) throws IOException {
      if (values == null || values.length == 0) {
        return;
      }
      out.writeTag(field, com.google.protobuf.WireFormat.WIRETYPE_LENGTH_DELIMITED);
      out.writeUInt32NoTag(values.length * 8);
      for (long v : values) {
        out.writeSFixed64NoTag(v);
      }
    }

    void packedUint32(int field, int[] values) throws IOException {
      int size = 0;
      for (int v : values) {
        size += CodedOutputStream.computeUInt32SizeNoTag(v);
      }
      out.writeTag(field, com.google.protobuf.WireFormat.WIRETYPE_LENGTH_DELIMITED);
      out.writeUInt32NoTag(size);
      for (int v : values) {
        out.writeUInt32NoTag(v);
      }
    }

    void message(int field, Writer inner) throws IOException {
      byte[] bytes = inner.bytes();
      out.writeTag(field, com.google.protobuf.WireFormat.WIRETYPE_LENGTH_DELIMITED);
      out.writeUInt32NoTag(bytes.length);
      out.writeRawBytes(bytes);
    }

    byte[] bytes() throws IOException {
      out.flush();
      return buffer.toByteArray();
    }
  }
}
