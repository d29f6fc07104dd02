package io.sparkprov.capture;

import io.sparkprov.capture.Wire.MemberBlock;
import io.sparkprov.capture.Wire.NodeBlock;
import io.sparkprov.capture.Wire.Op;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.XXH64;

/**
 * The nodes and edges one chunk of a tap yields: ../shared/MODEL.md section 2, the same per kind
 * as capture_agent/taps.py's specs (SourceSpec, PlusSpec, ...), which name the kinds here.
 * {@code nodeCount} and {@code edgeCount} count every logical node and edge; of them, {@code
 * joinNodeCount} and {@code joinEdgeCount} are a join's rows that a member tap sends for the join
 * (its TIMES nodes and their edges: {@link Kind#JOIN_MEMBER}), counted under the join's key.
 */
record Emission(
    List<NodeBlock> nodes, long[] src, long[] dst, List<MemberBlock> members, long nodeCount,
    long edgeCount, long joinNodeCount, long joinEdgeCount) {

  enum Kind {
    SOURCE, PLUS, BLACK_BOX, BLACK_BOX_GROUP, JOIN, SEMI_JOIN, ANTI_JOIN, EXPLODE, MODULE_ROW,
    STATE, MEMBER, JOIN_MEMBER, WINDOW_ROW, GROUP;

    static Kind of(String name) {
      try {
        return valueOf(name.toUpperCase(java.util.Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("unknown tap kind " + name, e);
      }
    }
  }

  private static final long LOW_33_BITS = (1L << 33) - 1;
  /** A member tap's pairs: every how many rows their ids are checked to be the pairs' hash. */
  static final int PAIRS_CHECKED_EVERY = 64;

  static Emission of(TapPlan plan, Chunk chunk) {
    Builder b = new Builder(plan, chunk);
    switch (Kind.of(plan.kind())) {
      case SOURCE -> b.source();
      case PLUS -> b.rowWithParent(Op.PLUS, "+");
      case BLACK_BOX -> b.rowWithParent(Op.BLACK_BOX, plan.label());
      case BLACK_BOX_GROUP -> b.blackBoxGroup();
      case JOIN -> b.join();
      case SEMI_JOIN -> b.semiJoin();
      case ANTI_JOIN -> b.antiJoin();
      case EXPLODE -> b.explode();
      case MODULE_ROW -> b.moduleRow();
      case STATE -> b.state();
      case MEMBER -> b.member();
      case JOIN_MEMBER -> b.joinMember();
      case WINDOW_ROW -> b.windowRow();
      case GROUP -> b.group();
      default -> throw new IllegalStateException("unhandled tap kind " + plan.kind());
    }
    return b.build();
  }

  /** splitmix64 of a parent id and a salt: sparkprov/derived.py's derive, one id at a time. */
  static long derive(long id, long salt) {
    long z = id + salt * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  static long[] derive(long[] ids, long salt) {
    long[] out = new long[ids.length];
    for (int i = 0; i < ids.length; i++) {
      out[i] = derive(ids[i], salt);
    }
    return out;
  }

  private static final class Builder {
    private final TapPlan plan;
    private final Chunk chunk;
    private final int n;
    private final List<NodeBlock> nodes = new ArrayList<>();
    private final LongList src = new LongList();
    private final LongList dst = new LongList();
    private final List<MemberBlock> members = new ArrayList<>();
    private boolean edges;
    private long nodeCount;
    private long edgeCount;
    private long joinNodeCount;
    private long joinEdgeCount;
    // The id columns and null masks read so far, by input name: each copied out of the chunk
    // once per emission (a join's sides are read for its pairs, its self pairs and its edges).
    private final java.util.Map<String, long[]> rawIds = new java.util.HashMap<>(4);
    private final java.util.Map<String, boolean[]> nullMasks = new java.util.HashMap<>(4);

    Builder(TapPlan plan, Chunk chunk) {
      this.plan = plan;
      this.chunk = chunk;
      this.n = chunk.size();
    }

    Emission build() {
      return new Emission(
          nodes, edges ? src.toArray() : null, edges ? dst.toArray() : null, members, nodeCount,
          edgeCount, joinNodeCount, joinEdgeCount);
    }

    /** Id column {@code name}, 0 where null (Chunk#rawIds); callers only read it. */
    private long[] rawIds(String name) {
      return rawIds.computeIfAbsent(name, chunk::rawIds);
    }

    private boolean[] nullMask(String name) {
      return nullMasks.computeIfAbsent(name, chunk::nullMask);
    }

    private void node(NodeBlock block) {
      labelOfPlan(block.label());
      if (block.labels() != null) {
        Texts.truncateAll(block.labels(), plan.maxTextBytes());
      }
      if (block.values() != null) {
        Texts.truncateAll(block.values(), plan.maxTextBytes());
      }
      for (ValueColumn column : block.attributeValues()) {
        column.truncated(plan.maxTextBytes());
      }
      nodes.add(block);
      nodeCount += block.shared() ? 0 : block.count();
    }

    /** A block's one label comes from the plan (an op's sign, a function's name), never from
     * data: one over the limit is refused, as sparkprov.limits does before Python sends. Texts
     * from data are truncated instead ({@link Texts}). */
    private void labelOfPlan(String label) {
      int limit = plan.maxTextBytes();
      if (label != null && label.length() * 3 > limit
          && label.getBytes(StandardCharsets.UTF_8).length > limit) {
        throw Failures.limit("label of tap " + plan.key() + " holds a value of "
            + label.getBytes(StandardCharsets.UTF_8).length + " bytes, over the limit of "
            + limit);
      }
    }

    private void edge(long[] from, long[] to) {
      edges = true;
      src.addAll(from);
      dst.addAll(to);
      edgeCount += from.length;
    }

    private List<ValueColumn> attributeColumns() {
      List<ValueColumn> attributes = new ArrayList<>();
      for (int i = 0; i < plan.attributes().size(); i++) {
        attributes.add(chunk.attribute(i));
      }
      return attributes;
    }

    private NodeBlock rowNodes(Op op, String label, long[] ids, String[] labels) {
      return new NodeBlock(op, ids, label, labels, plan.relation(), plan.attributes(),
          attributeColumns(), null, false);
    }

    /** The seed of this tap's node ids: xxhash64 of the run and the key (NodeIds). */
    private long seed() {
      return NodeIds.seed(plan.runId(), plan.key());
    }

    /** The mask of the source whose TOKEN ids join side {@code side} holds (its seed), if the
     * plan names one. */
    private java.util.OptionalLong mask(int side) {
      List<String> origins = plan.origins();
      if (origins == null || origins.size() <= side || origins.get(side).isEmpty()) {
        return java.util.OptionalLong.empty();
      }
      return java.util.OptionalLong.of(NodeIds.seed(plan.runId(), origins.get(side)));
    }

    /** A join side as it travels: as positions (id XOR mask; a null row repeats the position
     * before it) where a mask is known, else as ids (0 where null). */
    private Wire.Side side(long[] ids, boolean[] nulls, java.util.OptionalLong mask) {
      int[] nullRows = rowsOf(nulls, ids.length);
      if (mask.isEmpty()) {
        return new Wire.Side(ids, 0L, null, nullRows);
      }
      long m = mask.getAsLong();
      long[] positions = chunk.scratchLongs(ids.length);
      long previous = 0;
      for (int r = 0; r < ids.length; r++) {
        positions[r] = nulls[r] ? previous : ids[r] ^ m;
        previous = positions[r];
      }
      return new Wire.Side(null, m, positions, nullRows);
    }

    /** Whether every id is Spark's xxhash64 of its row's inputs with {@code seed}, a null input
     * skipped (so that the reader may derive them); if not, the ids travel as they are. */
    private static boolean derivable(long seed, long[] ids, long[][] inputs, boolean[][] nulls) {
      return derivable(seed, ids, inputs, nulls, 1);
    }

    /** As {@link #derivable(long, long[], long[][], boolean[][])}, over every {@code stride}-th
     * row and the last one. */
    private static boolean derivable(long seed, long[] ids, long[][] inputs, boolean[][] nulls,
        int stride) {
      int last = ids.length - 1;
      for (int r = 0; r <= last; r = r < last && r + stride > last ? last : r + stride) {
        long h = seed;
        for (int k = 0; k < inputs.length; k++) {
          if (nulls[k] == null || !nulls[k][r]) {
            h = XXH64.hashLong(inputs[k][r], h);
          }
        }
        if (h != ids[r]) {
          return false;
        }
      }
      return true;
    }

    private static int[] rowsOf(boolean[] mask, int n) {
      int count = 0;
      for (int r = 0; r < n; r++) {
        count += mask[r] ? 1 : 0;
      }
      int[] rows = new int[count];
      for (int r = 0, k = 0; r < n; r++) {
        if (mask[r]) {
          rows[k++] = r;
        }
      }
      return rows;
    }

    void source() {
      long[] ids = chunk.ids("id");
      long[] rowno = chunk.ids("rowno");
      long seed = seed();
      boolean derivable = true;
      for (int r = 0; r < n; r++) {
        derivable &= rowno[r] >= 0 && ids[r] == (rowno[r] ^ seed);
      }
      if (derivable) {
        // Positions only: the reader derives ids and labels (lineage.proto's DerivedIds).
        node(new NodeBlock(Op.TOKEN, null, "", null, plan.relation(), plan.attributes(),
            attributeColumns(), null, false, Wire.Derived.positions(seed, rowno)));
        return;
      }
      String[] labels = new String[n];
      String prefix = plan.relation() + "#";
      for (int r = 0; r < n; r++) {
        // monotonically_increasing_id packs the partition into the upper 31 bits.
        labels[r] = prefix + (rowno[r] >> 33) + "." + (rowno[r] & LOW_33_BITS);
      }
      node(rowNodes(Op.TOKEN, "", ids, labels));
    }

    void rowWithParent(Op op, String label) {
      long[] ids = chunk.ids("id");
      long[] parents = chunk.ids("parent");
      long seed = seed();
      if (derivable(seed, ids, new long[][] {parents}, new boolean[1][])) {
        // The parents only: the reader derives the ids and the edges parent -> row.
        Wire.Side side = side(parents, new boolean[n], mask(0));
        node(new NodeBlock(op, null, label, null, plan.relation(), plan.attributes(),
            attributeColumns(), null, false, Wire.Derived.parents(seed, side)));
        edgeCount += n;
        return;
      }
      node(rowNodes(op, label, ids, null));
      edge(chunk.ids("parent"), ids);
    }

    void blackBoxGroup() {
      long[] ids = chunk.ids("id");
      long[][] groups = chunk.arrays("members");
      node(rowNodes(Op.BLACK_BOX, plan.label(), ids, null));
      LongList from = new LongList();
      LongList to = new LongList();
      for (int r = 0; r < n; r++) {
        for (long m : groups[r]) {
          from.add(m);
          to.add(ids[r]);
        }
      }
      edge(from.toArray(), to.toArray());
    }

    void join() {
      long[] ids = chunk.ids("id");
      times(ids, pairs(ids, seed()));
    }

    /** A join's rows: TIMES nodes {@code ids} and their edges from the rows joined, as the pairs
     * ({@code pairs}) they derive from where they do. */
    private void times(long[] ids, Wire.Derived pairs) {
      if (pairs != null) {
        // The pairs only: the reader derives the ids and both edges of every row.
        node(new NodeBlock(Op.TIMES, null, "·", null, plan.relation(), plan.attributes(),
            attributeColumns(), null, false, pairs));
        // A row joined with itself (the same files read on both sides) derives its edge twice:
        // the reader stores it once, and so it is counted.
        long self = 0;
        for (boolean s : selfPairs()) {
          self += s ? 1 : 0;
        }
        edgeCount += 2L * n - pairs.left().nullRows().length - pairs.right().nullRows().length
            - self;
        return;
      }
      node(rowNodes(Op.TIMES, "·", ids, null));
      LongList from = new LongList();
      LongList to = new LongList();
      boolean[] self = selfPairs();
      for (String side : new String[] {"left", "right"}) {
        long[] column = rawIds(side);
        boolean[] missing = nullMask(side);
        for (int r = 0; r < n; r++) {
          if (!missing[r] && !(self[r] && side.equals("right"))) {
            from.add(column[r]);
            to.add(ids[r]);
          }
        }
      }
      edge(from.toArray(), to.toArray());
    }

    /** The rows whose left and right rows are one node (both present): their TIMES node has one
     * edge from it, not two. */
    private boolean[] selfPairs() {
      long[] left = rawIds("left");
      long[] right = rawIds("right");
      boolean[] leftMissing = nullMask("left");
      boolean[] rightMissing = nullMask("right");
      boolean[] self = chunk.scratchFlags(n);
      for (int r = 0; r < n; r++) {
        self[r] = !leftMissing[r] && !rightMissing[r] && left[r] == right[r];
      }
      return self;
    }

    void semiJoin() {
      long[] ids = chunk.ids("id");
      long[] left = chunk.ids("left");
      long[][] matches = chunk.arrays("witnesses");
      long salt = plan.salts().get(0);
      for (int r = 0; r < n; r++) {
        if (matches[r].length == 0) {
          throw new IllegalStateException("a semi join kept a row without a matching right row");
        }
      }
      long seed = seed();
      if (derivable(seed, ids, new long[][] {left}, new boolean[1][])) {
        semiJoinMatched(seed, left, matches, salt);
        return;
      }
      node(rowNodes(Op.TIMES, "·", ids, null));
      LongList sums = new LongList();
      LongList from = new LongList();
      LongList to = new LongList();
      from.addAll(left);
      to.addAll(ids);
      for (int r = 0; r < n; r++) {
        if (matches[r].length == 1 && matches[r][0] != left[r]) { // a row matching itself: one edge
          from.add(matches[r][0]);
          to.add(ids[r]);
        }
      }
      LongList sumTo = new LongList();
      LongList matchFrom = new LongList();
      LongList matchTo = new LongList();
      for (int r = 0; r < n; r++) {
        if (matches[r].length > 1) {
          long sum = derive(ids[r], salt);
          sums.add(sum);
          sumTo.add(ids[r]);
          for (long m : matches[r]) {
            matchFrom.add(m);
            matchTo.add(sum);
          }
        }
      }
      // Edge order as taps.py's SemiJoinSpec: left, single matches, sums, matches of the sums.
      from.addAll(sums.toArray());
      to.addAll(sumTo.toArray());
      from.addAll(matchFrom.toArray());
      to.addAll(matchTo.toArray());
      if (sums.size() > 0) {
        node(new NodeBlock(Op.PLUS, sums.toArray(), "+", null, "", List.of(), List.of(), null,
            false));
      }
      edge(from.toArray(), to.toArray());
    }

    /**
     * A semi join's rows as their left rows and matches (DerivedIds "with matches"): the reader
     * derives the TIMES ids, the PLUS nodes of the rows with more than one match and every
     * edge, in the order {@link #semiJoin} sends them.
     */
    private void semiJoinMatched(long seed, long[] left, long[][] matches, long salt) {
      int[] counts = new int[n];
      int total = 0;
      for (int r = 0; r < n; r++) {
        counts[r] = matches[r].length;
        total += counts[r];
      }
      long[] flat = new long[total];
      long plus = 0;
      long edgesOut = n;
      for (int r = 0, k = 0; r < n; r++) {
        System.arraycopy(matches[r], 0, flat, k, counts[r]);
        k += counts[r];
        if (counts[r] > 1) {
          plus++;
          edgesOut += 1 + counts[r]; // PLUS -> the row, every match -> PLUS
        } else if (matches[r][0] != left[r]) {
          edgesOut++; // a row matching itself has its one edge already
        }
      }
      Wire.Matches matched = new Wire.Matches(counts, side(flat, new boolean[total], mask(1)),
          salt);
      node(new NodeBlock(Op.TIMES, null, "·", null, plan.relation(), plan.attributes(),
          attributeColumns(), null, false,
          Wire.Derived.matched(seed, side(left, new boolean[n], mask(0)), matched)));
      nodeCount += plus;
      edgeCount += edgesOut;
    }

    /** taps.py's AntiJoinSpec: an EXCLUDED node per left row with a match, fed by the left row
     * and the match, its value the match's id; nothing for a kept row (no match). */
    void antiJoin() {
      long[] ids = chunk.ids("id");
      long[] left = chunk.ids("left");
      long[] right = rawIds("right");
      boolean[] missing = nullMask("right");
      long seed = seed();
      if (derivable(seed, ids, new long[][] {left}, new boolean[1][])) {
        antiJoinMatched(seed, left, right, missing);
        return;
      }
      LongList excluded = new LongList();
      LongList from = new LongList();
      LongList matches = new LongList();
      List<String> texts = new ArrayList<>();
      LongList matchedIds = new LongList();
      for (int r = 0; r < n; r++) {
        if (!missing[r]) {
          excluded.add(ids[r]);
          from.add(left[r]);
          texts.add(Long.toString(right[r]));
          if (right[r] != left[r]) { // a row excluded by itself: one edge from it
            matches.add(right[r]);
            matchedIds.add(ids[r]);
          }
        }
      }
      long[] excludedIds = excluded.toArray();
      node(new NodeBlock(Op.EXCLUDED, excludedIds, "▷", null, "", List.of(), List.of(),
          texts.toArray(new String[0]), false));
      // Edge order as taps.py's AntiJoinSpec: the left rows, then the matches.
      from.addAll(matches.toArray());
      LongList to = new LongList();
      to.addAll(excludedIds);
      to.addAll(matchedIds.toArray());
      edge(from.toArray(), to.toArray());
    }

    /** An anti join's excluded rows as their left rows and matches (DerivedIds "with
     * matches"): the reader derives the EXCLUDED ids, their values and edges. */
    private void antiJoinMatched(long seed, long[] left, long[] right, boolean[] missing) {
      int excluded = 0;
      for (int r = 0; r < n; r++) {
        excluded += missing[r] ? 0 : 1;
      }
      if (excluded == 0) {
        return;
      }
      long[] parents = new long[excluded];
      long[] matches = new long[excluded];
      long edgesOut = excluded;
      for (int r = 0, k = 0; r < n; r++) {
        if (!missing[r]) {
          parents[k] = left[r];
          matches[k++] = right[r];
          edgesOut += right[r] != left[r] ? 1 : 0; // a row excluded by itself: one edge
        }
      }
      Wire.Matches matched = new Wire.Matches(null,
          side(matches, new boolean[excluded], mask(1)), 0L);
      node(new NodeBlock(Op.EXCLUDED, null, "▷", null, "", List.of(), List.of(), null, false,
          Wire.Derived.matched(seed, side(parents, new boolean[excluded], mask(0)), matched)));
      edgeCount += edgesOut;
    }

    void explode() {
      long[] ids = chunk.ids("id");
      long[] elementIds = chunk.ids("element_id");
      String[] element = chunk.texts("element");
      node(rowNodes(Op.TIMES, "·", ids, null));
      LongList present = new LongList();
      LongList presentRows = new LongList();
      List<String> texts = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        if (element[r] != null) {
          present.add(elementIds[r]);
          presentRows.add(ids[r]);
          texts.add(element[r]);
        }
      }
      String[] labels = texts.toArray(new String[0]);
      node(new NodeBlock(Op.VALUE, present.toArray(), "", labels, "", List.of(), List.of(),
          labels, false));
      LongList from = new LongList();
      from.addAll(chunk.ids("parent"));
      from.addAll(present.toArray());
      LongList to = new LongList();
      to.addAll(ids);
      to.addAll(presentRows.toArray());
      edge(from.toArray(), to.toArray());
    }

    void moduleRow() {
      long[] ids = chunk.ids("id");
      node(rowNodes(Op.TIMES, "·", ids, null));
      timesOfModule(chunk.ids("parent"), ids);
    }

    /** The edges of TIMES nodes {@code ids} of a row and the module invocation: parent -> id,
     * then module -> id. */
    private void timesOfModule(long[] parents, long[] ids) {
      long[] module = new long[n];
      Arrays.fill(module, plan.module());
      LongList from = new LongList();
      from.addAll(parents);
      from.addAll(module);
      LongList to = new LongList();
      to.addAll(ids);
      to.addAll(ids);
      edge(from.toArray(), to.toArray());
    }

    void state() {
      long[] tokens = chunk.ids("token");
      String[] labels = new String[n];
      for (int r = 0; r < n; r++) {
        labels[r] = plan.relation() + "#" + String.format("%08x", tokens[r] & 0xFFFFFFFFL);
      }
      node(new NodeBlock(Op.TOKEN, tokens, "", labels, plan.relation(), plan.attributes(),
          attributeColumns(), null, true));
      long[] ids = chunk.ids("id");
      node(new NodeBlock(Op.TIMES, ids, "·", null, "", List.of(), List.of(), null, false));
      timesOfModule(tokens, ids);
    }

    /** How a member tap's ids travel: as the pairs of the join whose rows they are, as the
     * positions of the source whose rows they are, or (null) as they are. */
    private Wire.Derived memberIds(long[] ids) {
      if (!plan.pairKey().isEmpty()) {
        return pairs(ids, NodeIds.seed(plan.runId(), plan.pairKey()));
      }
      java.util.OptionalLong mask = mask(0);
      if (mask.isEmpty()) {
        return null;
      }
      long m = mask.getAsLong();
      long[] positions = chunk.scratchLongs(n);
      for (int r = 0; r < n; r++) {
        positions[r] = ids[r] ^ m;
        if (positions[r] < 0) {
          return null;
        }
      }
      return Wire.Derived.positions(m, positions);
    }

    /** The rows' ids as the pairs of inputs "left" and "right" they hash (seeded with
     * {@code seed}), each side as positions where the plan names its source; null if some id
     * is not that hash or a row has neither side. */
    private Wire.Derived pairs(long[] ids, long seed) {
      // Fresh arrays of the chunk's rows (Chunk gathers each), 0 where null.
      long[] left = rawIds("left");
      long[] right = rawIds("right");
      boolean[] leftNull = nullMask("left");
      boolean[] rightNull = nullMask("right");
      for (int r = 0; r < n; r++) {
        if (leftNull[r] && rightNull[r]) {
          return null;
        }
      }
      // The pairs' ids are their hash by the plan's making (Aggregation's members of a join,
      // frame.py's join: one expression over every row), so a sample of the rows checks them:
      // two XXH64 per joined row less.
      if (!derivable(seed, ids, new long[][] {left, right},
          new boolean[][] {leftNull, rightNull}, PAIRS_CHECKED_EVERY)) {
        return null;
      }
      return Wire.Derived.pairs(seed, side(left, leftNull, mask(0)),
          side(right, rightNull, mask(1)));
    }

    void member() {
      long[] ids = chunk.ids("id");
      member(ids, memberIds(ids));
    }

    /**
     * Members that are the rows of a join no other operator reads ({@link Aggregation}): the
     * join has no capture point of its own, so its TIMES nodes and their edges travel here, from
     * the pairs the members travel as. The same nodes and edges as the join's capture point and
     * a member tap send; one row written, copied and encoded once instead of twice.
     */
    void joinMember() {
      long[] ids = chunk.ids("id");
      Wire.Derived pairs = memberIds(ids);
      boolean folded = foldable(pairs);
      if (folded) {
        // The member block alone (MemberBlock.join_rows): the reader makes each member's TIMES
        // node and its edges from the pairs the members travel as; counted as the join's block.
        long self = 0;
        for (boolean s : selfPairs()) {
          self += s ? 1 : 0;
        }
        nodeCount += n;
        edgeCount += 2L * n - self;
      } else {
        times(ids, pairs);
      }
      // The join's part, counted under the join's key (Tap): another job of the run that gives
      // the join its own capture point counts the same rows under that key, once.
      joinNodeCount = nodeCount;
      joinEdgeCount = edgeCount;
      member(ids, pairs, folded);
    }

    /** Whether the members' TIMES nodes can travel as the member block's join rows: pairs with
     * both sides, and nothing the pairs do not say (no relation, no values). */
    private boolean foldable(Wire.Derived pairs) {
      return pairs != null
          && pairs.left() != null
          && pairs.right() != null
          && pairs.left().nullRows().length == 0
          && pairs.right().nullRows().length == 0
          && (plan.relation() == null || plan.relation().isEmpty())
          && plan.attributes().isEmpty();
    }

    private void member(long[] ids, Wire.Derived derived) {
      member(ids, derived, false);
    }

    private void member(long[] ids, Wire.Derived derived, boolean joinRows) {
      long[] groups = chunk.ids("group");
      List<ValueColumn> values = new ArrayList<>();
      for (int k = 0; k < plan.valueInputs(); k++) {
        values.add(chunk.values("x" + k).truncated(plan.maxTextBytes()));
      }
      long present = 0;
      int[] valueOf = new int[plan.aggregates()];
      for (int i = 0; i < valueOf.length; i++) {
        valueOf[i] = plan.valueInput(i);
        present += values.get(valueOf[i]).present();
      }
      members.add(new MemberBlock(derived == null ? ids : null, groups, plan.groupKey(),
          plan.delta(), values, derived, joinRows,
          plan.valueOf().isEmpty() ? null : valueOf));
      // The reader stores the expansion: count it (sparkprov.derived.MemberColumns' counts).
      nodeCount += 2 * present;
      edgeCount += (plan.delta() ? n : 0) + 3 * present;
    }

    void windowRow() {
      long[] ids = chunk.ids("id");
      long[] groups = chunk.ids("group");
      boolean[] first = chunk.flags("first");
      node(rowNodes(Op.TIMES, "·", ids, null));
      LongList from = new LongList();
      from.addAll(chunk.ids("parent"));
      LongList to = new LongList();
      to.addAll(ids);
      for (int i = 0; i < plan.functions().size(); i++) {
        long[] aggregates = derive(groups, plan.salts().get(i));
        String[] texts = chunk.texts("x" + i);
        LongList firstIds = new LongList();
        List<String> firstTexts = new ArrayList<>();
        for (int r = 0; r < n; r++) {
          if (first[r]) {
            firstIds.add(aggregates[r]);
            firstTexts.add(texts[r] == null ? "null" : texts[r]);
          }
        }
        node(new NodeBlock(Op.AGGREGATE, firstIds.toArray(), plan.functions().get(i), null, "",
            List.of(), List.of(), firstTexts.toArray(new String[0]), false));
        from.addAll(aggregates);
        to.addAll(ids);
      }
      edge(from.toArray(), to.toArray());
    }

    void group() {
      long[] groups = chunk.ids("id");
      node(rowNodes(Op.DELTA, "δ", groups, null));
      LongList from = new LongList();
      LongList to = new LongList();
      for (int i = 0; i < plan.functions().size(); i++) {
        long[] aggregates = derive(groups, plan.salts().get(i));
        String[] texts = chunk.texts("x" + i);
        for (int r = 0; r < n; r++) {
          texts[r] = texts[r] == null ? "null" : texts[r];
        }
        node(new NodeBlock(Op.AGGREGATE, aggregates, plan.functions().get(i), null, "",
            List.of(), List.of(), texts, false));
        from.addAll(aggregates);
        to.addAll(groups);
      }
      edge(from.toArray(), to.toArray());
    }
  }

  /** A growable long array. */
  static final class LongList {
    private long[] values = new long[16];
    private int size;

    void add(long v) {
      if (size == values.length) {
        values = Arrays.copyOf(values, size * 2);
      }
      values[size++] = v;
    }

    void addAll(long[] more) {
      if (size + more.length > values.length) {
        values = Arrays.copyOf(values, Math.max(size * 2, size + more.length));
      }
      System.arraycopy(more, 0, values, size, more.length);
      size += more.length;
    }

    int size() {
      return size;
    }

    void clear() {
      size = 0;
    }

    long[] toArray() {
      return Arrays.copyOf(values, size);
    }
  }
}
