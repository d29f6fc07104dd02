package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import io.sparkprov.v1.EdgeBlock;
import io.sparkprov.v1.LineageBatch;
import io.sparkprov.v1.LineageEvent;
import io.sparkprov.v1.StringColumn;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * What travels is defined once, in proto/sparkprov/v1/lineage.proto: {@link Wire}'s hand
 * encoder (one array, no message objects) must write exactly the bytes the classes protoc
 * generates from it write for the same batch. Random batches: every kind of field, empty and
 * null columns, texts with multi-byte characters, ids of every sign.
 */
class WireContractTest {
  private static final Wire.Op[] OPS = Wire.Op.values();

  @Test
  void theHandEncoderWritesTheGeneratedClassesBytes() throws InvalidProtocolBufferException {
    Random random = new Random(20261126);
    for (int round = 0; round < 300; round++) {
      TapPlan plan = plan(random);
      int partition = random.nextInt(4) == 0 ? 0 : random.nextInt(1000);
      int sequence = random.nextInt(3) == 0 ? 0 : random.nextInt(100_000);
      List<Wire.NodeBlock> nodes = new ArrayList<>();
      for (int b = random.nextInt(3); b > 0; b--) {
        nodes.add(nodeBlock(random));
      }
      long[] src = null;
      long[] dst = null;
      if (random.nextBoolean()) {
        src = ids(random, random.nextInt(6));
        dst = ids(random, src.length);
      }
      List<Wire.MemberBlock> members = new ArrayList<>();
      for (int b = random.nextInt(3); b > 0; b--) {
        members.add(memberBlock(random));
      }

      byte[] hand = Wire.batch(plan, partition, sequence, nodes, src, dst, members);
      LineageEvent generated = generated(plan, partition, sequence, nodes, src, dst, members);

      assertArrayEquals(generated.toByteArray(), hand, "round " + round);
      assertEquals(generated, LineageEvent.parseFrom(hand), "round " + round);
    }
  }

  @Test
  void integersTravelAsDifferencesWhereShorterAndReadBackTheSame()
      throws InvalidProtocolBufferException {
    int n = 1000;
    long[] growing = new long[n]; // order keys: 3 bytes each as they are, 1 as differences
    long[] scattered = new long[n];
    long[] wrapping = {Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE + 1};
    Random random = new Random(7);
    for (int r = 0; r < n; r++) {
      growing[r] = 1_000_000 + 3L * r;
      scattered[r] = random.nextLong();
    }
    boolean[] none = new boolean[n];
    for (long[] values : List.of(growing, scattered, wrapping)) {
      ValueColumn column = ValueColumn.ofLongs(values, Arrays.copyOf(none, values.length));
      Wire.MemberBlock block = new Wire.MemberBlock(
          new long[values.length], new long[values.length], "g", true, List.of(column), null,
          false);
      TapPlan plan = plan(random);
      LineageEvent event = LineageEvent.parseFrom(
          Wire.batch(plan, 0, 0, List.of(), null, null, List.of(block)));
      StringColumn sent = event.getBatch().getMembers(0).getValues(0);
      assertEquals(values != scattered, sent.getDeltas(), "differences where shorter");
      assertArrayEquals(values, integersRead(sent, sent.getLongsList()));
    }
  }

  @Test
  void groupsTravelAsADictionaryWhereShorterAndReadBackTheSame()
      throws InvalidProtocolBufferException {
    Random random = new Random(11);
    long[] pool = ids(random, 300);
    long[] few = new long[2000]; // four groups, as TPC-H q1's
    long[] runs = new long[2000]; // 300 groups, each member's next to its group's others
    long[] distinct = ids(random, 2000);
    for (int r = 0; r < few.length; r++) {
      few[r] = pool[random.nextInt(4)];
      runs[r] = pool[r * pool.length / runs.length];
    }
    for (long[] groups : List.of(few, runs, distinct)) {
      Wire.MemberBlock block = new Wire.MemberBlock(
          new long[groups.length], groups, "g", true, List.of(), null, false);
      io.sparkprov.v1.MemberBlock sent = LineageEvent.parseFrom(
              Wire.batch(plan(random), 0, 0, List.of(), null, null, List.of(block)))
          .getBatch().getMembers(0);
      long[] read;
      if (sent.getGroupIndexCount() > 0) {
        assertEquals(0, sent.getGroupsCount());
        read = sent.getGroupIndexList().stream()
            .mapToLong(i -> sent.getGroupIds(i)).toArray();
      } else {
        read = sent.getGroupsList().stream().mapToLong(Long::longValue).toArray();
      }
      assertEquals(groups != distinct, sent.getGroupIndexCount() > 0, "a dictionary where shorter");
      assertArrayEquals(groups, read);
    }
  }

  @Test
  void opNumbersAreTheProtosEnum() {
    for (Wire.Op op : OPS) {
      assertEquals("OP_" + op.name(), io.sparkprov.v1.Op.forNumber(op.number).name());
    }
    assertEquals(io.sparkprov.v1.Op.values().length - 2, OPS.length); // no UNSPECIFIED, UNRECOGNIZED
  }

  // ---- The same batch through the generated classes ------------------------------------------

  private static LineageEvent generated(
      TapPlan plan, int partition, int sequence, List<Wire.NodeBlock> nodes, long[] src,
      long[] dst, List<Wire.MemberBlock> members) {
    LineageBatch.Builder batch =
        LineageBatch.newBuilder().setTap(plan.key()).setPartition(partition).setSequence(sequence);
    for (Wire.NodeBlock block : nodes) {
      batch.addNodes(nodeBlock(block, plan.split()));
    }
    if (src != null) {
      batch.setEdges(
          EdgeBlock.newBuilder().addAllSrc(boxed(src)).addAllDst(boxed(dst)).build());
    }
    for (Wire.MemberBlock block : members) {
      io.sparkprov.v1.MemberBlock.Builder m =
          io.sparkprov.v1.MemberBlock.newBuilder()
              .addAllMembers(block.members() == null ? List.of() : boxed(block.members()))
              .addAllGroups(block.dictionary() == null ? boxed(block.groups()) : List.of())
              .setGroupKey(block.groupKey())
              .setDelta(block.delta())
              .setAggregates(block.aggregates())
              .addAllSplit(plan.split());
      for (ValueColumn column : block.values()) {
        m.addValues(column(column));
      }
      if (block.derived() != null) {
        m.setDerivedMembers(derived(block.derived()));
      }
      if (block.dictionary() != null) {
        m.addAllGroupIds(boxed(block.dictionary().ids()));
        m.addAllGroupIndex(Arrays.stream(block.dictionary().index()).boxed().toList());
      }
      if (block.valueOf() != null) {
        m.addAllValueOf(Arrays.stream(block.valueOf()).boxed().toList());
      }
      batch.addMembers(m);
    }
    return LineageEvent.newBuilder()
        .setSchemaVersion(Wire.SCHEMA_VERSION)
        .setRunId(plan.runId())
        .setWorkflow(plan.workflow())
        .setBatch(batch)
        .build();
  }

  private static io.sparkprov.v1.NodeBlock nodeBlock(Wire.NodeBlock block, List<String> split) {
    io.sparkprov.v1.NodeBlock.Builder n =
        io.sparkprov.v1.NodeBlock.newBuilder()
            .setOpValue(block.op().number)
            .addAllIds(block.ids() == null ? List.of() : boxed(block.ids()))
            .setShared(block.shared())
            .addAllAttributeNames(block.attributeNames())
            .addAllSplit(split);
    if (block.label() != null) {
      n.setLabel(block.label());
    }
    if (block.labels() != null) {
      n.addAllLabels(Arrays.asList(block.labels()));
    }
    if (block.relation() != null) {
      n.setRelation(block.relation());
    }
    for (ValueColumn column : block.attributeValues()) {
      n.addAttributeValues(column(column));
    }
    if (block.values() != null) {
      n.addAllValues(Arrays.asList(block.values()));
    }
    if (block.derived() != null) {
      n.setDerived(derived(block.derived()));
    }
    return n.build();
  }

  private static io.sparkprov.v1.DerivedIds derived(Wire.Derived d) {
    io.sparkprov.v1.DerivedIds.Builder b = io.sparkprov.v1.DerivedIds.newBuilder().setSeed(d.seed());
    if (d.positions() != null) {
      long previous = 0;
      for (long p : d.positions()) {
        b.addPositionDeltas(p - previous);
        previous = p;
      }
      return b.build();
    }
    if (d.parents() != null) {
      if (d.parents().ids() != null) {
        b.addAllParents(boxed(d.parents().ids()));
      } else {
        b.setParentMask(d.parents().mask()).addAllParentDeltas(deltas(d.parents().positions()));
      }
      Wire.Matches m = d.matches();
      if (m != null) {
        if (m.counts() != null) {
          Arrays.stream(m.counts()).forEach(b::addMatchCounts);
        }
        if (m.side().ids() != null) {
          b.addAllMatches(boxed(m.side().ids()));
        } else {
          b.setMatchMask(m.side().mask()).addAllMatchDeltas(deltas(m.side().positions()));
        }
        b.setPlusSalt(m.plusSalt());
      }
      return b.build();
    }
    Arrays.stream(d.left().nullRows()).forEach(b::addLeftNullRows);
    Arrays.stream(d.right().nullRows()).forEach(b::addRightNullRows);
    if (d.left().ids() != null) {
      b.addAllLeft(boxed(d.left().ids()));
    } else {
      b.setLeftMask(d.left().mask()).addAllLeftDeltas(deltas(d.left().positions()));
    }
    if (d.right().ids() != null) {
      b.addAllRight(boxed(d.right().ids()));
    } else {
      b.setRightMask(d.right().mask()).addAllRightDeltas(deltas(d.right().positions()));
    }
    return b.build();
  }

  private static List<Long> deltas(long[] values) {
    List<Long> out = new ArrayList<>();
    long previous = 0;
    for (long v : values) {
      out.add(v - previous);
      previous = v;
    }
    return out;
  }

  /** The protobuf builder's StringColumn: texts (nulls as ""), or numbers (0 where null). */
  private static StringColumn column(ValueColumn values) {
    StringColumn.Builder c = StringColumn.newBuilder();
    long[] integers = values.longs() != null ? values.longs() : values.decimals();
    boolean deltas = integers != null && deltasAreShorter(integers);
    c.setDeltas(deltas);
    for (int r = 0; r < values.size(); r++) {
      if (values.isNull(r)) {
        c.addNullRows(r);
      }
      long integer = 0;
      if (integers != null) {
        integer = deltas ? integers[r] - (r == 0 ? 0 : integers[r - 1]) : integers[r];
      }
      if (values.texts() != null) {
        c.addValues(values.isNull(r) ? "" : new String(values.texts()[r], StandardCharsets.UTF_8));
      } else if (values.longs() != null) {
        switch (values.kind()) {
          case INTEGER -> c.addLongs(integer);
          case DATE -> c.addDates(integer);
          case DECIMAL -> c.addUnscaled(integer);
          default -> throw new IllegalStateException();
        }
      } else if (values.decimals() != null) {
        c.addDecimals(integer);
      } else {
        c.addDoubles(values.doubles()[r]);
      }
    }
    if (values.decimals() != null) {
      c.setDecimalScale(values.scale());
    }
    if (values.kind() == ValueColumn.Kind.DECIMAL) {
      c.setUnscaledScale(values.scale());
    }
    return c.build();
  }

  /** StringColumn.deltas' rule: differences where they take fewer bytes than the values. */
  private static boolean deltasAreShorter(long[] values) {
    long plain = 0;
    long deltas = 0;
    for (int r = 0; r < values.length; r++) {
      plain += CodedOutputStream.computeSInt64SizeNoTag(values[r]);
      deltas += CodedOutputStream.computeSInt64SizeNoTag(values[r] - (r == 0 ? 0 : values[r - 1]));
    }
    return deltas < plain;
  }

  /** The values a reader gets back from a column's integers: the running sum where deltas. */
  private static long[] integersRead(StringColumn column, List<Long> field) {
    long[] out = new long[field.size()];
    long sum = 0;
    for (int r = 0; r < out.length; r++) {
      sum = column.getDeltas() ? sum + field.get(r) : field.get(r);
      out[r] = sum;
    }
    return out;
  }

  private static List<Long> boxed(long[] ids) {
    return Arrays.stream(ids).boxed().toList();
  }

  // ---- Random batches --------------------------------------------------------------------------

  private static TapPlan plan(Random random) {
    List<String> split = new ArrayList<>();
    for (int k = random.nextInt(4); k > 0; k--) {
      split.add(text(random));
    }
    return new TapPlan("source", "Orders#" + random.nextInt(9), "run-" + random.nextInt(99),
        random.nextInt(5) == 0 ? "" : "wf-é", "R", List.of(), List.of(), List.of(), split, "", 0,
        List.of(), "", false, 0, List.of(), List.of(), "", 16, 64, false);
  }

  private static Wire.NodeBlock nodeBlock(Random random) {
    int n = random.nextInt(5);
    int columns = random.nextInt(3);
    List<String> names = new ArrayList<>();
    List<ValueColumn> values = new ArrayList<>();
    for (int c = 0; c < columns; c++) {
      names.add("col" + c);
      values.add(valueColumn(random, n));
    }
    String[] labels = null;
    String label = null;
    if (random.nextBoolean()) {
      labels = new String[n];
      for (int i = 0; i < n; i++) {
        labels[i] = text(random);
      }
    } else {
      label = random.nextInt(4) == 0 ? "" : text(random);
    }
    String[] vnodeValues = null;
    if (random.nextInt(3) == 0) {
      vnodeValues = new String[n];
      for (int i = 0; i < n; i++) {
        vnodeValues[i] = text(random);
      }
    }
    Wire.Derived derived = derived(random, n);
    return new Wire.NodeBlock(OPS[random.nextInt(OPS.length)],
        derived == null ? ids(random, n) : null, label, labels,
        random.nextBoolean() ? null : text(random), names, values, vnodeValues,
        random.nextInt(4) == 0, derived);
  }

  private static Wire.Derived derived(Random random, int n) {
    return switch (random.nextInt(5)) {
      case 0 -> Wire.Derived.positions(random.nextInt(4) == 0 ? 0 : random.nextLong(),
          positions(random, n));
      case 1 -> Wire.Derived.pairs(random.nextLong(), side(random, n), side(random, n));
      case 2 -> Wire.Derived.parents(random.nextLong(), random.nextBoolean()
          ? new Wire.Side(ids(random, n), 0L, null, new int[0])
          : new Wire.Side(null, random.nextLong(), positions(random, n), new int[0]));
      case 3 -> matched(random, n);
      default -> null;
    };
  }

  /** A semi join's rows (counts of 1-3 matches, a salt) or an anti join's (one match each). */
  private static Wire.Derived matched(Random random, int n) {
    boolean semi = random.nextBoolean();
    int[] counts = semi ? random.ints(n, 1, 4).toArray() : null;
    int total = semi ? Arrays.stream(counts).sum() : n;
    Wire.Side matches = random.nextBoolean()
        ? new Wire.Side(ids(random, total), 0L, null, new int[0])
        : new Wire.Side(null, random.nextLong(), positions(random, total), new int[0]);
    Wire.Side parents = random.nextBoolean()
        ? new Wire.Side(ids(random, n), 0L, null, new int[0])
        : new Wire.Side(null, random.nextLong(), positions(random, n), new int[0]);
    return Wire.Derived.matched(random.nextLong(), parents,
        new Wire.Matches(counts, matches, semi ? random.nextLong() : 0L));
  }

  /** Increasing, with gaps and partition jumps, or (rarely) decreasing: deltas of every sign. */
  private static long[] positions(Random random, int n) {
    long[] out = new long[n];
    long p = random.nextInt(3) == 0 ? 0 : ((long) random.nextInt(200) << 33) + random.nextInt(9);
    for (int i = 0; i < n; i++) {
      out[i] = p;
      p += random.nextInt(5) == 0 ? -random.nextInt(1000) : random.nextInt(3) + ((long) random.nextInt(2) << 33);
    }
    return out;
  }

  private static Wire.Side side(Random random, int n) {
    return random.nextBoolean()
        ? new Wire.Side(ids(random, n), 0L, null, rows(random, n))
        : new Wire.Side(null, random.nextInt(4) == 0 ? 0 : random.nextLong(), positions(random, n),
            rows(random, n));
  }

  private static int[] rows(Random random, int n) {
    return java.util.stream.IntStream.range(0, n).filter(r -> random.nextInt(3) == 0).toArray();
  }

  private static Wire.MemberBlock memberBlock(Random random) {
    int n = random.nextInt(4) == 0 ? random.nextInt(400) : random.nextInt(5);
    List<ValueColumn> values = new ArrayList<>();
    for (int c = random.nextInt(3); c > 0; c--) {
      values.add(valueColumn(random, n));
    }
    Wire.Derived derived = derived(random, n);
    long[] groups = ids(random, n);
    if (random.nextBoolean()) { // few groups (up to 200: indexes of two bytes): a dictionary
      long[] pool = ids(random, 1 + random.nextInt(200));
      for (int i = 0; i < n; i++) {
        groups[i] = pool[random.nextInt(pool.length)];
      }
    }
    int[] valueOf = null;
    if (!values.isEmpty() && random.nextBoolean()) { // aggregates sharing their inputs' columns
      valueOf = new int[values.size() + random.nextInt(3)];
      for (int i = 0; i < valueOf.length; i++) {
        valueOf[i] = i < values.size() ? i : random.nextInt(values.size());
      }
    }
    return new Wire.MemberBlock(derived == null ? ids(random, n) : null, groups,
        "g#" + random.nextInt(5), random.nextBoolean(), values, derived, false, valueOf);
  }

  private static long[] ids(Random random, int n) {
    long[] out = new long[n];
    for (int i = 0; i < n; i++) {
      out[i] = random.nextInt(5) == 0 ? 0 : random.nextLong();
    }
    return out;
  }

  /** Texts, longs, doubles (extremes, NaN, -0.0 among them), dates or decimals, with null rows. */
  private static ValueColumn valueColumn(Random random, int n) {
    boolean[] nulls = new boolean[n];
    for (int i = 0; i < n; i++) {
      nulls[i] = random.nextInt(4) == 0;
    }
    switch (random.nextInt(5)) {
      case 3 -> {
        long[] days = new long[n];
        for (int i = 0; i < n; i++) {
          days[i] = nulls[i] ? 0 : random.nextBoolean() ? 19_000 + i
              : random.nextInt(6_000_000) - 3_000_000;
        }
        return ValueColumn.ofDates(days, nulls);
      }
      case 4 -> {
        long[] unscaled = new long[n];
        for (int i = 0; i < n; i++) {
          unscaled[i] = nulls[i] ? 0 : random.nextLong() % 1_000_000_000_000_000_000L;
        }
        return ValueColumn.ofUnscaled(unscaled, random.nextInt(19), nulls);
      }
      case 0 -> {
        long[] longs = new long[n];
        long[] extremes = {Long.MIN_VALUE, Long.MAX_VALUE, -1, 0, 1};
        boolean growing = random.nextBoolean(); // a key or a position: sent as differences
        long start = random.nextLong();
        for (int i = 0; i < n; i++) {
          longs[i] = nulls[i] ? 0 : growing ? start + i * (long) random.nextInt(3)
              : random.nextBoolean() ? extremes[random.nextInt(5)] : random.nextLong();
        }
        return ValueColumn.ofLongs(longs, nulls);
      }
      case 1 -> {
        double[] doubles = new double[n];
        double[] extremes = {Double.NaN, -0.0, Double.NEGATIVE_INFINITY, Double.MIN_VALUE, 1e300};
        boolean decimal = random.nextBoolean(); // short decimals: sent as integers
        for (int i = 0; i < n; i++) {
          doubles[i] = nulls[i] ? 0 : decimal ? random.nextInt(20001) / 100.0 - 100
              : random.nextBoolean() ? extremes[random.nextInt(5)] : random.nextGaussian() * 1e6;
        }
        return ValueColumn.ofDoubles(doubles, nulls);
      }
      default -> {
        return ValueColumn.ofTexts(texts(random, n));
      }
    }
  }

  private static byte[][] texts(Random random, int n) {
    byte[][] out = new byte[n][];
    for (int i = 0; i < n; i++) {
      out[i] = random.nextInt(4) == 0 ? null : text(random).getBytes(StandardCharsets.UTF_8);
    }
    return out;
  }

  private static String text(Random random) {
    String[] words = {"", "a", "Zürich", "北京", "x y", "0.5", "\u0000", "🙂"};
    return words[random.nextInt(words.length)] + random.nextInt(3);
  }
}
