package io.sparkprov.plugin.ids;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.EmbeddedNeo4j;
import io.sparkprov.plugin.ids.IdsPropertyTest.Edge;
import io.sparkprov.plugin.ids.IdsPropertyTest.Flush;
import io.sparkprov.plugin.ids.IdsPropertyTest.Scenario;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Member edges (the write package's {@code MemberBlock}) are ordinary DERIVES edges for the ids:
 * {@link IdsPropertyTest}'s random flushes are written twice, once with a third of their edges
 * sent as member blocks and once with every edge in edge blocks, and after every flush the two
 * stores must agree on every node's component and set, the {@code :Component} and {@code
 * :ConnectedSet} records, the {@code SET_DEP} pairs and the merges reported. (IdsPropertyTest
 * checks the second against the from-scratch model.)
 */
class MemberEdgesIdsTest {

  /** What the ids of a store are after one flush, comparable across stores. */
  record Snapshot(
      long merges,
      Map<Long, Long> component,
      Map<Long, Long> set,
      Set<List<Long>> componentRecords,
      Set<List<Long>> setRecords,
      Set<List<Long>> setDeps) {}

  private EmbeddedNeo4j neo4j;
  // The nodes and edges the calls of one writeAll reported.
  private long reportedNodes;
  private long reportedEdges;

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1L, 17L, 20260611L})
  void memberEdgesJoinIdsAsTheSameEdgesInAnEdgeBlock(long seed) throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    Scenario scenario = new Scenario(seed);
    List<Snapshot> asMembers = writeAll(scenario, true);
    checkLogicalCounts();
    neo4j = EmbeddedNeo4j.shared(); // emptied
    List<Snapshot> asEdges = writeAll(scenario, false);

    for (int f = 0; f < asEdges.size(); f++) {
      assertEquals(asEdges.get(f), asMembers.get(f), "seed " + seed + ", flush " + f);
    }
    assertTrue(
        asMembers.get(asMembers.size() - 1).setDeps().size() > 0, "the scenario has dependencies");
  }

  /**
   * The calls reported each stored node and edge once, whatever was re-sent: a member edge as the
   * logical TENSOR and VALUE nodes and the edges it stands for.
   */
  private void checkLogicalCounts() {
    Map<String, Object> stored =
        neo4j.query(
            "MATCH ()-[r:DERIVES]->()"
                + " WITH r.member_key IS NOT NULL AS member,"
                + " size(coalesce(r.member_values, []))"
                + " - size(coalesce(r.member_nulls, [])) AS present"
                + " RETURN sum(CASE WHEN member THEN 1 ELSE 0 END) AS members,"
                + " sum(CASE WHEN member THEN 1 + 3 * present ELSE 1 END) AS edges,"
                + " sum(CASE WHEN member THEN 2 * present ELSE 0 END) AS valueNodes",
            Map.of())
            .get(0);
    long known =
        (Long) neo4j.one("MATCH (n:Node) WHERE n.op IS NOT NULL RETURN count(n)", Map.of());
    assertTrue(asLong(stored.get("members")) > 0, "some edges were sent as members");
    assertEquals(asLong(stored.get("edges")), reportedEdges, "logical edges reported");
    assertEquals(known + asLong(stored.get("valueNodes")), reportedNodes, "logical nodes reported");
  }

  /** Whether the scenario's edge goes into a member block (a third of them, by its ends). */
  private static boolean isMember(Edge e) {
    return (e.src() + e.dst()) % 3 == 0;
  }

  private List<Snapshot> writeAll(Scenario s, boolean members) {
    reportedNodes = 0;
    reportedEdges = 0;
    List<Snapshot> out = new ArrayList<>();
    for (Flush flush : s.flushes) {
      List<Map<String, Object>> rows;
      if (members) {
        List<Edge> plain = flush.edges().stream().filter(e -> !isMember(e)).toList();
        List<Edge> grouped = flush.edges().stream().filter(MemberEdgesIdsTest::isMember).toList();
        rows =
            neo4j.write(
                s.blocks(flush),
                s.edgeBlocks(new Flush(flush.nodes(), plain)),
                s.theta,
                memberBlocks(s, grouped));
      } else {
        rows = neo4j.write(s.blocks(flush), s.edgeBlocks(flush), s.theta);
      }
      for (Map<String, Object> row : rows) {
        reportedNodes += asLong(row.get("nodes"));
        reportedEdges += asLong(row.get("edges"));
      }
      out.add(snapshot(rows));
    }
    return out;
  }

  /** Two member blocks (two group keys, by the group's index), two aggregates, some nulls. */
  private static List<Map<String, Object>> memberBlocks(Scenario s, List<Edge> edges) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (int key = 0; key < 2; key++) {
      List<Long> members = new ArrayList<>();
      List<Long> groups = new ArrayList<>();
      List<Long> pairs = new ArrayList<>();
      List<List<String>> values = List.of(new ArrayList<>(), new ArrayList<>());
      List<List<Long>> nulls = List.of(new ArrayList<>(), new ArrayList<>());
      for (Edge e : edges) {
        if (e.dst() % 2 != key) {
          continue;
        }
        long position = members.size();
        members.add(s.ids.get(e.src()));
        groups.add(s.ids.get(e.dst()));
        pairs.add((long) e.src());
        for (int i = 0; i < 2; i++) {
          boolean isNull = (e.src() * 7 + i) % 5 == 0;
          values.get(i).add(isNull ? "" : "v" + e.src() + "." + i);
          if (isNull) {
            nulls.get(i).add(position);
          }
        }
      }
      out.add(
          Map.of(
              "run", s.run, "group_key", "key-" + key, "members", members, "groups", groups,
              "pairs", pairs, "aggregates", 2L, "values", values, "null_rows", nulls));
    }
    return out;
  }

  private Snapshot snapshot(List<Map<String, Object>> rows) {
    long merges = rows.isEmpty() ? 0 : asLong(rows.get(0).get("merges"));
    Map<Long, Long> component = new TreeMap<>();
    Map<Long, Long> set = new TreeMap<>();
    for (Map<String, Object> r :
        neo4j.query(
            "MATCH (n:Node) RETURN n.id AS id, sparkprov.component(n) AS c,"
                + " CASE WHEN n.op IS NULL THEN null ELSE sparkprov.set(n) END AS s",
            Map.of())) {
      component.put(asLong(r.get("id")), asLong(r.get("c")));
      if (r.get("s") != null) {
        set.put(asLong(r.get("id")), asLong(r.get("s")));
      }
    }
    return new Snapshot(
        merges,
        component,
        set,
        tuples("MATCH (c:Component) RETURN [c.id, c.size, c.parent] AS t"),
        tuples("MATCH (s:ConnectedSet) RETURN [s.id, s.level, s.size] AS t"),
        tuples("MATCH (a:ConnectedSet)-[:SET_DEP]->(b:ConnectedSet) RETURN [a.id, b.id] AS t"));
  }

  /** The rows of a query returning one list {@code t} each, as a sorted set. */
  private Set<List<Long>> tuples(String cypher) {
    Set<List<Long>> out = new TreeSet<>(MemberEdgesIdsTest::compare);
    for (Map<String, Object> r : neo4j.query(cypher, Map.of())) {
      List<Long> t = new ArrayList<>();
      for (Object o : (List<?>) r.get("t")) {
        t.add(o == null ? null : asLong(o));
      }
      out.add(t);
    }
    return out;
  }

  private static int compare(List<Long> a, List<Long> b) {
    for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
      int c = a.get(i) == null || b.get(i) == null
          ? Boolean.compare(a.get(i) != null, b.get(i) != null)
          : Long.compare(a.get(i), b.get(i));
      if (c != 0) {
        return c;
      }
    }
    return Integer.compare(a.size(), b.size());
  }

  private static long asLong(Object o) {
    return ((Number) o).longValue();
  }
}
