package io.sparkprov.plugin.ids;

import static io.sparkprov.plugin.BlockMaps.edges;
import static io.sparkprov.plugin.BlockMaps.nodes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One filled node with more stored edges than an index call may take (a global aggregate's one
 * group, filled after its million members) is indexed in pages of its edges over several calls,
 * and the ids end as one transaction would leave them. Before, the indexer took all of the
 * node's edges in one call whatever its bound: at 1M members, past Neo4j's transaction memory,
 * so the ids never caught up.
 */
class HubPagesTest {
  private static final long THETA = 10; // the group's sets grow past it: refined by sub-splits
  private static final long MEMBERS = 39;
  private static final long HUB = 100;

  private EmbeddedNeo4j neo4j;

  @BeforeEach
  void empty() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
  }

  private static List<Map<String, Object>> members(long from, long to) {
    List<Long> ids = new ArrayList<>();
    List<long[]> pairs = new ArrayList<>();
    for (long m = from; m <= to; m++) {
      ids.add(m);
      pairs.add(new long[] {m, HUB});
    }
    return List.of(nodes("TOKEN", ids, "a", "x"), edges(pairs.toArray(new long[0][])));
  }

  /** The steps: members into the hub, the hub filled with an edge of its own, one member more. */
  private List<List<Map<String, Object>>> steps() {
    List<Map<String, Object>> first = members(1, MEMBERS);
    List<Map<String, Object>> hub =
        List.of(nodes("DELTA", List.of(HUB), "a"), nodes("TOKEN", List.of(200L), "a"),
            edges(new long[][] {{200, HUB}}));
    List<Map<String, Object>> late = members(MEMBERS + 1, MEMBERS + 1);
    return List.of(first, hub, late);
  }

  private void write(List<Map<String, Object>> step, boolean deferred) {
    List<Map<String, Object>> blocks = new ArrayList<>();
    List<Map<String, Object>> edgeBlocks = new ArrayList<>();
    for (Map<String, Object> block : step) {
      (block.containsKey("src") ? edgeBlocks : blocks).add(block);
    }
    if (deferred) {
      neo4j.writeDeferred(blocks, edgeBlocks, THETA);
    } else {
      neo4j.write(blocks, edgeBlocks, THETA);
    }
  }


  @Test
  void aHubFilledAfterItsEdgesIsIndexedInPagesOfItsEdges() {
    for (List<Map<String, Object>> step : steps()) {
      write(step, false);
    }
    Map<String, Set<Set<Object>>> kept = neo4j.idPartitions();
    neo4j.clear();

    neo4j.query("MERGE (:IdBarrier {name: 'ids'})", Map.of());
    List<List<Map<String, Object>>> steps = steps();
    write(steps.get(0), true);
    write(steps.get(1), true); // fills the hub: 39 stored edges, and its own edge
    assertEquals(MEMBERS, neo4j.index(MEMBERS).get("edges")); // the members' write, alone
    List<Map<String, Object>> calls = new ArrayList<>();
    for (int guard = 0; guard < 40; guard++) {
      Map<String, Object> row = neo4j.index(8);
      calls.add(row);
      if (calls.size() == 2) {
        write(steps.get(2), true); // a write behind the hub's pages waits for them
      }
      if ((Long) row.get("remaining") == 0) {
        break;
      }
    }

    // The fill and its own edge with 7 of the hub's edges, then 8 a call: 5 pages, then the
    // write after it.
    assertEquals(6, calls.size(), calls.toString());
    for (Map<String, Object> call : calls.subList(0, 4)) {
      assertEquals(0L, call.get("items"), calls.toString()); // no write finished yet
      assertEquals(List.of(), call.get("indexed_runs"));
      assertTrue((Long) call.get("edges") <= 9, calls.toString());
    }
    assertEquals(1L, calls.get(4).get("items"));
    assertEquals(8L, calls.get(4).get("edges"));
    assertEquals(1L, calls.get(5).get("items"));
    assertEquals(kept, neo4j.idPartitions());
  }
}
