package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

class EmissionTest {
  private static TapPlan plan(String kind, List<String> inputs, List<String> types,
      List<String> attributes, List<Long> salts) {
    return plan(kind, inputs, types, attributes, salts, List.of());
  }

  private static TapPlan plan(String kind, List<String> inputs, List<String> types,
      List<String> attributes, List<Long> salts, List<String> origins) {
    return new TapPlan(kind, "k#1", "run", "wf", "R", attributes, inputs, types, List.of("main"),
        "", 0, List.of(), "", false, 0, salts, origins, "", 4, 16, false);
  }

  /** An id array column as the codegen tap sees it: Spark's internal array. */
  private static Object seq(Long... ids) {
    return new GenericArrayData((Object[]) ids);
  }

  /** A tap struct's row in Spark's internal types (texts as UTF8String). */
  private static InternalRow row(Object... values) {
    Object[] internal = new Object[values.length];
    for (int i = 0; i < values.length; i++) {
      internal[i] = values[i] instanceof String text ? UTF8String.fromString(text) : values[i];
    }
    return new GenericInternalRow(internal);
  }

  @Test
  void deriveIsTheSharedVectors() throws Exception {
    // derived-ids.json: the vectors of sparkprov/derived.py, which the plugin and the Python
    // suite check too. The salts come computed in the TapPlan; the jar only derives.
    JsonNode cases;
    try (InputStream in = EmissionTest.class.getResourceAsStream("/derived-ids.json")) {
      cases = new ObjectMapper().readTree(in).get("derive");
    }
    assertTrue(cases.size() > 0);
    for (JsonNode c : cases) {
      long id = c.get("id").longValue();
      long salt = c.get("salt").longValue();
      assertEquals(c.get("derived").longValue(), Emission.derive(id, salt), c.toString());
      assertArrayEquals(new long[] {c.get("derived").longValue(), Emission.derive(id + 1, salt)},
          Emission.derive(new long[] {id, id + 1}, salt), c.toString());
    }
  }

  @Test
  void anOuterJoinRowHasAnEdgeFromEachSideItHas() {
    TapPlan join = plan("join", List.of("id", "left", "right"), List.of("id", "id", "id"),
        List.of("name"), List.of());
    Chunk chunk = new Chunk(join);
    chunk.add(row(10L, 1L, 2L, "a"));
    chunk.add(row(11L, 3L, null, null));
    Emission e = Emission.of(join, chunk);
    assertArrayEquals(new long[] {1, 3, 2}, e.src());
    assertArrayEquals(new long[] {10, 11, 10}, e.dst());
    assertEquals(2, e.nodeCount());
    assertEquals(3, e.edgeCount());
    assertEquals(Wire.Op.TIMES, e.nodes().get(0).op());
    assertArrayEquals(new byte[][] {"a".getBytes(java.nio.charset.StandardCharsets.UTF_8), null},
        e.nodes().get(0).attributeValues().get(0).texts());
  }

  /** Spark's xxhash64 of {@code inputs} (nulls skipped) with the tap's seed: its node id. */
  private static long sparkId(TapPlan plan, Long... inputs) {
    long h = NodeIds.seed(plan.runId(), plan.key());
    for (Long input : inputs) {
      h = input == null ? h : XXH64.hashLong(input, h);
    }
    return h;
  }

  @Test
  void joinRowsWhoseIdsAreTheirPairsHashSendOnlyThePairs() {
    TapPlan join = plan("join", List.of("id", "left", "right"), List.of("id", "id", "id"),
        List.of(), List.of());
    Chunk chunk = new Chunk(join);
    chunk.add(row(sparkId(join, 1L, 2L), 1L, 2L));
    chunk.add(row(sparkId(join, 3L, null), 3L, null));
    chunk.add(row(sparkId(join, null, 4L), null, 4L));
    Emission e = Emission.of(join, chunk);
    assertEquals(null, e.src()); // the edges are implied by the pairs
    Wire.NodeBlock times = e.nodes().get(0);
    assertEquals(null, times.ids());
    Wire.Derived d = times.derived();
    assertEquals(NodeIds.seed("run", "k#1"), d.seed());
    assertArrayEquals(new long[] {1, 3, 0}, d.left().ids());
    assertArrayEquals(new long[] {2, 0, 4}, d.right().ids());
    assertArrayEquals(new int[] {2}, d.left().nullRows());
    assertArrayEquals(new int[] {1}, d.right().nullRows());
    assertEquals(3, e.nodeCount());
    assertEquals(4, e.edgeCount());
  }

  @Test
  void aRowJoinedWithItselfHasOneEdgeFromIt() {
    // The same files read on both sides of a join are one source: a row that matches itself is
    // both sides of its TIMES node, which a reader stores with one edge from it, and counts so.
    TapPlan join = plan("join", List.of("id", "left", "right"), List.of("id", "id", "id"),
        List.of(), List.of());
    Chunk derived = new Chunk(join);
    derived.add(row(sparkId(join, 1L, 1L), 1L, 1L));
    derived.add(row(sparkId(join, 1L, 2L), 1L, 2L));
    Emission pairs = Emission.of(join, derived);
    assertEquals(null, pairs.src()); // still the pairs only: the reader derives both edges
    assertEquals(3, pairs.edgeCount());
    Chunk explicit = new Chunk(join); // ids that are not their pairs' hash: edges sent
    explicit.add(row(10L, 1L, 1L));
    explicit.add(row(11L, 1L, 2L));
    Emission e = Emission.of(join, explicit);
    assertArrayEquals(new long[] {1, 1, 2}, e.src());
    assertArrayEquals(new long[] {10, 11, 11}, e.dst());
    assertEquals(3, e.edgeCount());
  }

  @Test
  void aJoinSideOfSourceTokensTravelsAsPositions() {
    TapPlan join = plan("join", List.of("id", "left", "right"), List.of("id", "id", "id"),
        List.of(), List.of(), List.of("source:A#0", ""));
    long mask = NodeIds.seed("run", "source:A#0");
    Chunk chunk = new Chunk(join);
    chunk.add(row(sparkId(join, 5L ^ mask, 2L), 5L ^ mask, 2L));
    chunk.add(row(sparkId(join, null, 4L), null, 4L));
    chunk.add(row(sparkId(join, 9L ^ mask, 7L), 9L ^ mask, 7L));
    Wire.Derived d = Emission.of(join, chunk).nodes().get(0).derived();
    assertEquals(mask, d.left().mask());
    assertArrayEquals(new long[] {5, 5, 9}, d.left().positions()); // the null row repeats 5
    assertEquals(null, d.left().ids());
    assertArrayEquals(new long[] {2, 4, 7}, d.right().ids());
    assertEquals(null, d.right().positions());
  }

  @Test
  void sourceRowsWhoseIdsAreTheirPositionsMaskedSendOnlyThePositions() {
    TapPlan source = plan("source", List.of("id", "rowno"), List.of("id", "id"), List.of(),
        List.of());
    Chunk chunk = new Chunk(source);
    long second = (3L << 33) + 7;
    long seed = NodeIds.seed("run", "k#1");
    chunk.add(row(5L ^ seed, 5L));
    chunk.add(row(second ^ seed, second));
    Emission e = Emission.of(source, chunk);
    Wire.NodeBlock tokens = e.nodes().get(0);
    assertEquals(null, tokens.ids());
    assertEquals(null, tokens.labels());
    assertArrayEquals(new long[] {5, second}, tokens.derived().positions());
    assertEquals(2, e.nodeCount());

    Chunk other = new Chunk(source); // one id that is not the hash: all ids travel
    other.add(row(5L ^ seed, 5L));
    other.add(row(99L, 6L));
    Wire.NodeBlock sent = Emission.of(source, other).nodes().get(0);
    assertEquals(null, sent.derived());
    assertArrayEquals(new long[] {5L ^ seed, 99L}, sent.ids());
    assertArrayEquals(new String[] {"R#0.5", "R#0.6"}, sent.labels());
  }

  @Test
  void membersOfAJoinsRowsTravelAsItsPairsAndOfASourcesRowsAsPositions() {
    TapPlan overJoin = new TapPlan("member", "g#1:members", "run", "wf", "", List.of(),
        List.of("id", "group", "left", "right"), List.of("id", "id", "id", "id"),
        List.of("main"), "", 0, List.of(), "g#1", true, 0, List.of(), List.of("source:A#0", ""),
        "join#2", 4, 16, false);
    long joinSeed = NodeIds.seed("run", "join#2");
    long mask = NodeIds.seed("run", "source:A#0");
    long id = XXH64.hashLong(3L, XXH64.hashLong(7L ^ mask, joinSeed));
    Chunk chunk = new Chunk(overJoin);
    chunk.add(row(id, 99L, 7L ^ mask, 3L));
    Wire.MemberBlock m = Emission.of(overJoin, chunk).members().get(0);
    assertEquals(null, m.members());
    assertArrayEquals(new long[] {7}, m.derived().left().positions());
    assertArrayEquals(new long[] {3}, m.derived().right().ids());
    assertEquals(joinSeed, m.derived().seed());

    Chunk notTheJoins = new Chunk(overJoin); // an id that is not the pair's hash: ids travel
    notTheJoins.add(row(id + 1, 99L, 7L ^ mask, 3L));
    assertArrayEquals(new long[] {id + 1},
        Emission.of(overJoin, notTheJoins).members().get(0).members());

    // The pairs' ids are checked at every PAIRS_CHECKED_EVERY-th row and the last: one of
    // them that is not its pair's hash sends the ids.
    int rows = 3 * Emission.PAIRS_CHECKED_EVERY + 5;
    TapPlan overJoinOfMany = new TapPlan("member", "g#1:members", "run", "wf", "", List.of(),
        List.of("id", "group", "left", "right"), List.of("id", "id", "id", "id"),
        List.of("main"), "", 0, List.of(), "g#1", true, 0, List.of(), List.of("source:A#0", ""),
        "join#2", rows, 16, false);
    for (int wrong : new int[] {Emission.PAIRS_CHECKED_EVERY * 2, rows - 1, -1}) {
      Chunk many = new Chunk(overJoinOfMany);
      long[] ids = new long[rows];
      for (int r = 0; r < rows; r++) {
        ids[r] = XXH64.hashLong(r, XXH64.hashLong((7L + r) ^ mask, joinSeed)) + (r == wrong ? 1 : 0);
        many.add(row(ids[r], 99L, (7L + r) ^ mask, (long) r));
      }
      Wire.MemberBlock block = Emission.of(overJoinOfMany, many).members().get(0);
      if (wrong < 0) {
        assertEquals(null, block.members());
        assertEquals(rows, block.derived().left().positions().length);
      } else {
        assertArrayEquals(ids, block.members(), "a wrong id at row " + wrong);
        assertEquals(null, block.derived());
      }
    }

    TapPlan overSource = new TapPlan("member", "g#1:members", "run", "wf", "", List.of(),
        List.of("id", "group"), List.of("id", "id"), List.of("main"), "", 0, List.of(), "g#1",
        true, 0, List.of(), List.of("source:A#0"), "", 4, 16, false);
    Chunk tokens = new Chunk(overSource);
    tokens.add(row(12L ^ mask, 99L));
    Wire.MemberBlock t = Emission.of(overSource, tokens).members().get(0);
    assertEquals(null, t.members());
    assertArrayEquals(new long[] {12}, t.derived().positions());
  }

  private static void assertSamePairs(Wire.Derived expected, Wire.Derived actual) {
    assertEquals(expected.seed(), actual.seed());
    for (Wire.Side[] sides : new Wire.Side[][] {
        {expected.left(), actual.left()}, {expected.right(), actual.right()}}) {
      assertArrayEquals(sides[0].ids(), sides[1].ids());
      assertArrayEquals(sides[0].positions(), sides[1].positions());
      assertEquals(sides[0].mask(), sides[1].mask());
      assertArrayEquals(sides[0].nullRows(), sides[1].nullRows());
    }
  }

  @Test
  void membersOfAJoinWithoutACapturePointOfItsOwnCarryItsTimesNodesAndEdges() {
    List<String> origins = List.of("source:A#0", "");
    TapPlan folded = new TapPlan("join_member", "g#1:members", "run", "wf", "", List.of(),
        List.of("id", "group", "left", "right"), List.of("id", "id", "id", "id"),
        List.of("main"), "", 0, List.of(), "g#1", true, 0, List.of(), origins, "join#2", 4, 16,
        false);
    TapPlan join = new TapPlan("join", "join#2", "run", "wf", "", List.of(),
        List.of("id", "left", "right"), List.of("id", "id", "id"), List.of("main"), "", 0,
        List.of(), "", false, 0, List.of(), origins, "", 4, 16, false);
    TapPlan member = new TapPlan("member", "g#1:members", "run", "wf", "", List.of(),
        List.of("id", "group", "left", "right"), List.of("id", "id", "id", "id"),
        List.of("main"), "", 0, List.of(), "g#1", true, 0, List.of(), origins, "join#2", 4, 16,
        false);
    long mask = NodeIds.seed("run", "source:A#0");
    Chunk rows = new Chunk(folded);
    Chunk joinRows = new Chunk(join);
    Chunk memberRows = new Chunk(member);
    long[][] pairs = {{7L ^ mask, 3L}, {8L ^ mask, 3L}, {9L ^ mask, 4L}};
    for (long[] pair : pairs) {
      long id = sparkId(join, pair[0], pair[1]);
      rows.add(row(id, 99L, pair[0], pair[1]));
      joinRows.add(row(id, pair[0], pair[1]));
      memberRows.add(row(id, 99L, pair[0], pair[1]));
    }
    Emission both = Emission.of(folded, rows);
    Emission apart = Emission.of(join, joinRows);
    Emission members = Emission.of(member, memberRows);
    // The member block alone: its pairs are the join's, and it says they are its TIMES rows.
    assertEquals(0, both.nodes().size());
    assertEquals(null, both.src()); // the edges are implied by the pairs
    assertEquals(1, both.members().size());
    Wire.MemberBlock block = both.members().get(0);
    assertTrue(block.joinRows());
    assertFalse(members.members().get(0).joinRows());
    assertSamePairs(apart.nodes().get(0).derived(), block.derived());
    assertSamePairs(members.members().get(0).derived(), block.derived());
    assertArrayEquals(members.members().get(0).groups(), block.groups());
    assertEquals(apart.nodeCount() + members.nodeCount(), both.nodeCount());
    assertEquals(apart.edgeCount() + members.edgeCount(), both.edgeCount());
    // The join's part is counted as the join's own capture point counts it (Tap reports it
    // under the join's key), the members alone are not.
    assertEquals(apart.nodeCount(), both.joinNodeCount());
    assertEquals(apart.edgeCount(), both.joinEdgeCount());
    assertEquals(0, apart.joinNodeCount());
    assertEquals(0, members.joinNodeCount());

    Chunk selfJoined = new Chunk(folded); // a row joined with itself: one edge, counted once
    long self = 7L ^ mask;
    selfJoined.add(row(sparkId(join, self, self), 99L, self, self));
    Chunk selfApart = new Chunk(join);
    selfApart.add(row(sparkId(join, self, self), self, self));
    assertEquals(Emission.of(join, selfApart).edgeCount() + 1,
        Emission.of(folded, selfJoined).edgeCount());

    Chunk notTheJoins = new Chunk(folded); // an id that is not the pair's hash: ids travel
    notTheJoins.add(row(5L, 99L, 7L ^ mask, 3L));
    Emission sent = Emission.of(folded, notTheJoins);
    assertFalse(sent.members().get(0).joinRows());
    assertArrayEquals(new long[] {5L}, sent.nodes().get(0).ids());
    assertArrayEquals(new long[] {7L ^ mask, 3L}, sent.src());
    assertArrayEquals(new long[] {5L, 5L}, sent.dst());
    assertArrayEquals(new long[] {5L}, sent.members().get(0).members());
    Chunk notTheJoinsApart = new Chunk(join); // sent apart, still counted as the join counts it
    notTheJoinsApart.add(row(5L, 7L ^ mask, 3L));
    assertEquals(Emission.of(join, notTheJoinsApart).nodeCount(), sent.joinNodeCount());
    assertEquals(Emission.of(join, notTheJoinsApart).edgeCount(), sent.joinEdgeCount());
  }

  @Test
  void aNamedRowsPlusTravelsAsItsParentAPositionWhereTheParentIsASourcesRow() {
    TapPlan plus = plan("plus", List.of("id", "parent"), List.of("id", "id"), List.of(),
        List.of(), List.of("source:A#0"));
    long mask = NodeIds.seed("run", "source:A#0");
    Chunk chunk = new Chunk(plus);
    chunk.add(row(sparkId(plus, 4L ^ mask), 4L ^ mask));
    chunk.add(row(sparkId(plus, 6L ^ mask), 6L ^ mask));
    Emission e = Emission.of(plus, chunk);
    Wire.NodeBlock block = e.nodes().get(0);
    assertEquals(Wire.Op.PLUS, block.op());
    assertEquals(null, block.ids());
    assertArrayEquals(new long[] {4, 6}, block.derived().parents().positions());
    assertEquals(null, e.src());
    assertEquals(2, e.nodeCount());
    assertEquals(2, e.edgeCount());
  }

  @Test
  void aSemiJoinRowWithSeveralMatchesGetsADerivedSum() {
    TapPlan semi = plan("semi_join", List.of("id", "left", "witnesses"),
        List.of("id", "id", "ids"), List.of(), List.of(7L));
    Chunk chunk = new Chunk(semi);
    chunk.add(row(10L, 1L, seq(5L)));
    chunk.add(row(11L, 2L, seq(6L, 8L)));
    Emission e = Emission.of(semi, chunk);
    long sum = Emission.derive(11L, 7L);
    assertArrayEquals(new long[] {1, 2, 5, sum, 6, 8}, e.src());
    assertArrayEquals(new long[] {10, 11, 10, 11, sum, sum}, e.dst());
    assertEquals(3, e.nodeCount()); // two TIMES rows and one PLUS
  }

  @Test
  void aSemiJoinRowWhoseOneMatchIsItselfHasOneEdgeFromIt() {
    TapPlan semi = plan("semi_join", List.of("id", "left", "witnesses"),
        List.of("id", "id", "ids"), List.of(), List.of(7L));
    Chunk chunk = new Chunk(semi);
    chunk.add(row(10L, 1L, seq(1L)));
    chunk.add(row(11L, 2L, seq(2L, 8L))); // itself among several: into the sum, a new edge
    Emission e = Emission.of(semi, chunk);
    long sum = Emission.derive(11L, 7L);
    assertArrayEquals(new long[] {1, 2, sum, 2, 8}, e.src());
    assertArrayEquals(new long[] {10, 11, 11, sum, sum}, e.dst());
    assertEquals(5, e.edgeCount());
  }

  @Test
  void anAntiJoinRowExcludedByItselfHasOneEdgeFromIt() {
    TapPlan anti = plan("anti_join", List.of("id", "left", "right"), List.of("id", "id", "id"),
        List.of(), List.of());
    Chunk chunk = new Chunk(anti);
    chunk.add(row(10L, 1L, 1L));
    chunk.add(row(11L, 2L, -5L));
    Emission e = Emission.of(anti, chunk);
    assertArrayEquals(new long[] {1, 2, -5}, e.src());
    assertArrayEquals(new long[] {10, 11, 11}, e.dst());
    assertEquals(3, e.edgeCount());
    assertArrayEquals(new String[] {"1", "-5"}, e.nodes().get(0).values()); // the match named
  }

  @Test
  void aSemiJoinWhoseIdsAreItsLeftRowsHashSendsOnlyLeftRowsAndMatches() {
    TapPlan semi = plan("semi_join", List.of("id", "left", "witnesses"),
        List.of("id", "id", "ids"), List.of(), List.of(7L), List.of("", "source:B#0"));
    long mask = NodeIds.seed("run", "source:B#0");
    Chunk chunk = new Chunk(semi);
    chunk.add(row(sparkId(semi, 1L), 1L, seq(5L ^ mask)));
    chunk.add(row(sparkId(semi, 2L), 2L, seq(6L ^ mask, 8L ^ mask)));
    chunk.add(row(sparkId(semi, 3L), 3L, seq(3L))); // a row matching itself: no edge of its own
    Emission e = Emission.of(semi, chunk);
    assertEquals(null, e.src()); // every edge is derived
    assertEquals(1, e.nodes().size()); // the PLUS node too
    Wire.Derived d = e.nodes().get(0).derived();
    assertArrayEquals(new long[] {1, 2, 3}, d.parents().ids());
    assertArrayEquals(new int[] {1, 2, 1}, d.matches().counts());
    assertEquals(mask, d.matches().side().mask());
    assertArrayEquals(new long[] {5, 6, 8, 3 ^ mask}, d.matches().side().positions());
    assertEquals(7L, d.matches().plusSalt());
    // As the explicit form counts them: 3 TIMES and a PLUS; 3 left edges, 5's, PLUS's, 6's, 8's.
    assertEquals(4, e.nodeCount());
    assertEquals(7, e.edgeCount());
  }

  @Test
  void anAntiJoinWhoseIdsAreItsLeftRowsHashSendsOnlyExcludedRowsAndMatches() {
    TapPlan anti = plan("anti_join", List.of("id", "left", "right"), List.of("id", "id", "id"),
        List.of(), List.of(), List.of("source:A#0", ""));
    long mask = NodeIds.seed("run", "source:A#0");
    Chunk chunk = new Chunk(anti);
    chunk.add(row(sparkId(anti, 4L ^ mask), 4L ^ mask, -5L));
    chunk.add(row(sparkId(anti, 9L ^ mask), 9L ^ mask, null)); // kept: nothing
    chunk.add(row(sparkId(anti, 2L), 2L, 2L)); // excluded by itself: one edge
    Emission e = Emission.of(anti, chunk);
    assertEquals(null, e.src());
    Wire.NodeBlock excluded = e.nodes().get(0);
    assertEquals(Wire.Op.EXCLUDED, excluded.op());
    assertEquals(null, excluded.values()); // the reader names each by its match
    Wire.Derived d = excluded.derived();
    assertArrayEquals(new long[] {4, 2 ^ mask}, d.parents().positions());
    assertEquals(null, d.matches().counts());
    assertArrayEquals(new long[] {-5, 2}, d.matches().side().ids());
    assertEquals(2, e.nodeCount());
    assertEquals(3, e.edgeCount());
  }

  @Test
  void anAntiJoinRecordsItsExcludedRowsWithTheirMatch() {
    TapPlan anti = plan("anti_join", List.of("id", "left", "right"), List.of("id", "id", "id"),
        List.of(), List.of());
    Chunk chunk = new Chunk(anti);
    chunk.add(row(10L, 1L, -5L)); // excluded by the right row -5
    chunk.add(row(11L, 2L, null)); // kept: nothing to emit
    Emission e = Emission.of(anti, chunk);
    assertArrayEquals(new long[] {1, -5}, e.src());
    assertArrayEquals(new long[] {10, 10}, e.dst());
    assertEquals(1, e.nodeCount());
    assertEquals(2, e.edgeCount());
    Wire.NodeBlock excluded = e.nodes().get(0);
    assertEquals(Wire.Op.EXCLUDED, excluded.op());
    assertArrayEquals(new long[] {10}, excluded.ids());
    assertArrayEquals(new String[] {"-5"}, excluded.values());
  }

  @Test
  void aNullWhereEveryRowNeedsAnIdIsRefused() {
    TapPlan plus = plan("plus", List.of("id", "parent"), List.of("id", "id"), List.of(),
        List.of());
    Chunk chunk = new Chunk(plus);
    chunk.add(row(10L, null));
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> Emission.of(plus, chunk));
    assertTrue(e.getMessage().contains("parent"), e.getMessage());
  }

  @Test
  void aValueOverTheLimitTravelsTruncatedAndMarked() {
    TapPlan source = new TapPlan("source", "k#1", "run", "wf", "R", List.of("name"),
        List.of("id", "rowno"), List.of("id", "id"), List.of("main"), "", 0, List.of(), "", false,
        0, List.of(), List.of(), "", 4, 40, false);
    Chunk chunk = new Chunk(source);
    chunk.add(row(10L, 0L, "x".repeat(100)));
    chunk.add(row(11L, 1L, "short"));
    Emission e = Emission.of(source, chunk);
    byte[][] names = e.nodes().get(0).attributeValues().get(0).texts();
    String kept = new String(names[0], java.nio.charset.StandardCharsets.UTF_8);
    assertEquals("x".repeat(15) + "…[truncated: 100 bytes]", kept); // 40 bytes in all
    assertEquals("short", new String(names[1], java.nio.charset.StandardCharsets.UTF_8));
    assertEquals(2, e.nodeCount());
  }

  @Test
  void aPlanLabelOverTheLimitIsRefused() {
    TapPlan box = new TapPlan("black_box", "k#1", "run", "wf", "R", List.of(),
        List.of("id", "parent"), List.of("id", "id"), List.of("main"), "f".repeat(50), 0,
        List.of(), "", false, 0, List.of(), List.of(), "", 4, 40, false);
    Chunk chunk = new Chunk(box);
    chunk.add(row(10L, 1L));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> Emission.of(box, chunk));
    assertTrue(e.getMessage().startsWith("LimitExceeded: label"), e.getMessage());
  }

  @Test
  void planKindsAndKeysAreChecked() {
    assertThrows(IllegalArgumentException.class, () -> plan("sort", List.of("id"),
        List.of("id"), List.of(), List.of()));
    assertThrows(IllegalArgumentException.class,
        () -> TapPlan.parse("{\"kind\": \"plus\", \"surprise\": 1}"));
  }
}
