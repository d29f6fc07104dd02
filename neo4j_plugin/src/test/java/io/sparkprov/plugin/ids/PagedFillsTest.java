package io.sparkprov.plugin.ids;

import static io.sparkprov.plugin.BlockMaps.edges;
import static io.sparkprov.plugin.BlockMaps.nodes;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A write that fills hubs (groups whose members were stored first, as an aggregation's groups
 * arrive after their members) weighs the edges of the nodes it fills: the indexer takes its
 * fills in pages over several calls, within its bound, and the ids end as if one transaction
 * had kept them. Before, one call took every edge of every node the write filled (at 1M rows,
 * ~830k member edges of 37 groups), past Neo4j's transaction memory, and never finished.
 */
class PagedFillsTest {
  private static final long THETA = 10; // the groups' sets grow past it: refined by sub-splits
  private static final long MEMBERS = 40;

  private EmbeddedNeo4j neo4j;

  @BeforeEach
  void empty() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
  }

  /** Members 1..40 into groups 100 (odd) and 101 (even), and the group 100 -> 101. */
  private static List<Map<String, Object>> memberEdges() {
    List<long[]> pairs = new ArrayList<>();
    for (long m = 1; m <= MEMBERS; m++) {
      pairs.add(new long[] {m, m % 2 == 1 ? 100 : 101});
    }
    pairs.add(new long[] {100, 101});
    return List.of(edges(pairs.toArray(new long[0][])));
  }

  private static List<Map<String, Object>> members() {
    List<Long> ids = new ArrayList<>();
    for (long m = 1; m <= MEMBERS; m++) {
      ids.add(m);
    }
    return List.of(nodes("TOKEN", ids, "a", "x"));
  }

  private static List<Map<String, Object>> groups() {
    return List.of(nodes("DELTA", List.of(100L, 101L), "a"));
  }


  @Test
  void aWriteThatFillsHubsIsIndexedInPagesAndTheIdsAreThoseOfOneTransaction() {
    neo4j.write(members(), memberEdges(), THETA);
    neo4j.write(groups(), List.of(), THETA);
    Map<String, Set<Set<Object>>> kept = neo4j.idPartitions();
    neo4j.clear();

    neo4j.query("MERGE (:IdBarrier {name: 'ids'})", Map.of());
    neo4j.writeDeferred(members(), memberEdges(), THETA);
    neo4j.writeDeferred(groups(), List.of(), THETA); // fills 100 and 101: 21 edges each
    List<Map<String, Object>> calls = new ArrayList<>();
    for (int guard = 0; guard < 20; guard++) {
      Map<String, Object> row = neo4j.index(25); // one group's 21 edges fit, not both groups'
      calls.add(row);
      if ((Long) row.get("remaining") == 0) {
        break;
      }
    }

    // The members' write in one call (a write's edges are not split); its fills in two (a fill
    // whose edges alone are past the bound is paged by its edges: HubPagesTest).
    assertEquals(3, calls.size(), calls.toString());
    assertEquals(1L, calls.get(1).get("remaining")); // 101 still waits: the run is not indexed
    assertEquals(List.of(), calls.get(1).get("indexed_runs"));
    assertEquals(0L, calls.get(2).get("remaining"));
    assertEquals(kept, neo4j.idPartitions());
  }
}
