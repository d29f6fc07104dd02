package io.sparkprov.plugin.query;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.BlockMaps;
import io.sparkprov.plugin.EmbeddedNeo4j;
import io.sparkprov.plugin.graph.DerivedIds;
import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.graph.Schema;
import io.sparkprov.plugin.ids.IdMaintenance;
import io.sparkprov.plugin.ids.IdWork;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.Transaction;

/**
 * A join's rows folded into their member edges (docs/graph-schema.md, "A join's rows folded into
 * their member edges") are the same logical graph as the rows stored: one logical graph is stored
 * twice, once with every TIMES node stored (written by {@code sparkprov.write}) and once with
 * most of them folded (member edges {@code l -> g} with {@code times} and {@code partner}, and
 * {@code PARTNER} relationships, made here as the stored layout says, their ids kept in the
 * write's transaction or left to the indexer), and every reader must answer alike: traces both
 * ways with RECURSIVE, COMPONENT and CONNECTED_SET, subgraphs, deletion propagation, node views
 * (component and set ids compared as the partitions they make: the ids themselves are roots of
 * union-finds over different stored nodes), and the logical graph's set and component edge
 * queries, each edge once.
 *
 * <p>The join's rows (left rows 1-4, right rows 11-14, groups 70 and 71 of one group key with two
 * aggregated columns, both feeding 90): 101 = 1·11 and 102 = 2·11 into 70 (11 partners two
 * members of one group: one PARTNER relationship), 103 = 3·3 into 71 (a self-pair: no PARTNER),
 * 104 = 1·12 into 70 stored beside 101 (1 already has an edge into 70: many-to-many), 105 = 2·12
 * and 106 = 1·11 into 71, 107 = 4·13 stored with its member edge into 70 and folded into 71 as
 * well (two aggregations of one join row), and 108 = 3·14 into 70. Right row 11 is joined to the
 * rest by PARTNER relationships only, so the id walks must take them; sources 5 (of the left
 * rows) and 15 (of 14) come last, so 14's PARTNER is read again as its set's dependency.
 */
class FoldedRowsTest {
  private static final String KEY = "j#0";
  private static final long THETA_LARGE = 25000;
  private static final long G1 = 70;
  private static final long G2 = 71;
  private static final long OUT = 90;
  private static final String[] LEFT = {"s", "left"};
  private static final String[] RIGHT = {"s", "right"};
  private static final String[] AGG = {"s", "agg"};

  /** One joined row: its TIMES id, parents, group, values (null: a null), and how it is kept. */
  record Row(long times, long left, long right, long group, String v0, String v1, boolean folded) {
    List<String> values() {
      return Arrays.asList(v0, v1);
    }
  }

  private static final List<Row> ROWS =
      List.of(
          new Row(101, 1, 11, G1, "1", "x", true),
          new Row(102, 2, 11, G1, "2", null, true),
          new Row(103, 3, 3, G2, "3", "y", true),
          new Row(104, 1, 12, G1, "4", "z", false),
          new Row(105, 2, 12, G2, null, "w", true),
          new Row(106, 1, 11, G2, "6", "v", true),
          new Row(107, 4, 13, G1, "7", "u", false),
          new Row(107, 4, 13, G2, "8", "t", true),
          new Row(108, 3, 14, G1, "9", "s", true));

  private static final String TRACE =
      "CALL sparkprov.trace($ids, $direction, $strategy, 0, 1000)"
          + " YIELD missing, ids, nodes, sources, targets, truncated, strategy, ids_pending"
          + " RETURN *";
  private static final String SUBGRAPH =
      "CALL sparkprov.subgraph($id, 1000, 1000)"
          + " YIELD missing, tooLarge, ids, nodes, sources, targets RETURN *";
  private static final String DELETE =
      "CALL sparkprov.propagateDeletion($ids, 1000)"
          + " YIELD missing, truncated, removed, aggregates RETURN *";

  private EmbeddedNeo4j neo4j;

  @ParameterizedTest(name = "theta {0}, deferred ids {1}")
  @CsvSource({"1, false", "1, true", "25000, false", "25000, true"})
  void foldedRowsAnswerAsStoredOnes(long theta, boolean deferred) throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    writeUnfolded(theta);
    Map<String, Object> stored = answers();
    neo4j = EmbeddedNeo4j.shared(); // emptied
    writeFolded(theta, deferred);
    checkFoldedLayout();
    Map<String, Object> folded = answers();
    if (theta == 1) { // the rows' sets depend on the groups' (at theta 25000 all is one set)
      Set<Long> groups = new TreeSet<>(aggregates());
      groups.addAll(List.of(G1, G2, OUT));
      assertEquals(
          Set.of("[1, 2, 3, 4, 5] -> " + groups, "[14, 15] -> " + groups),
          stored.get("set dependencies"));
    }
    assertEquals(stored.keySet(), folded.keySet());
    for (String question : stored.keySet()) {
      assertEquals(stored.get(question), folded.get(question), question);
    }
  }

  /** Answers that do not rest on the comparison: the folded rows are there, with their views. */
  @Test
  void foldedTimesNodesResolveWithTheirGroupsIds() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    writeFolded(1, false);
    Map<String, Object> row = trace(List.of(G1), "BACKWARD", "CONNECTED_SET");
    Set<Long> ids = new TreeSet<>(longs(row.get("ids")));
    assertTrue(
        ids.containsAll(List.of(101L, 102L, 104L, 107L, 108L, 1L, 2L, 3L, 4L, 11L, 12L, 13L, 14L)),
        ids.toString());
    assertFalse(ids.contains(103L));
    Set<List<Long>> edges = edges(row);
    assertTrue(edges.contains(List.of(11L, 101L)) && edges.contains(List.of(11L, 102L)));
    assertTrue(edges.contains(List.of(101L, G1)) && edges.contains(List.of(1L, 101L)));
    assertFalse(edges.contains(List.of(1L, G1)), "a folded row is no edge l -> g");
    Map<Long, Map<String, Object>> views = views(row);
    Map<String, Object> times = views.get(101L);
    assertEquals("TIMES", times.get("op"));
    assertEquals("·", times.get("label"));
    assertEquals("", times.get("relation"));
    assertEquals("", times.get("value"));
    assertEquals(Map.of(), times.get("attributes"));
    assertEquals(BlockMaps.RUN, times.get("run_id"));
    assertEquals(views.get(G1).get("set"), times.get("set"));
    assertEquals(views.get(G1).get("component"), times.get("component"));
    assertEquals(views.get(G1).get("set"), views.get(tensor(101, G1, 0)).get("set"));
    assertTrue(!views.get(1L).get("set").equals(times.get("set")), "theta 1: l is in its own set");

    Map<String, Object> self = trace(List.of(103L), "BACKWARD", "RECURSIVE");
    assertEquals(Set.of(103L, 3L, 5L), new TreeSet<>(longs(self.get("ids"))));
    assertEquals(Set.of(List.of(3L, 103L), List.of(5L, 3L)), edges(self));
    // A TENSOR of a folded member resolves by its pair, with the TIMES node as its member.
    Map<String, Object> t = trace(List.of(tensor(106, G2, 1)), "BACKWARD", "RECURSIVE");
    assertEquals(
        Set.of(tensor(106, G2, 1), value(106, G2, 1), 106L, 1L, 11L, 5L),
        new TreeSet<>(longs(t.get("ids"))));
    // A TIMES node stored and folded too: its children are both groups' rows and TENSORs.
    Map<String, Object> both = trace(List.of(107L), "FORWARD", "RECURSIVE");
    assertTrue(edges(both).containsAll(
        Set.of(List.of(107L, G1), List.of(107L, G2), List.of(107L, tensor(107, G2, 0)))));
    Map<String, Object> deletion = delete(List.of(11L));
    assertEquals(List.of(11L, 101L, 102L, 106L), longs(deletion.get("removed")).subList(0, 4));
  }

  // ---- The two stores -------------------------------------------------------------------------

  private void writeUnfolded(long theta) {
    List<Long> times = ROWS.stream().map(Row::times).distinct().toList();
    List<long[]> edges = plainEdges();
    for (Row r : ROWS) {
      edges.add(new long[] {r.left(), r.times()});
      if (r.right() != r.left()) {
        edges.add(new long[] {r.right(), r.times()});
      }
    }
    write(theta, times, edges, ROWS);
    writeSources(theta);
  }

  /**
   * Sources of the left rows (5) and of right row 14 (15), written last: a lone row that joins a
   * set then has its edges read again for its set's dependencies (14's: a PARTNER only).
   */
  private void writeSources(long theta) {
    List<long[]> edges = new ArrayList<>();
    for (long l : List.of(1L, 2L, 3L, 4L)) {
      edges.add(new long[] {5, l});
    }
    edges.add(new long[] {15, 14}); // 11 stays joined to the rest by PARTNERs only
    neo4j.write(
        List.of(BlockMaps.nodes("TOKEN", List.of(5L), LEFT),
            BlockMaps.nodes("TOKEN", List.of(15L), RIGHT)),
        List.of(BlockMaps.edges(edges.toArray(long[][]::new))), theta);
  }

  private void writeFolded(long theta, boolean deferred) {
    List<Row> stored = ROWS.stream().filter(r -> !r.folded()).toList();
    List<long[]> edges = plainEdges();
    for (Row r : stored) {
      edges.add(new long[] {r.left(), r.times()});
      edges.add(new long[] {r.right(), r.times()});
    }
    write(theta, stored.stream().map(Row::times).distinct().toList(), edges, stored);
    try (Transaction tx = neo4j.db.beginTx()) {
      Set<Edge> written = new LinkedHashSet<>();
      List<Long> rels = new ArrayList<>();
      for (Row r : ROWS) {
        if (r.folded()) {
          fold(tx, r, written, rels);
        }
      }
      if (deferred) {
        IdWork.enter(tx);
        IdWork.record(
            tx, written, rels.stream().mapToLong(Long::longValue).toArray(), List.of(),
            new long[0], List.of(BlockMaps.RUN), theta);
      } else {
        IdMaintenance.keep(
            tx, id -> tx.findNode(Schema.NODE, "id", id), theta, written, List.of());
      }
      tx.commit();
    }
    if (deferred) {
      assertEquals(Boolean.TRUE, neo4j.one("RETURN sparkprov.idsPending()", Map.of()));
      neo4j.index(100000);
    }
    assertEquals(Boolean.FALSE, neo4j.one("RETURN sparkprov.idsPending()", Map.of()));
    writeSources(theta);
  }

  /** One folded row as the stored layout has it, and the edges it gives id maintenance. */
  private static void fold(Transaction tx, Row r, Set<Edge> written, List<Long> rels) {
    Node l = tx.findNode(Schema.NODE, "id", r.left());
    Node g = tx.findNode(Schema.NODE, "id", r.group());
    Relationship m = l.createRelationshipTo(g, Schema.DERIVES);
    m.setProperty(Schema.MEMBER_KEY_PROPERTY, KEY);
    List<String> values = r.values();
    m.setProperty(
        Schema.MEMBER_VALUES,
        values.stream().map(v -> v == null ? "" : v).toArray(String[]::new));
    long[] nulls = java.util.stream.IntStream.range(0, values.size())
        .filter(i -> values.get(i) == null).mapToLong(i -> i).toArray();
    if (nulls.length > 0) {
      m.setProperty(Schema.MEMBER_NULLS, nulls);
    }
    m.setProperty(Schema.PAIR, pair(r.times(), r.group()));
    m.setProperty(Schema.TIMES, r.times());
    m.setProperty(Schema.PARTNER_PROPERTY, r.right());
    written.add(new Edge(r.left(), r.group()));
    rels.add(m.getId());
    if (r.right() != r.left()) {
      Node p = tx.findNode(Schema.NODE, "id", r.right());
      if (written.add(new Edge(r.right(), r.group()))) {
        rels.add(p.createRelationshipTo(g, Schema.PARTNER).getId());
      }
    }
  }

  /** The node blocks (TIMES nodes: {@code times}), the plain edges and the member block. */
  private void write(long theta, List<Long> times, List<long[]> edges, List<Row> members) {
    Map<String, Object> timesBlock = new HashMap<>(BlockMaps.nodes("TIMES", times, AGG));
    timesBlock.put("label", "·");
    timesBlock.put("relation", "");
    List<Map<String, Object>> blocks =
        List.of(
            BlockMaps.nodes("TOKEN", List.of(1L, 2L, 3L, 4L), LEFT),
            BlockMaps.nodes("TOKEN", List.of(11L, 12L, 13L, 14L), RIGHT),
            BlockMaps.nodes("DELTA", List.of(G1, G2), AGG),
            BlockMaps.nodes("AGGREGATE", aggregates(), AGG),
            BlockMaps.nodes("PLUS", List.of(OUT), AGG),
            timesBlock);
    Map<String, Object> block = new HashMap<>();
    block.put("run", BlockMaps.RUN);
    block.put("group_key", KEY);
    block.put("members", members.stream().map(Row::times).toList());
    block.put("groups", members.stream().map(Row::group).toList());
    block.put("pairs", members.stream().map(r -> pair(r.times(), r.group())).toList());
    block.put("aggregates", 2L);
    List<List<String>> values = new ArrayList<>();
    List<List<Long>> nulls = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      List<String> column = new ArrayList<>();
      List<Long> nullRows = new ArrayList<>();
      for (int k = 0; k < members.size(); k++) {
        String v = members.get(k).values().get(i);
        column.add(v == null ? "" : v);
        if (v == null) {
          nullRows.add((long) k);
        }
      }
      values.add(column);
      nulls.add(nullRows);
    }
    block.put("values", values);
    block.put("null_rows", nulls);
    neo4j.write(
        blocks, List.of(BlockMaps.edges(edges.toArray(long[][]::new))), theta, List.of(block));
  }

  private static List<long[]> plainEdges() {
    List<long[]> edges = new ArrayList<>();
    for (long g : List.of(G1, G2)) {
      for (int i = 0; i < 2; i++) {
        edges.add(new long[] {aggregate(g, i), g});
      }
      edges.add(new long[] {g, OUT});
    }
    return edges;
  }

  /** The folded store holds what the layout says: no folded TIMES node, PARTNERs once. */
  private void checkFoldedLayout() {
    assertEquals(
        List.of(104L, 107L),
        longs(neo4j.one(
            "MATCH (n:Node {op: 'TIMES'}) WITH n ORDER BY n.id RETURN collect(n.id)", Map.of())));
    assertEquals(
        List.of(
            List.of(11L, G1), List.of(11L, G2), List.of(12L, G2), List.of(13L, G2),
            List.of(14L, G1)),
        neo4j.one(
            "MATCH (r)-[:PARTNER]->(g) WITH r, g ORDER BY r.id, g.id"
                + " RETURN collect([r.id, g.id])",
            Map.of()));
  }

  // ---- The questions ----------------------------------------------------------------------------

  /** Every logical node: stored ones, TIMES nodes, members' TENSOR and VALUE nodes. */
  private static List<Long> logicalIds() {
    Set<Long> out = new TreeSet<>(List.of(1L, 2L, 3L, 4L, 5L, 11L, 12L, 13L, 14L, 15L, G1, G2, OUT));
    out.addAll(aggregates());
    for (Row r : ROWS) {
      out.add(r.times());
      for (int i = 0; i < 2; i++) {
        if (r.values().get(i) != null) {
          out.add(tensor(r.times(), r.group(), i));
          out.add(value(r.times(), r.group(), i));
        }
      }
    }
    return List.copyOf(out);
  }

  /** Every question's answer, comparable across the two stores. */
  private Map<String, Object> answers() {
    Map<String, Object> out = new LinkedHashMap<>();
    for (long id : logicalIds()) {
      for (String direction : List.of("BACKWARD", "FORWARD")) {
        for (String strategy : List.of("RECURSIVE", "COMPONENT", "CONNECTED_SET")) {
          Map<String, Object> row = trace(List.of(id), direction, strategy);
          assertEquals(List.of(), row.get("missing"), "trace " + id);
          assertEquals(strategy, row.get("strategy"));
          assertEquals(false, row.get("ids_pending"));
          assertFalse((Boolean) row.get("truncated"));
          out.put("trace " + direction + " " + strategy + " " + id, traceAnswer(row, id));
        }
      }
      Map<String, Object> sub = query(SUBGRAPH, Map.of("id", id));
      out.put("subgraph " + id, List.of(longs(sub.get("ids")), edges(sub), viewAnswer(sub)));
      Map<String, Object> deletion = delete(List.of(id));
      out.put("deletion " + id, List.of(deletion.get("removed"), deletion.get("aggregates")));
    }
    for (List<Long> seeds : List.of(List.of(11L, 12L), List.of(1L, 2L, 3L), List.of(4L, 13L))) {
      Map<String, Object> deletion = delete(seeds);
      out.put("deletion " + seeds, List.of(deletion.get("removed"), deletion.get("aggregates")));
    }
    out.putAll(logicalGraphAnswers());
    out.put("set dependencies", setDependencies());
    return out;
  }

  /**
   * The stored {@code SET_DEP} pairs, each set named by its nodes other than TIMES nodes (its
   * id is a union-find root, which differs between the stores).
   */
  private Set<String> setDependencies() {
    Set<String> out = new TreeSet<>();
    for (Map<String, Object> dep : neo4j.query(
        "MATCH (a:ConnectedSet)-[:SET_DEP]->(b:ConnectedSet) RETURN a.id AS a, b.id AS b",
        Map.of())) {
      out.add(setNodes(dep.get("a")) + " -> " + setNodes(dep.get("b")));
    }
    return out;
  }

  private Set<Long> setNodes(Object set) {
    return new TreeSet<>(longs(neo4j.one(
        "CALL sparkprov.setNodes($id) YIELD node WITH node WHERE node.op <> 'TIMES'"
            + " RETURN collect(node.id)",
        Map.of("id", set))));
  }

  /**
   * The logical graph's own answers: per stored node other than a TIMES node, the edges into
   * and out of its set and its component's edges, each edge once; and every logical node's view.
   */
  private Map<String, Object> logicalGraphAnswers() {
    Map<String, Object> out = new LinkedHashMap<>();
    try (Transaction tx = neo4j.db.beginTx()) {
      LogicalGraph graph = new LogicalGraph(tx);
      for (long id : List.of(1L, 2L, 3L, 4L, 5L, 11L, 12L, 13L, 14L, 15L, G1, G2, OUT)) {
        Node n = graph.stored(id);
        long set = graph.ids.set(n).id();
        out.put("edgesIntoSets " + id, once(graph.edgesIntoSets(List.of(set))));
        out.put("edgesOutOfSets " + id, once(graph.edgesOutOfSets(List.of(set))));
        out.put("componentEdges " + id, once(graph.componentEdges(graph.ids.component(n))));
      }
      List<Map<String, Object>> views = new ArrayList<>();
      for (long id : logicalIds()) {
        assertTrue(graph.exists(id), "exists " + id);
        out.put("op " + id, graph.op(id));
        views.add(graph.view(id));
      }
      out.put("views", viewAnswer(Map.of("nodes", views)));
    }
    return out;
  }

  /** The edges as a sorted list, checked to hold each edge once. */
  private static List<List<Long>> once(List<long[]> edges) {
    List<List<Long>> out = new ArrayList<>();
    edges.forEach(e -> out.add(List.of(e[0], e[1])));
    out.sort(Comparator.<List<Long>>comparingLong(e -> e.get(0)).thenComparingLong(e -> e.get(1)));
    assertEquals(new LinkedHashSet<>(out).size(), out.size(), "an edge twice: " + out);
    return out;
  }

  private Object traceAnswer(Map<String, Object> row, long seed) {
    List<Long> ids = longs(row.get("ids"));
    assertEquals(seed, ids.get(0));
    assertEquals(ids.size(), new TreeSet<>(ids).size(), "no id twice");
    return List.of(new TreeSet<>(ids), edges(row), viewAnswer(row));
  }

  /**
   * The views without their ids, and the partitions of the nodes by component and by set (the
   * ids are union-find roots, which differ between the stores).
   */
  @SuppressWarnings("unchecked")
  private static Object viewAnswer(Map<String, Object> row) {
    Map<Long, Map<String, Object>> plain = new TreeMap<>();
    Map<Object, Set<Long>> byComponent = new HashMap<>();
    Map<Object, Set<Long>> bySet = new HashMap<>();
    for (Map<String, Object> v : (List<Map<String, Object>>) row.get("nodes")) {
      long id = ((Number) v.get("id")).longValue();
      assertNotNull(v.get("component"), "component of " + id);
      assertNotNull(v.get("set"), "set of " + id);
      Map<String, Object> p = new TreeMap<>(v);
      p.remove("component");
      p.remove("set");
      plain.put(id, p);
      byComponent.computeIfAbsent(v.get("component"), k -> new TreeSet<>()).add(id);
      bySet.computeIfAbsent(v.get("set"), k -> new TreeSet<>()).add(id);
    }
    return List.of(plain, partition(byComponent), partition(bySet));
  }

  private static Set<String> partition(Map<Object, Set<Long>> groups) {
    Set<String> out = new TreeSet<>();
    groups.values().forEach(g -> out.add(g.toString()));
    return out;
  }

  private Map<Long, Map<String, Object>> views(Map<String, Object> row) {
    Map<Long, Map<String, Object>> out = new HashMap<>();
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> nodes = (List<Map<String, Object>>) row.get("nodes");
    nodes.forEach(v -> out.put(((Number) v.get("id")).longValue(), v));
    return out;
  }

  private Map<String, Object> trace(List<Long> ids, String direction, String strategy) {
    return query(TRACE, Map.of("ids", ids, "direction", direction, "strategy", strategy));
  }

  private Map<String, Object> delete(List<Long> ids) {
    Map<String, Object> row = query(DELETE, Map.of("ids", ids));
    assertEquals(List.of(), row.get("missing"));
    assertFalse((Boolean) row.get("truncated"));
    return row;
  }

  private Map<String, Object> query(String cypher, Map<String, Object> params) {
    List<Map<String, Object>> rows = neo4j.query(cypher, params);
    assertEquals(1, rows.size());
    return rows.get(0);
  }

  private static Set<List<Long>> edges(Map<String, Object> row) {
    List<Long> src = longs(row.get("sources"));
    List<Long> dst = longs(row.get("targets"));
    Set<List<Long>> out = new TreeSet<>(
        Comparator.<List<Long>>comparingLong(e -> e.get(0)).thenComparingLong(e -> e.get(1)));
    for (int k = 0; k < src.size(); k++) {
      assertTrue(out.add(List.of(src.get(k), dst.get(k))), "no edge twice");
    }
    return out;
  }

  private static List<Long> longs(Object o) {
    List<Long> out = new ArrayList<>();
    for (Object x : (List<?>) o) {
      out.add(((Number) x).longValue());
    }
    return out;
  }

  // ---- Derived ids (sparkprov/derived.py) -------------------------------------------------------

  private static List<Long> aggregates() {
    return List.of(aggregate(G1, 0), aggregate(G1, 1), aggregate(G2, 0), aggregate(G2, 1));
  }

  private static long aggregate(long group, int column) {
    return DerivedIds.derive(group, DerivedIds.salt(KEY, column, "aggregate"));
  }

  private static long pair(long member, long group) {
    return member ^ DerivedIds.derive(group, DerivedIds.salt(KEY, "member"));
  }

  private static long tensor(long member, long group, int column) {
    return DerivedIds.derive(pair(member, group), DerivedIds.salt(KEY, column, "tensor"));
  }

  private static long value(long member, long group, int column) {
    return DerivedIds.derive(pair(member, group), DerivedIds.salt(KEY, column, "value"));
  }
}
