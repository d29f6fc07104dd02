package io.sparkprov.plugin.ids;

import static io.sparkprov.plugin.BlockMaps.edges;
import static io.sparkprov.plugin.BlockMaps.nodes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A set that grows past theta is refined: its members and their edges are read again. Sets of
 * like size grow past it in the same call (an aggregation's 37 groups at 3M rows: 971k edges
 * re-read in one call; past Neo4j's heap at 10M). A call of several writes whose refinement
 * would re-read more than its bound allows is refused and rolls back; called again with fewer
 * edges (one write is never refused) the ids end as one transaction would leave them.
 */
class RefinementBoundTest {
  private static final long THETA = 30;
  private static final long HUB = 100;

  private EmbeddedNeo4j neo4j;

  @BeforeEach
  void empty() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
  }

  /** Members {@code from..to} of the hub, with the hub itself when {@code hub}. */
  private void write(long from, long to, boolean hub, boolean deferred) {
    List<Long> ids = new ArrayList<>();
    List<long[]> pairs = new ArrayList<>();
    for (long m = from; m <= to; m++) {
      ids.add(m);
      pairs.add(new long[] {m, HUB});
    }
    List<Map<String, Object>> blocks = new ArrayList<>();
    blocks.add(nodes("TOKEN", ids, "a", "x")); // deeper than the hub: its set can be refined
    if (hub) {
      blocks.add(nodes("DELTA", List.of(HUB), "a"));
    }
    List<Map<String, Object>> edgeBlocks = List.of(edges(pairs.toArray(new long[0][])));
    if (deferred) {
      neo4j.writeDeferred(blocks, edgeBlocks, THETA);
    } else {
      neo4j.write(blocks, edgeBlocks, THETA);
    }
  }

  private void writeAll(boolean deferred) {
    write(1, 28, true, deferred); // a set of 29: under theta
    write(29, 29, false, deferred); // 30: past it
    write(30, 30, false, deferred);
  }


  @Test
  void aCallWhoseRefinementIsPastItsBoundIsRefusedAndSmallerCallsEndExact() {
    writeAll(false);
    Map<String, Set<Set<Object>>> kept = neo4j.idPartitions();
    assertTrue(kept.get("set").size() > 2, "the set was refined: " + kept);
    neo4j.clear();

    neo4j.query("MERGE (:IdBarrier {name: 'ids'})", Map.of());
    writeAll(true);
    assertEquals(2L, neo4j.index(28).get("remaining")); // the first write: a set under theta
    // Both others in one call of 2 edges: the set grows past theta, ~60 edges to re-read, over
    // the bound of 16.
    Exception refused = assertThrows(Exception.class, () -> neo4j.index(2));
    assertTrue(
        String.valueOf(refused.getMessage()).contains(RefinementTooLarge.MARK)
            || String.valueOf(refused.getCause()).contains(RefinementTooLarge.MARK),
        String.valueOf(refused));
    Map<String, Object> one = neo4j.index(1); // one write: never refused
    assertEquals(1L, one.get("items"));
    assertEquals(1L, one.get("remaining"));
    assertEquals(0L, neo4j.index(1).get("remaining"));
    assertEquals(kept, neo4j.idPartitions());
  }
}
