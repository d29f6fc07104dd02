package io.sparkprov.plugin.write;

import static io.sparkprov.plugin.BlockMaps.RUN;
import static io.sparkprov.plugin.BlockMaps.edges;
import static io.sparkprov.plugin.BlockMaps.nodes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code sparkprov.write} on an embedded Neo4j: upserts, placeholders, and the ids it keeps. */
class WriteProcedureTest {
  private static final long THETA = 25000;

  private static EmbeddedNeo4j neo4j;

  @BeforeEach
  void emptyDatabase() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
  }

  /**
   * A member block of group key {@code key}: member k is {@code ends[k][0]}, its group {@code
   * ends[k][1]}, its pair {@code 1000 + k}; two aggregated columns, {@code values[i]} per member,
   * {@code nullRows[i]} the members whose value i is null.
   */
  static Map<String, Object> members(
      String key, long[][] ends, List<List<String>> values, List<List<Long>> nullRows) {
    List<Long> members = new ArrayList<>();
    List<Long> groups = new ArrayList<>();
    List<Long> pairs = new ArrayList<>();
    for (int k = 0; k < ends.length; k++) {
      members.add(ends[k][0]);
      groups.add(ends[k][1]);
      pairs.add(1000L + k);
    }
    Map<String, Object> block = new HashMap<>();
    block.put("run", RUN);
    block.put("group_key", key);
    block.put("members", members);
    block.put("groups", groups);
    block.put("pairs", pairs);
    block.put("aggregates", (long) values.size());
    block.put("values", values);
    block.put("null_rows", nullRows);
    return block;
  }

  /** Three members of two groups (61, 62 of 70; 63 of 71); member 62's first value is null. */
  private static Map<String, Object> threeMembers() {
    return members(
        "g#0",
        new long[][] {{61, 70}, {62, 70}, {63, 71}},
        List.of(List.of("1.5", "", "3.5"), List.of("a", "b", "c")),
        List.of(List.of(1L), List.of()));
  }

  /** The properties of the DERIVES edge m -> g. */
  private static Map<String, Object> memberEdge(long m, long g) {
    List<Map<String, Object>> rows =
        neo4j.query(
            "MATCH (:Node {id: $m})-[r:DERIVES]->(:Node {id: $g}) RETURN properties(r) AS p",
            Map.of("m", m, "g", g));
    assertEquals(1, rows.size(), "one edge " + m + " -> " + g);
    @SuppressWarnings("unchecked")
    Map<String, Object> p = (Map<String, Object>) rows.get(0).get("p");
    return p;
  }

  private static long count(String cypher) {
    return (Long) neo4j.one(cypher, Map.of());
  }

  private static Object prop(long id, String key) {
    return neo4j.one("MATCH (n:Node {id: $id}) RETURN n[$key]", Map.of("id", id, "key", key));
  }

  /** A node's current component or set id, resolved by the plugin's functions. */
  private static long longProp(long id, String key) {
    String call =
        switch (key) {
          case "component_id" -> "sparkprov.component(n)";
          case "set_id" -> "sparkprov.set(n)";
          default -> throw new IllegalArgumentException(key);
        };
    return (Long) neo4j.one("MATCH (n:Node {id: $id}) RETURN " + call, Map.of("id", id));
  }

  @Test
  void theSameBlocksTwiceStoreEachNodeAndEdgeOnce() {
    List<Map<String, Object>> blocks =
        List.of(nodes("TOKEN", List.of(1L, 2L)), nodes("PLUS", List.of(3L)));
    List<Map<String, Object>> edgeBlocks = List.of(edges(new long[][] {{1, 3}, {2, 3}, {1, 3}}));

    List<Map<String, Object>> first = neo4j.write(blocks, edgeBlocks, THETA);
    List<Map<String, Object>> second = neo4j.write(blocks, edgeBlocks, THETA);

    assertEquals(1, first.size());
    assertEquals(3L, first.get(0).get("nodes"));
    assertEquals(2L, first.get(0).get("edges")); // the repeated pair is one edge
    assertEquals(0L, second.get(0).get("nodes"));
    assertEquals(0L, second.get(0).get("edges"));
    assertEquals(List.of(), second.get(0).get("conflict_ids")); // equal content: no conflict
    assertEquals(3L, count("MATCH (n:Node) RETURN count(n)"));
    assertEquals(2L, count("MATCH ()-[r:DERIVES]->() RETURN count(r)"));
    assertEquals(1L, count("MATCH (c:Component) RETURN count(c)"));
    assertEquals(3L, count("MATCH (c:Component) RETURN c.size"));
  }

  @Test
  void nodesSentAgainAmongNewOnesAndAPlaceholderAreEachStoredOnce() {
    // 40 ids stored and 40 new, interleaved in id order, and a placeholder filled.
    int stored = 40;
    List<Long> old = new ArrayList<>();
    List<Long> mixed = new ArrayList<>();
    for (long i = 0; i < 2 * stored; i++) {
      mixed.add(100 + i);
      if (i % 2 == 0) {
        old.add(100 + i);
      }
    }
    neo4j.write(List.of(nodes("TOKEN", old)), List.of(), THETA);
    // A placeholder among them too (an edge's end stored before its block).
    neo4j.write(List.of(), List.of(edges(new long[][] {{100, 99}})), THETA);
    mixed.add(99L);

    List<Map<String, Object>> again =
        neo4j.write(
            List.of(nodes("TOKEN", mixed)), List.of(edges(new long[][] {{101, 99}})), THETA);

    assertEquals((long) stored + 1, again.get(0).get("nodes")); // the new ones and the filled
    assertEquals(1L, again.get(0).get("edges"));
    assertEquals(List.of(), again.get(0).get("conflict_ids"));
    assertEquals(2L * stored + 1, count("MATCH (n:Node) RETURN count(n)"));
    assertEquals(
        2L * stored + 1, count("MATCH (n:Node) WHERE n.op = 'TOKEN' RETURN count(DISTINCT n.id)"));
    assertEquals(2L, count("MATCH ()-[r:DERIVES]->() RETURN count(r)"));
  }

  /** A TOKEN block of node 5 keeping {@code attributes} (name to value; "" for a null). */
  private static Map<String, Object> tokenWith(Map<String, String> attributes) {
    Map<String, Object> block = new HashMap<>(nodes("TOKEN", List.of(5L)));
    List<String> names = new ArrayList<>(attributes.keySet());
    List<List<String>> values = new ArrayList<>();
    List<List<Long>> nulls = new ArrayList<>();
    for (String name : names) {
      String value = attributes.get(name);
      values.add(List.of(value));
      nulls.add(value.isEmpty() ? List.of(0L) : List.of());
    }
    block.put("attribute_names", names);
    block.put("attribute_values", values);
    block.put("null_rows", nulls);
    return block;
  }

  @Test
  void aNodeSentAgainWithMoreAttributesGetsThoseItLacks() {
    // Two actions of a run read different columns of one source row (values="read").
    neo4j.write(List.of(tokenWith(Map.of("k", "1", "x", ""))), List.of(), THETA);
    List<Map<String, Object>> again = neo4j.write(
        List.of(tokenWith(Map.of("k", "9", "x", "7", "y", "2"))), List.of(), THETA);

    assertEquals(0L, again.get(0).get("nodes")); // stored before: not counted again
    assertEquals(List.of(), again.get(0).get("conflict_ids"));
    assertEquals("1", prop(5, "a_k")); // the stored value stays
    assertEquals("7", prop(5, "a_x")); // null when first stored, now known
    assertEquals("2", prop(5, "a_y")); // not kept the first time
    assertEquals(1L, count("MATCH (n:Node) RETURN count(n)"));
  }

  @Test
  void aPlaceholderBecomesTheNodeWhenItsRecordArrives() {
    // The edge arrives first: both ends are placeholders, pending for the edge's run.
    List<Map<String, Object>> first =
        neo4j.write(List.of(), List.of(edges(new long[][] {{10, 11}})), THETA);
    assertEquals(0L, first.get(0).get("nodes"));
    assertEquals(1L, first.get(0).get("edges"));
    assertEquals(RUN, prop(10, "pending_run"));
    assertFalse((Boolean) neo4j.one("MATCH (n:Node {id: 10}) RETURN n.op IS NOT NULL", Map.of()));
    assertEquals(2L, count("MATCH (n:Node {pending_run: 'run-1'}) RETURN count(n)"));

    List<Map<String, Object>> second =
        neo4j.write(List.of(nodes("TOKEN", List.of(10L)), nodes("PLUS", List.of(11L))), List.of(),
            THETA);

    assertEquals(2L, second.get(0).get("nodes"));
    assertEquals(2L, count("MATCH (n:Node) RETURN count(n)"));
    assertEquals(0L, count("MATCH (n:Node) WHERE n.pending_run IS NOT NULL RETURN count(n)"));
    assertEquals("TOKEN", prop(10, "op"));
    assertEquals("R", prop(11, "relation"));
    // Both known now, in one split part: one connected set of two.
    assertEquals(longProp(10, "set_id"), longProp(11, "set_id"));
    assertEquals(
        2L,
        neo4j.one(
            "MATCH (s:ConnectedSet {id: $id}) RETURN s.size", Map.of("id", longProp(10, "set_id"))));
  }

  @Test
  void anEdgeBetweenTwoComponentsMergesThemAndAddsTheirSizes() {
    neo4j.write(
        List.of(nodes("TOKEN", List.of(1L, 2L, 3L, 4L, 5L))),
        List.of(edges(new long[][] {{1, 2}, {3, 4}, {4, 5}})),
        THETA);
    long small = longProp(1, "component_id");
    long large = longProp(3, "component_id");
    assertNotEquals(small, large);
    assertEquals(small, longProp(2, "component_id"));
    assertEquals(large, longProp(5, "component_id"));
    assertEquals(2L, neo4j.one("MATCH (c:Component {id: $id}) RETURN c.size", Map.of("id", small)));

    List<Map<String, Object>> rows =
        neo4j.write(List.of(), List.of(edges(new long[][] {{2, 3}})), THETA);

    assertEquals(1L, rows.get(0).get("merges"));
    for (long id = 1; id <= 5; id++) {
      assertEquals(large, longProp(id, "component_id"), "node " + id); // the larger absorbs
    }
    // The smaller component's record points at the larger (no member was rewritten).
    assertEquals(1L, count("MATCH (c:Component) WHERE c.parent IS NULL RETURN count(c)"));
    assertEquals(large, neo4j.one("MATCH (c:Component {id: $id}) RETURN c.parent", Map.of("id", small)));
    // Node 2 still carries the id it was born with (none written where it is its own).
    assertEquals(
        small,
        neo4j.one("MATCH (n:Node {id: 2}) RETURN coalesce(n.component_id, n.id)", Map.of()));
    assertEquals(5L, neo4j.one("MATCH (c:Component {id: $id}) RETURN c.size", Map.of("id", large)));
    assertEquals(1L, count("MATCH (s:ConnectedSet) RETURN count(s)"));
    assertEquals(5L, count("MATCH (s:ConnectedSet) RETURN s.size"));
  }

  @Test
  void anEdgeAcrossSplitsIsASetDependency() {
    neo4j.write(
        List.of(
            nodes("TOKEN", List.of(21L, 22L), "load"),
            nodes("PLUS", List.of(23L, 24L), "report"),
            nodes("PLUS", List.of(25L), "audit")),
        List.of(edges(new long[][] {{21, 22}, {22, 23}, {23, 24}, {24, 25}})),
        THETA);

    long load = longProp(21, "set_id");
    long report = longProp(23, "set_id");
    long audit = longProp(25, "set_id");
    assertEquals(load, longProp(22, "set_id"));
    assertEquals(report, longProp(24, "set_id"));
    assertNotEquals(load, report);
    // One component all the same.
    assertEquals(longProp(21, "component_id"), longProp(25, "component_id"));
    List<Map<String, Object>> deps =
        neo4j.query(
            "MATCH (a:ConnectedSet)-[:SET_DEP]->(b:ConnectedSet)"
                + " RETURN a.id AS src, b.id AS dst, a.size AS srcSize, b.size AS dstSize",
            Map.of());
    assertEquals(1, deps.size());
    assertEquals(load, deps.get(0).get("src"));
    assertEquals(report, deps.get(0).get("dst"));
    assertEquals(2L, deps.get(0).get("srcSize"));
    assertEquals(2L, deps.get(0).get("dstSize"));
    assertEquals(
        0L, neo4j.one("MATCH (s:ConnectedSet {id: $id}) RETURN s.level", Map.of("id", load)));
    // A lone node's set has no record and no SET_DEP: its dependencies are read from its edges.
    assertEquals(0L, count("MATCH (s:ConnectedSet {id: " + audit + "}) RETURN count(s)"));
    assertEquals(List.of(report), setDependencies(audit, "BACKWARD"));
    assertEquals(List.of(audit), setDependencies(report, "FORWARD"));
    assertEquals(List.of(load), setDependencies(report, "BACKWARD"));
    assertEquals(
        List.of(audit, report, load),
        neo4j.query("CALL sparkprov.setLineage($id) YIELD set RETURN set", Map.of("id", audit))
            .stream().map(r -> r.get("set")).toList());
  }

  @Test
  void aLoneNodeJoiningASetHandsOnItsDependencies() {
    // 42 alone in "report" depends on the load set; then 43 joins it: the pair's set is stored
    // with the dependency that was only implied by 42's edge.
    neo4j.write(
        List.of(nodes("TOKEN", List.of(40L, 41L), "load"), nodes("PLUS", List.of(42L), "report")),
        List.of(edges(new long[][] {{40, 41}, {41, 42}})),
        THETA);
    assertEquals(0L, count("MATCH ()-[d:SET_DEP]->() RETURN count(d)"));

    neo4j.write(
        List.of(nodes("PLUS", List.of(43L), "report")),
        List.of(edges(new long[][] {{42, 43}})),
        THETA);

    assertEquals(longProp(42, "set_id"), longProp(43, "set_id"));
    assertEquals(
        List.of(List.of(longProp(40, "set_id"), longProp(42, "set_id"))),
        neo4j.query(
                "MATCH (a:ConnectedSet)-[:SET_DEP]->(b:ConnectedSet) RETURN a.id AS a, b.id AS b",
                Map.of())
            .stream().map(r -> List.of(r.get("a"), r.get("b"))).toList());
  }

  private List<Object> setDependencies(long id, String direction) {
    return neo4j
        .query(
            "CALL sparkprov.setDependencies($id, $d) YIELD set RETURN set ORDER BY set",
            Map.of("id", id, "d", direction))
        .stream()
        .map(r -> r.get("set"))
        .toList();
  }

  @Test
  void aSetThatReachesThetaIsRefinedBySubSplit() {
    // Theta 3: the split "a" holds 4 nodes, so its members' sets are their sub-split's.
    neo4j.write(
        List.of(
            nodes("TOKEN", List.of(31L, 32L), "a", "x"),
            nodes("PLUS", List.of(33L, 34L), "a", "y")),
        List.of(edges(new long[][] {{31, 32}, {32, 33}, {33, 34}})),
        3);

    // One level-0 set of four.
    assertEquals(
        1L, count("MATCH (s:LevelSet) WHERE s.key STARTS WITH '0:' AND s.size = 4 RETURN count(s)"));
    assertEquals(longProp(31, "set_id"), longProp(32, "set_id"));
    assertEquals(longProp(33, "set_id"), longProp(34, "set_id"));
    assertNotEquals(longProp(31, "set_id"), longProp(33, "set_id"));
    assertEquals(
        1L,
        neo4j.one(
            "MATCH (s:ConnectedSet {id: $id}) RETURN s.level", Map.of("id", longProp(31, "set_id"))));
    assertEquals(1L, count("MATCH ()-[d:SET_DEP]->() RETURN count(d)"));
  }

  @Test
  void aComponentKeptUnderOneThetaRefusesAnother() {
    neo4j.write(
        List.of(nodes("TOKEN", List.of(51L, 52L))), List.of(edges(new long[][] {{51, 52}})), 4);
    assertEquals(4L, neo4j.one("MATCH (n:Node {id: 51}) RETURN sparkprov.theta(n)", Map.of()));

    Exception refused =
        assertThrows(
            Exception.class,
            () ->
                neo4j.write(
                    List.of(nodes("PLUS", List.of(53L))),
                    List.of(edges(new long[][] {{52, 53}})),
                    THETA));
    String message = String.valueOf(refused.getMessage());
    assertTrue(message.contains("theta " + THETA + " differs"), message);
    assertEquals(0L, count("MATCH (n:Node {id: 53}) RETURN count(n)")); // nothing of the call kept
    // Another component may be kept under another theta.
    neo4j.write(
        List.of(nodes("TOKEN", List.of(54L, 55L))), List.of(edges(new long[][] {{54, 55}})), THETA);
    assertEquals(THETA, neo4j.one("MATCH (n:Node {id: 55}) RETURN sparkprov.theta(n)", Map.of()));
  }

  @Test
  void aNodeSentAgainWithAnotherOpIsReportedAndNotStored() {
    neo4j.write(List.of(nodes("TOKEN", List.of(41L))), List.of(), THETA);

    List<Map<String, Object>> rows =
        neo4j.write(
            List.of(nodes("TOKEN", List.of(42L)), nodes("VALUE", List.of(43L, 41L))),
            List.of(),
            THETA);

    assertEquals(List.of(1L), rows.get(0).get("conflict_blocks"));
    assertEquals(List.of(41L), rows.get(0).get("conflict_ids"));
    assertEquals(2L, rows.get(0).get("nodes"));
    assertEquals("TOKEN", prop(41, "op"));
    assertEquals(3L, count("MATCH (n:Node) RETURN count(n)"));
  }

  @Test
  void aMemberBlockStoresOneDerivesEdgePerMemberCarryingItsValues() {
    List<Map<String, Object>> rows =
        neo4j.write(List.of(), List.of(), THETA, List.of(threeMembers()));

    // Members 61 and 63 have 2 values, 62 has 1: 5 in all, each a TENSOR and a VALUE node.
    assertEquals(1, rows.size());
    assertEquals(RUN, rows.get(0).get("run"));
    assertEquals(2L * 5, rows.get(0).get("nodes"));
    assertEquals(3L + 3 * 5, rows.get(0).get("edges"));
    // Every end is a placeholder of the block's run.
    assertEquals(
        5L, count("MATCH (n:Node {pending_run: 'run-1'}) WHERE n.op IS NULL RETURN count(n)"));
    assertEquals(3L, count("MATCH ()-[r:DERIVES]->() RETURN count(r)"));
    Map<String, Object> first = memberEdge(61, 70);
    assertEquals(Set.of("member_key", "member_values", "pair"), first.keySet());
    assertEquals("g#0", first.get("member_key"));
    assertArrayEquals(new String[] {"1.5", "a"}, (String[]) first.get("member_values"));
    assertEquals(1000L, first.get("pair"));
    Map<String, Object> nullOne = memberEdge(62, 70);
    assertEquals(Set.of("member_key", "member_values", "member_nulls", "pair"), nullOne.keySet());
    assertArrayEquals(new String[] {"", "b"}, (String[]) nullOne.get("member_values"));
    assertArrayEquals(new long[] {0L}, (long[]) nullOne.get("member_nulls"));
    assertEquals(1001L, nullOne.get("pair"));
    Map<String, Object> third = memberEdge(63, 71);
    assertFalse(third.containsKey("member_nulls"));
    assertArrayEquals(new String[] {"3.5", "c"}, (String[]) third.get("member_values"));
    assertEquals(1L, count("MATCH (k:MemberKey {key: 'g#0'}) RETURN count(k)"));
    assertEquals(2L, count("MATCH (k:MemberKey {key: 'g#0'}) RETURN k.aggregates"));
    // Two components: {61, 62, 70} and {63, 71}.
    assertEquals(longProp(61, "component_id"), longProp(70, "component_id"));
    assertEquals(longProp(62, "component_id"), longProp(70, "component_id"));
    assertEquals(longProp(63, "component_id"), longProp(71, "component_id"));
    assertNotEquals(longProp(61, "component_id"), longProp(63, "component_id"));
  }

  /**
   * A member block whose members are a join's rows (docs/graph-schema.md, "A join's rows folded
   * into their member edges"): member k is TIMES {@code rows[k][0]} of left {@code rows[k][1]}
   * and right {@code rows[k][2]}, in group {@code rows[k][3]}; one aggregated column, "v<k>".
   */
  static Map<String, Object> joinRows(long[][] rows) {
    long[][] ends = new long[rows.length][];
    List<String> values = new ArrayList<>();
    List<Long> lefts = new ArrayList<>();
    List<Long> partners = new ArrayList<>();
    for (int k = 0; k < rows.length; k++) {
      ends[k] = new long[] {rows[k][0], rows[k][3]};
      values.add("v" + k);
      lefts.add(rows[k][1]);
      partners.add(rows[k][2]);
    }
    Map<String, Object> block = members("g#j", ends, List.of(values), List.of(List.of()));
    block.put("lefts", lefts);
    block.put("partners", partners);
    block.put("split", List.of("main"));
    return block;
  }

  /** Three joined rows of group 90: 81 with 85 and 82 with 85 (one PARTNER), 83 with itself. */
  private static Map<String, Object> threeJoinedRows() {
    return joinRows(new long[][] {{501, 81, 85, 90}, {502, 82, 85, 90}, {503, 83, 83, 90}});
  }

  @Test
  void joinRowsAreFoldedIntoTheirMemberEdgesAndCountedAsTheLogicalRecords() {
    List<Map<String, Object>> rows =
        neo4j.write(List.of(), List.of(), THETA, List.of(threeJoinedRows()));

    // Logical: 3 TIMES + 3 TENSOR + 3 VALUE nodes; 5 join edges (the self pair has one), 3
    // member edges, 3 x 3 value edges.
    assertEquals(3L + 2 * 3, rows.get(0).get("nodes"));
    assertEquals(5L + 3 + 3 * 3, rows.get(0).get("edges"));
    // Stored: a member edge per row from its left parent, one PARTNER for 85; no TIMES node.
    assertEquals(0L, count("MATCH (n:Node) WHERE n.id IN [501, 502, 503] RETURN count(n)"));
    assertEquals(3L, count("MATCH ()-[r:DERIVES]->() RETURN count(r)"));
    assertEquals(1L, count("MATCH (:Node {id: 85})-[r:PARTNER]->(:Node {id: 90}) RETURN count(r)"));
    assertEquals(1L, count("MATCH ()-[r:PARTNER]->() RETURN count(r)"));
    Map<String, Object> first = memberEdge(81, 90);
    assertEquals(501L, first.get("times"));
    assertEquals(85L, first.get("partner"));
    assertEquals(1000L, first.get("pair"));
    assertArrayEquals(new String[] {"v0"}, (String[]) first.get("member_values"));
    assertEquals(83L, memberEdge(83, 90).get("partner"));
    // The PARTNER joins 85's component as its logical edge 85 -> 501 -> 90 does.
    assertEquals(longProp(85, "component_id"), longProp(90, "component_id"));
    assertEquals(longProp(81, "component_id"), longProp(90, "component_id"));
  }

  @Test
  void joinRowsSentAgainCreateAndCountNothing() {
    neo4j.write(List.of(), List.of(), THETA, List.of(threeJoinedRows()));

    List<Map<String, Object>> again =
        neo4j.write(List.of(), List.of(), THETA, List.of(threeJoinedRows(), threeJoinedRows()));

    assertNothingNewAndStored(again, 3L, 1L);
  }

  /** A write that created and counted nothing, and the DERIVES and PARTNER stored in all. */
  private static void assertNothingNewAndStored(
      List<Map<String, Object>> rows, long derives, long partners) {
    assertEquals(0L, rows.get(0).get("nodes"));
    assertEquals(0L, rows.get(0).get("edges"));
    assertEquals(derives, count("MATCH ()-[r:DERIVES]->() RETURN count(r)"));
    assertEquals(partners, count("MATCH ()-[r:PARTNER]->() RETURN count(r)"));
  }

  @Test
  void aJoinedRowOfTwoAggregationsIsFoldedIntoEachAndItsTimesNodeCountedOnce() {
    // Row 501 (81 with 85) is a member of group 90 and, under another key, of group 91.
    Map<String, Object> other = joinRows(new long[][] {{501, 81, 85, 91}});
    other.put("group_key", "g#k");
    List<Map<String, Object>> first =
        neo4j.write(List.of(), List.of(), THETA, List.of(joinRows(new long[][] {{501, 81, 85, 90}})));
    List<Map<String, Object>> second = neo4j.write(List.of(), List.of(), THETA, List.of(other));
    List<Map<String, Object>> again = neo4j.write(List.of(), List.of(), THETA, List.of(other));

    // The row's TIMES node and its two edges are one logical row, counted by the first fold (the
    // capture agent counts them once, under the join's key); each group its member's records.
    assertEquals(1L + 2, first.get(0).get("nodes"));
    assertEquals(2L + 1 + 3, first.get(0).get("edges"));
    assertEquals(2L, second.get(0).get("nodes"));
    assertEquals(1L + 3, second.get(0).get("edges"));
    assertEquals(501L, memberEdge(81, 90).get("times"));
    assertEquals(501L, memberEdge(81, 91).get("times"));
    assertNothingNewAndStored(again, 2L, 2L);
  }

  /** Row 501 (81 with 85) as its join's capture point stores it: a TIMES node, two edges. */
  private static List<Map<String, Object>> storedRow() {
    Map<String, Object> times = new HashMap<>(nodes("TIMES", List.of(501L), "main"));
    times.put("relation", "");
    times.put("label", "·");
    return List.of(times, nodes("TOKEN", List.of(81L, 85L)));
  }

  @Test
  void aJoinedRowStoredByOneJobAndFoldedByAnotherIsCountedOnce() {
    // One job collects the join (its TIMES node stored), a later one aggregates it (folded).
    List<Map<String, Object>> stored =
        neo4j.write(storedRow(), List.of(edges(new long[][] {{81, 501}, {85, 501}})), THETA);
    List<Map<String, Object>> folded = neo4j.write(
        List.of(), List.of(), THETA, List.of(joinRows(new long[][] {{501, 81, 85, 90}})));

    assertEquals(3L, stored.get(0).get("nodes")); // 81, 85, 501
    assertEquals(2L, stored.get(0).get("edges"));
    assertEquals(2L, folded.get(0).get("nodes")); // TENSOR, VALUE: 501 is counted
    assertEquals(1L + 3, folded.get(0).get("edges"));
    assertEquals(501L, memberEdge(81, 90).get("times"));
  }

  @Test
  void aJoinedRowFoldedByOneJobAndStoredByAnotherIsCountedOnce() {
    List<Map<String, Object>> folded = neo4j.write(
        List.of(), List.of(), THETA, List.of(joinRows(new long[][] {{501, 81, 85, 90}})));
    List<Map<String, Object>> stored =
        neo4j.write(storedRow(), List.of(edges(new long[][] {{81, 501}, {85, 501}})), THETA);

    assertEquals(1L + 2, folded.get(0).get("nodes"));
    assertEquals(2L + 1 + 3, folded.get(0).get("edges"));
    // 81 and 85 were placeholders of the fold: filled and counted now; 501 and its edges not.
    assertEquals(2L, stored.get(0).get("nodes"));
    assertEquals(0L, stored.get(0).get("edges"));
    assertEquals("TIMES", prop(501, "op"));
    assertEquals(1L, count("MATCH (:Node {id: 81})-[:DERIVES]->(:Node {id: 501}) RETURN count(*)"));
  }

  @Test
  void aLeftRowJoinedTwiceIntoOneGroupIsStoredUnfoldedTheSecondTime() {
    // 81 joined with 85 and with 86, both rows in group 90: one edge 81 -> 90 can carry one.
    Map<String, Object> block =
        joinRows(new long[][] {{501, 81, 85, 90}, {504, 81, 86, 90}});
    List<Map<String, Object>> rows = neo4j.write(List.of(), List.of(), THETA, List.of(block));
    List<Map<String, Object>> again = neo4j.write(List.of(), List.of(), THETA, List.of(block));

    assertEquals(2L + 2 * 2, rows.get(0).get("nodes"));
    assertEquals(4L + 2 + 3 * 2, rows.get(0).get("edges"));
    assertEquals(501L, memberEdge(81, 90).get("times"));
    // 504 is a TIMES node with its two parents' edges and its member edge.
    assertEquals("TIMES", prop(504, "op"));
    assertEquals("·", prop(504, "label"));
    assertArrayEquals(new String[] {"main"}, (String[]) prop(504, "split"));
    assertEquals(1L, count("MATCH (:Node {id: 81})-[:DERIVES]->(:Node {id: 504}) RETURN count(*)"));
    assertEquals(1L, count("MATCH (:Node {id: 86})-[:DERIVES]->(:Node {id: 504}) RETURN count(*)"));
    assertEquals(1001L, memberEdge(504, 90).get("pair"));
    assertFalse(memberEdge(504, 90).containsKey("times"));
    // 81 -> 90 (folded 501), 81 -> 504, 86 -> 504, 504 -> 90; and 85's PARTNER.
    assertNothingNewAndStored(again, 4L, 1L);
  }

  @Test
  void aMemberBlockSentAgainCreatesAndCountsNothing() {
    neo4j.write(List.of(), List.of(), THETA, List.of(threeMembers()));

    // Again, twice in one call, with another block of the same key (one new member, no values).
    Map<String, Object> more =
        members("g#0", new long[][] {{64, 71}}, List.of(), List.of());
    List<Map<String, Object>> again =
        neo4j.write(List.of(), List.of(), THETA, List.of(threeMembers(), threeMembers()));
    List<Map<String, Object>> another =
        neo4j.write(List.of(), List.of(), THETA, List.of(threeMembers(), more));

    assertEquals(0L, again.get(0).get("nodes"));
    assertEquals(0L, again.get(0).get("edges"));
    assertEquals(0L, again.get(0).get("merges"));
    assertEquals(0L, another.get(0).get("nodes"));
    assertEquals(1L, another.get(0).get("edges")); // the new member: its edge to the group only
    assertEquals(4L, count("MATCH ()-[r:DERIVES]->() RETURN count(r)"));
    assertEquals(1L, count("MATCH (k:MemberKey) RETURN count(k)"));
    assertEquals(2L, count("MATCH (k:MemberKey) RETURN k.aggregates")); // the first block's kept
    assertArrayEquals(new String[] {}, (String[]) memberEdge(64, 71).get("member_values"));
  }

  @Test
  void aMemberEdgeToAStoredEdgeCreatesNothing() {
    // The pair was stored as a plain edge first: the member block leaves it as it is.
    neo4j.write(List.of(nodes("TOKEN", List.of(61L, 70L))), List.of(edges(new long[][] {{61, 70}})),
        THETA);

    List<Map<String, Object>> rows =
        neo4j.write(List.of(), List.of(), THETA, List.of(threeMembers()));

    assertEquals(2L * 3, rows.get(0).get("nodes")); // 62 (1 value) and 63 (2 values) only
    assertEquals(2L + 3 * 3, rows.get(0).get("edges"));
    assertEquals(Map.of(), memberEdge(61, 70));
    assertEquals(1L, count("MATCH (:Node {id: 61})-[r:DERIVES]->() RETURN count(r)"));
  }

  @Test
  void nodeBlocksArrivingLaterFillTheMembersPlaceholders() {
    neo4j.write(List.of(), List.of(), THETA, List.of(threeMembers()));

    List<Map<String, Object>> rows =
        neo4j.write(
            List.of(nodes("TOKEN", List.of(61L, 62L, 63L)), nodes("DELTA", List.of(70L, 71L))),
            List.of(),
            THETA);

    assertEquals(5L, rows.get(0).get("nodes"));
    assertEquals(0L, rows.get(0).get("edges"));
    assertEquals(0L, count("MATCH (n:Node) WHERE n.pending_run IS NOT NULL RETURN count(n)"));
    assertEquals("DELTA", prop(70, "op"));
    assertEquals("TOKEN", prop(62, "op"));
    // Known now, in one split part: the member edges join their sets.
    assertEquals(longProp(61, "set_id"), longProp(70, "set_id"));
    assertEquals(longProp(62, "set_id"), longProp(70, "set_id"));
    assertEquals(longProp(63, "set_id"), longProp(71, "set_id"));
    assertNotEquals(longProp(61, "set_id"), longProp(63, "set_id"));
    assertEquals(
        3L,
        neo4j.one(
            "MATCH (s:ConnectedSet {id: $id}) RETURN s.size",
            Map.of("id", longProp(70, "set_id"))));
    // The edges kept their member properties.
    assertEquals("g#0", memberEdge(63, 71).get("member_key"));
  }

  @Test
  void aMemberEdgeAcrossSplitsIsASetDependency() {
    neo4j.write(
        List.of(nodes("TOKEN", List.of(61L, 62L, 63L), "load"), nodes("DELTA", List.of(70L, 71L),
            "report")),
        List.of(),
        THETA,
        List.of(threeMembers()));

    assertNotEquals(longProp(61, "set_id"), longProp(62, "set_id")); // each alone in its split
    assertNotEquals(longProp(61, "set_id"), longProp(70, "set_id"));
    // Lone nodes' sets: no SET_DEP stored, the dependencies read from the member edges.
    assertEquals(0L, count("MATCH ()-[d:SET_DEP]->() RETURN count(d)"));
    assertEquals(
        List.of(longProp(70, "set_id")), setDependencies(longProp(61, "set_id"), "FORWARD"));
    assertEquals(longProp(61, "component_id"), longProp(70, "component_id"));
  }

  @Test
  void theThreeArgumentCallStillWorksAndRegistersNoKey() {
    List<Map<String, Object>> rows =
        neo4j.write(
            List.of(nodes("TOKEN", List.of(81L, 82L))),
            List.of(edges(new long[][] {{81, 82}})),
            THETA);

    assertEquals(2L, rows.get(0).get("nodes"));
    assertEquals(1L, rows.get(0).get("edges"));
    assertEquals(0L, count("MATCH (k:MemberKey) RETURN count(k)"));
    assertEquals(Map.of(), memberEdge(81, 82));
  }

  @Test
  void aMalformedMemberBlockFailsTheCallNamingTheField() {
    Map<String, Object> block = threeMembers();
    block.put("pairs", List.of(1L));

    Exception e =
        assertThrows(
            Exception.class,
            () ->
                neo4j.write(
                    List.of(nodes("TOKEN", List.of(51L))), List.of(), THETA, List.of(block)));

    String message = rootMessage(e);
    assertTrue(message.contains("member block 0: field 'pairs' has 1 ids for 3 members"), message);
    assertEquals(0L, count("MATCH (n:Node) RETURN count(n)"));
  }

  @Test
  void aMalformedBlockFailsTheCallNamingTheField() {
    Map<String, Object> block = nodes("TOKEN", List.of(51L));
    block.put("ids", "51");

    Exception e = assertThrows(Exception.class, () -> neo4j.write(List.of(block), List.of(), THETA));

    String message = rootMessage(e);
    assertTrue(message.contains("node block 0: field 'ids' must be a list"), message);
    assertEquals(0L, count("MATCH (n:Node) RETURN count(n)"));
  }

  private static String rootMessage(Throwable e) {
    StringBuilder all = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      all.append(t.getMessage()).append(" | ");
    }
    return all.toString();
  }
}
