package io.sparkprov.plugin.ids;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.BlockMaps;
import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.neo4j.graphdb.Transaction;

/**
 * A deferred write is queryable before it is indexed (../shared/MODEL.md section 6): traces
 * answer over all of it at once; a strategy that reads ids runs RECURSIVE instead and says so,
 * node views and the id functions show no ids (pending, not stale); once the indexer ran, the
 * ids are current and every strategy runs as asked.
 */
class IdsBehindTheDataTest {
  private static final String TRACE =
      "CALL sparkprov.trace($ids, 'BACKWARD', $strategy, 0, 100)"
          + " YIELD ids, nodes, strategy, ids_pending RETURN *";
  private EmbeddedNeo4j neo4j;

  @BeforeEach
  void deferredChain() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    // 1 -> 2 -> 3, and 4 -> 3; in two writes, the second filling the placeholder 3.
    neo4j.writeDeferred(
        List.of(BlockMaps.nodes("TOKEN", List.of(1L, 4L)),
            BlockMaps.nodes("PLUS", List.of(2L))),
        List.of(BlockMaps.edges(new long[][] {{1, 2}, {2, 3}, {4, 3}})),
        25000);
    neo4j.writeDeferred(
        List.of(BlockMaps.nodes("TIMES", List.of(3L))), List.of(), 25000);
  }

  @Test
  void tracesAnswerBeforeTheIdsAndSaySo() {
    assertEquals(2L, neo4j.query("MATCH (w:IdWork) RETURN count(w) AS n", Map.of()).get(0)
        .get("n"));
    for (String strategy : List.of("COMPONENT", "CONNECTED_SET")) {
      Map<String, Object> row = trace(strategy);
      assertEquals(Set.of(1L, 2L, 3L, 4L), ids(row), strategy);
      assertEquals("RECURSIVE", row.get("strategy"), strategy);
      assertEquals(true, row.get("ids_pending"), strategy);
      for (Object n : (List<?>) row.get("nodes")) {
        assertNull(((Map<?, ?>) n).get("component"), strategy);
        assertNull(((Map<?, ?>) n).get("set"), strategy);
      }
    }
    assertEquals(false, trace("RECURSIVE").get("ids_pending"));
    Map<String, Object> f =
        neo4j.query("MATCH (n:Node {id: 3}) RETURN sparkprov.component(n) AS c,"
            + " sparkprov.set(n) AS s, sparkprov.idsPending() AS p", Map.of()).get(0);
    assertNull(f.get("c"));
    assertNull(f.get("s"));
    assertEquals(true, f.get("p"));
  }

  @Test
  void theIndexerYieldsToRecentWrites() {
    Map<String, Object> yielded = neo4j.index(50_000, 60_000); // the writes are a moment old
    assertEquals(0L, yielded.get("items"));
    assertEquals(2L, yielded.get("remaining"));
    assertEquals(0L, neo4j.index(50_000, 0).get("remaining"));
  }

  @Test
  void theIndexerMakesTheIdsCurrentAndTheStrategiesRunAsAsked() {
    Map<String, Object> first = neo4j.index(2); // the first write only: 3 edges
    assertEquals(1L, first.get("items"));
    assertEquals(1L, first.get("remaining"));
    assertEquals(List.of(), first.get("indexed_runs")); // the run has work left
    Map<String, Object> second = neo4j.index(50_000);
    assertEquals(0L, second.get("remaining"));
    assertEquals(List.of(BlockMaps.RUN), second.get("indexed_runs"));
    for (String strategy : List.of("COMPONENT", "CONNECTED_SET")) {
      Map<String, Object> row = trace(strategy);
      assertEquals(Set.of(1L, 2L, 3L, 4L), ids(row), strategy);
      assertEquals(strategy, row.get("strategy"));
      assertFalse((Boolean) row.get("ids_pending"));
    }
    List<Map<String, Object>> components =
        neo4j.query("MATCH (n:Node) RETURN DISTINCT sparkprov.component(n) AS c", Map.of());
    assertEquals(1, components.size());
    assertTrue(components.get(0).get("c") != null);
  }

  @Test
  void aCallThatRollsBackLeavesItsWritesWaiting() {
    // A call whose transaction rolls back deleted nothing: the next call finds both writes
    // again, and a later call also the write recorded after them.
    try (Transaction tx = neo4j.db.beginTx()) {
      Map<String, Object> row =
          tx.execute("CALL sparkprov.index(2, 0) YIELD items, remaining RETURN *").next();
      assertEquals(1L, row.get("items"));
      assertEquals(1L, row.get("remaining"));
      tx.rollback();
    }
    Map<String, Object> first = neo4j.index(2);
    assertEquals(1L, first.get("items"));
    assertEquals(1L, first.get("remaining"));
    // A third write, recorded after the calls.
    neo4j.writeDeferred(
        List.of(BlockMaps.nodes("TOKEN", List.of(5L))),
        List.of(BlockMaps.edges(new long[][] {{5, 3}})),
        25000);
    Map<String, Object> rest = neo4j.index(50_000);
    assertEquals(2L, rest.get("items"));
    assertEquals(0L, rest.get("remaining"));
    List<Map<String, Object>> components =
        neo4j.query("MATCH (n:Node) RETURN DISTINCT sparkprov.component(n) AS c", Map.of());
    assertEquals(1, components.size());
  }

  private Map<String, Object> trace(String strategy) {
    return neo4j.query(TRACE, Map.of("ids", List.of(3L), "strategy", strategy)).get(0);
  }

  private static Set<Long> ids(Map<String, Object> row) {
    Set<Long> out = new TreeSet<>();
    for (Object o : (List<?>) row.get("ids")) {
      out.add(((Number) o).longValue());
    }
    return out;
  }
}
