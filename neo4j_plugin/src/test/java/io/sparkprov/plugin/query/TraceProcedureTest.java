package io.sparkprov.plugin.query;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.BlockMaps;
import io.sparkprov.plugin.EmbeddedNeo4j;
import io.sparkprov.plugin.graph.DerivedIds;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code sparkprov.trace} on a small graph written by {@code sparkprov.write}: tokens 1 and 2 are
 * members of group row 70 (one aggregated column, so each has a derived TENSOR and VALUE node
 * feeding AGGREGATE 80, which feeds 70), and 70 and token 3 feed 90. Every strategy must give the
 * logical graph's ancestors and descendants, derived nodes included.
 */
class TraceProcedureTest {
  private static final String KEY = "g#0";
  private static final String TRACE =
      "CALL sparkprov.trace($ids, $direction, $strategy, $depth, $limit)"
          + " YIELD missing, ids, nodes, sources, targets, truncated, strategy, levels, reached,"
          + " fetched, sets RETURN *";
  // AUTO allowed to fetch a whole component of at most $fetchMax nodes.
  private static final String TRACE_FETCHING =
      "CALL sparkprov.trace($ids, $direction, 'AUTO', 0, 100, true, $fetchMax)"
          + " YIELD strategy RETURN strategy";
  private static final List<String> STRATEGIES =
      List.of("RECURSIVE", "COMPONENT", "CONNECTED_SET", "AUTO");

  private static EmbeddedNeo4j neo4j;
  static final long AGGREGATE = DerivedIds.derive(70, DerivedIds.salt(KEY, 0, "aggregate"));
  static final long T1 = derived(1, "tensor");
  static final long V1 = derived(1, "value");
  static final long T2 = derived(2, "tensor");
  static final long V2 = derived(2, "value");

  @BeforeEach
  void emptyDatabase() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    writeGraph(neo4j);
  }

  /** The graph of the class comment (also DeletionProcedureTest's). */
  static void writeGraph(EmbeddedNeo4j neo4j) {
    List<Map<String, Object>> blocks =
        List.of(
            BlockMaps.nodes("TOKEN", List.of(1L, 2L, 3L)),
            BlockMaps.nodes("DELTA", List.of(70L)),
            BlockMaps.nodes("AGGREGATE", List.of(AGGREGATE)),
            BlockMaps.nodes("PLUS", List.of(90L)));
    Map<String, Object> edges =
        BlockMaps.edges(new long[][] {{AGGREGATE, 70}, {70, 90}, {3, 90}});
    Map<String, Object> members = new HashMap<>();
    members.put("run", "run-1");
    members.put("group_key", KEY);
    members.put("members", List.of(1L, 2L));
    members.put("groups", List.of(70L, 70L));
    members.put("pairs", List.of(pair(1), pair(2)));
    members.put("aggregates", 1L);
    members.put("values", List.of(List.of("10", "20")));
    members.put("null_rows", List.of(List.of()));
    neo4j.write(blocks, List.of(edges), 25000, List.of(members));
  }

  @Test
  void backwardTraceHoldsTheDerivedMemberNodes() {
    Set<List<Long>> expected =
        Set.of(
            List.of(70L, 90L), List.of(3L, 90L), List.of(1L, 70L), List.of(2L, 70L),
            List.of(AGGREGATE, 70L), List.of(T1, AGGREGATE), List.of(T2, AGGREGATE),
            List.of(1L, T1), List.of(V1, T1), List.of(2L, T2), List.of(V2, T2));
    for (String strategy : STRATEGIES) {
      Map<String, Object> row = trace(List.of(90L), "BACKWARD", strategy, 0, 100);
      assertEquals(Set.of(90L, 70L, 3L, 1L, 2L, AGGREGATE, T1, T2, V1, V2), idSet(row), strategy);
      assertEquals(90L, ids(row).get(0));
      assertEquals(expected, edges(row), strategy);
      assertFalse((Boolean) row.get("truncated"));
    }
  }

  @Test
  void forwardTracesFromAMemberAndFromADerivedValue() {
    Set<List<Long>> fromMember =
        Set.of(List.of(1L, 70L), List.of(1L, T1), List.of(T1, AGGREGATE), List.of(AGGREGATE, 70L),
            List.of(70L, 90L));
    for (String strategy : STRATEGIES) {
      Map<String, Object> row = trace(List.of(1L), "FORWARD", strategy, 0, 100);
      assertEquals(Set.of(1L, 70L, T1, AGGREGATE, 90L), idSet(row), strategy);
      assertEquals(fromMember, edges(row), strategy);
      row = trace(List.of(V1), "FORWARD", strategy, 0, 100);
      assertEquals(Set.of(V1, T1, AGGREGATE, 70L, 90L), idSet(row), strategy);
      row = trace(List.of(T2), "BACKWARD", strategy, 0, 100);
      assertEquals(Set.of(T2, 2L, V2), idSet(row), strategy);
    }
  }

  @Test
  void derivedNodesHaveTheirMembersViews() {
    Map<String, Object> row = trace(List.of(T1), "BACKWARD", "RECURSIVE", 0, 100);
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> nodes = (List<Map<String, Object>>) row.get("nodes");
    Map<Long, Map<String, Object>> byId = new HashMap<>();
    nodes.forEach(n -> byId.put((Long) n.get("id"), n));
    assertEquals("TENSOR", byId.get(T1).get("op"));
    assertEquals("⊗", byId.get(T1).get("label"));
    assertEquals("VALUE", byId.get(V1).get("op"));
    assertEquals("10", byId.get(V1).get("value"));
    assertEquals("run-1", byId.get(V1).get("run_id"));
    assertEquals(byId.get(1L).get("component"), byId.get(T1).get("component"));
    assertEquals(byId.get(1L).get("set"), byId.get(V1).get("set"));
    assertEquals("TOKEN", byId.get(1L).get("op"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"RECURSIVE", "COMPONENT", "CONNECTED_SET", "AUTO"})
  void depthBoundAndLimit(String strategy) {
    Map<String, Object> one = trace(List.of(90L), "BACKWARD", strategy, 1, 100);
    assertEquals(Set.of(90L, 70L, 3L), idSet(one));
    assertEquals(Set.of(List.of(70L, 90L), List.of(3L, 90L)), edges(one));
    assertEquals(1L, one.get("levels"));
    assertFalse((Boolean) one.get("truncated"));

    Map<String, Object> cut = trace(List.of(90L), "BACKWARD", strategy, 0, 3);
    assertTrue((Boolean) cut.get("truncated"));
    assertEquals(Set.of(90L, 70L, 3L), idSet(cut)); // the first level only: it reached 3 nodes
    assertEquals(6L, cut.get("reached"));
    assertEquals(2L, cut.get("levels"));
  }

  @Test
  void unknownIdsAreReportedMissing() {
    Map<String, Object> row = trace(List.of(90L, 999L), "BACKWARD", "AUTO", 0, 100);
    assertEquals(List.of(999L), row.get("missing"));
    assertEquals(List.of(), row.get("ids"));
    assertEquals(List.of(), trace(List.of(V2), "BACKWARD", "AUTO", 0, 100).get("missing"));
  }

  @Test
  void autoNamesTheStrategyThatRan() {
    // By default AUTO runs RECURSIVE, as the gRPC service's AUTO (traces.AUTO_FETCH_MAX = 0).
    assertEquals("RECURSIVE", trace(List.of(90L), "BACKWARD", "AUTO", 0, 100).get("strategy"));
    Map<String, Object> fetching =
        neo4j
            .query(
                TRACE_FETCHING,
                Map.of("ids", List.of(90L), "direction", "BACKWARD", "fetchMax", 2000L))
            .get(0);
    assertEquals("COMPONENT", fetching.get("strategy"));
    assertEquals("RECURSIVE", trace(List.of(90L), "BACKWARD", "AUTO", 2, 100).get("strategy"));
    Map<String, Object> cs = trace(List.of(90L), "BACKWARD", "CONNECTED_SET", 0, 100);
    assertEquals(1L, cs.get("sets"));
  }

  @Test
  void badArgumentsFail() {
    assertThrows(RuntimeException.class, () -> trace(List.of(90L), "UP", "AUTO", 0, 100));
    assertThrows(RuntimeException.class, () -> trace(List.of(90L), "BACKWARD", "BFS", 0, 100));
    assertThrows(RuntimeException.class, () -> trace(List.of(), "BACKWARD", "AUTO", 0, 100));
  }

  private static Map<String, Object> trace(
      List<Long> ids, String direction, String strategy, long depth, long limit) {
    List<Map<String, Object>> rows =
        neo4j.query(
            TRACE,
            Map.of(
                "ids", ids, "direction", direction, "strategy", strategy, "depth", depth, "limit",
                limit));
    assertEquals(1, rows.size());
    return rows.get(0);
  }

  @SuppressWarnings("unchecked")
  private static List<Long> ids(Map<String, Object> row) {
    return (List<Long>) row.get("ids");
  }

  private static Set<Long> idSet(Map<String, Object> row) {
    List<Long> ids = ids(row);
    assertEquals(ids.size(), new TreeSet<>(ids).size(), "no id twice");
    return new TreeSet<>(ids);
  }

  @SuppressWarnings("unchecked")
  private static Set<List<Long>> edges(Map<String, Object> row) {
    List<Long> src = (List<Long>) row.get("sources");
    List<Long> dst = (List<Long>) row.get("targets");
    List<List<Long>> out = new ArrayList<>();
    for (int k = 0; k < src.size(); k++) {
      out.add(List.of(src.get(k), dst.get(k)));
    }
    Set<List<Long>> set = Set.copyOf(out);
    assertEquals(out.size(), set.size(), "no edge twice");
    return set;
  }

  private static long pair(long member) {
    return member ^ DerivedIds.derive(70, DerivedIds.salt(KEY, "member"));
  }

  private static long derived(long member, String kind) {
    return DerivedIds.derive(pair(member), DerivedIds.salt(KEY, 0, kind));
  }
}
