package io.sparkprov.plugin.write;

import static io.sparkprov.plugin.BlockMaps.RUN;
import static io.sparkprov.plugin.BlockMaps.edges;
import static io.sparkprov.plugin.BlockMaps.nodes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code sparkprov.write} with {@code tx_records}: a call cut into {@link Slice}s, each its own
 * transaction, stores what the call in one transaction stores, and counts it on the run.
 */
class SlicedWriteTest {
  private static final long THETA = 25000;
  private static final String WRITE =
      "CALL sparkprov.write($blocks, $edges, $theta, $members, $defer, $tx)"
          + " YIELD run, nodes, edges, merges, conflict_blocks, conflict_ids"
          + " RETURN run, nodes, edges, merges, conflict_blocks, conflict_ids";

  private EmbeddedNeo4j neo4j;

  @BeforeEach
  void emptyDatabase() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
  }

  // ---- Cutting ------------------------------------------------------------------------------

  /** Two TOKENs with attribute {@code a} (the second null) and their own labels and values. */
  private static Map<String, Object> tokens(List<Long> ids) {
    Map<String, Object> block = new HashMap<>(nodes("TOKEN", ids));
    List<String> labels = new ArrayList<>();
    List<String> values = new ArrayList<>();
    List<String> column = new ArrayList<>();
    for (long id : ids) {
      labels.add("t" + id);
      values.add("v" + id);
      column.add(id % 2 == 0 ? "" : "a" + id);
    }
    List<Long> nulls = new ArrayList<>();
    for (int i = 0; i < ids.size(); i++) {
      if (ids.get(i) % 2 == 0) {
        nulls.add((long) i);
      }
    }
    block.put("labels", labels);
    block.put("values", values);
    block.put("attribute_names", List.of("a"));
    block.put("attribute_values", List.of(column));
    block.put("null_rows", List.of(nulls));
    return block;
  }

  /** Entries of a slice: node ids, members and edges. */
  private static long records(Slice s) {
    long n = 0;
    for (NodeBlock b : s.blocks()) {
      n += b.size();
    }
    for (MemberBlock b : s.members()) {
      n += b.size();
    }
    for (EdgeBlock b : s.edges()) {
      n += b.size();
    }
    return n;
  }

  @Test
  void aCallIsCutInOrderIntoSlicesOfAtMostTheRecordsAsked() {
    List<NodeBlock> blocks =
        NodeBlock.parseAll(List.of(tokens(List.of(1L, 2L, 3L)), nodes("PLUS", List.of(4L, 5L))));
    List<EdgeBlock> edgeBlocks =
        EdgeBlock.parseAll(List.of(edges(new long[][] {{1, 4}, {2, 4}, {3, 5}})));

    List<Slice> slices = Slice.cut(blocks, List.of(), edgeBlocks, 2);

    assertEquals(4, slices.size()); // 5 nodes and 3 edges, 2 a slice
    for (Slice s : slices) {
      assertTrue(records(s) <= 2, "a slice of " + records(s));
    }
    List<Long> ids = new ArrayList<>();
    List<Integer> positions = new ArrayList<>();
    List<Long> src = new ArrayList<>();
    for (Slice s : slices) {
      s.blocks().forEach(b -> ids.addAll(Arrays.stream(b.ids()).boxed().toList()));
      positions.addAll(s.positions());
      s.edges().forEach(b -> src.addAll(Arrays.stream(b.src()).boxed().toList()));
    }
    assertEquals(List.of(1L, 2L, 3L, 4L, 5L), ids);
    // [1, 2] | [3] of block 0 and [4] of block 1 | [5] of block 1 and an edge | two edges
    assertEquals(List.of(0, 0, 1, 1), positions);
    assertEquals(List.of(1L, 2L, 3L), src);
  }

  @Test
  void aNodeBlockSliceKeepsEachNodesLabelValueAndNulls() {
    NodeBlock block = NodeBlock.parse(tokens(List.of(11L, 12L, 13L, 14L)), 0);

    NodeBlock tail = block.slice(1, 4);

    assertArrayEquals(new long[] {12, 13, 14}, tail.ids());
    assertEquals("t13", tail.labelOf(1));
    assertEquals(List.of("v12", "v13", "v14"), tail.values());
    assertTrue(tail.isNull(0, 0)); // 12
    assertEquals("a13", tail.attributeValues().get(0).get(1));
    assertTrue(!tail.isNull(0, 1) && tail.isNull(0, 2)); // 13 has a value, 14 none
  }

  @Test
  void emptyBlocksStayInTheCut() {
    List<NodeBlock> blocks = NodeBlock.parseAll(List.of(nodes("TOKEN", List.of())));

    List<Slice> slices = Slice.cut(blocks, List.of(), List.of(), 1000);

    assertEquals(1, slices.size());
    assertEquals(1, slices.get(0).blocks().size()); // it still names its run
  }

  @Test
  void aSizeBelowOneIsRefused() {
    assertThrows(
        IllegalArgumentException.class, () -> Slice.cut(List.of(), List.of(), List.of(), 0));
  }

  // ---- Writing ------------------------------------------------------------------------------

  private List<Map<String, Object>> write(
      List<?> blocks, List<?> edgeBlocks, List<?> members, boolean defer, long tx) {
    return neo4j.query(
        WRITE,
        Map.of(
            "blocks", blocks, "edges", edgeBlocks, "theta", THETA, "members", members,
            "defer", defer, "tx", tx));
  }

  /** A graph of tokens, a PLUS per pair, member edges into a DELTA group, one id reused. */
  private static List<List<?>> flush() {
    List<Map<String, Object>> blocks =
        List.of(
            tokens(List.of(1L, 2L, 3L, 4L, 5L)),
            nodes("PLUS", List.of(10L, 11L)),
            nodes("DELTA", List.of(20L)));
    List<Map<String, Object>> edgeBlocks =
        List.of(edges(new long[][] {{1, 10}, {2, 10}, {3, 11}, {4, 11}, {10, 30}}));
    List<Map<String, Object>> members =
        List.of(
            WriteProcedureTest.members(
                "g#0",
                new long[][] {{10, 20}, {11, 20}, {5, 20}},
                List.of(List.of("1.5", "", "3.5"), List.of("a", "b", "c")),
                List.of(List.of(1L), List.of())));
    return List.of(blocks, edgeBlocks, members);
  }

  /** Stored properties as values equals() compares: arrays as lists or texts. */
  private static Map<String, Object> comparable(Object properties) {
    @SuppressWarnings("unchecked")
    Map<String, Object> p = new TreeMap<>((Map<String, Object>) properties);
    p.replaceAll((k, v) -> v instanceof Object[] a ? List.of(a) : v);
    p.replaceAll((k, v) -> v instanceof long[] a ? Arrays.toString(a) : v);
    return p;
  }

  /** Every node's and edge's stored properties (ids kept beside the data left out), by id. */
  private Map<String, Object> stored() {
    Map<String, Object> out = new TreeMap<>();
    for (Map<String, Object> row :
        neo4j.query(
            "MATCH (n:Node) RETURN n.id AS id, properties(n) AS p, sparkprov.component(n) AS c",
            Map.of())) {
      Map<String, Object> p = comparable(row.get("p"));
      p.keySet().removeIf(k -> k.equals("component_id") || k.matches("s\\d"));
      out.put("node " + row.get("id"), p);
    }
    for (Map<String, Object> row :
        neo4j.query(
            "MATCH (a:Node)-[r:DERIVES]->(b:Node) RETURN a.id AS a, b.id AS b,"
                + " properties(r) AS p",
            Map.of())) {
      out.put("edge " + row.get("a") + "->" + row.get("b"), comparable(row.get("p")));
    }
    return out;
  }

  /** The partition of the nodes by their resolved component id. */
  private Set<Set<Object>> components() {
    Map<Object, Set<Object>> groups = new HashMap<>();
    for (Map<String, Object> row :
        neo4j.query("MATCH (n:Node) RETURN n.id AS id, sparkprov.component(n) AS c", Map.of())) {
      groups.computeIfAbsent(row.get("c"), c -> new TreeSet<>()).add(row.get("id"));
    }
    return Set.copyOf(groups.values());
  }

  @Test
  void slicesStoreWhatOneTransactionStores() {
    List<List<?>> f = flush();
    List<Map<String, Object>> whole = write(f.get(0), f.get(1), f.get(2), false, 0);
    Map<String, Object> once = stored();
    Set<Set<Object>> groups = components();
    assertNull(
        neo4j.query("MATCH (r:Run) RETURN r", Map.of()).stream().findFirst().orElse(null),
        "in the caller's transaction the caller counts");
    neo4j.clear();

    for (long tx : new long[] {1, 2, 3, 7}) {
      List<Map<String, Object>> sliced = write(f.get(0), f.get(1), f.get(2), false, tx);

      assertEquals(once, stored(), "tx_records " + tx);
      assertEquals(groups, components(), "tx_records " + tx);
      assertEquals(whole.get(0).get("nodes"), sliced.get(0).get("nodes"));
      assertEquals(whole.get(0).get("edges"), sliced.get(0).get("edges"));
      neo4j.clear();
    }
  }

  @Test
  void eachSliceCountsWhatItCommittedOnTheRun() {
    List<List<?>> f = flush();

    Map<String, Object> row = write(f.get(0), f.get(1), f.get(2), true, 3).get(0);
    Map<String, Object> again = write(f.get(0), f.get(1), f.get(2), true, 3).get(0);

    Map<String, Object> run =
        neo4j.query(
                "MATCH (r:Run {run_id: $run}) RETURN r.stored_nodes AS nodes,"
                    + " r.stored_edges AS edges, r.complete AS complete",
                Map.of("run", RUN))
            .get(0);
    assertEquals(row.get("nodes"), run.get("nodes"));
    assertEquals(row.get("edges"), run.get("edges"));
    assertEquals(false, run.get("complete"));
    assertEquals(0L, again.get("nodes")); // sent again: stored once, counted once
    assertEquals(0L, again.get("edges"));
    // 8 data nodes (the placeholder 30 is not one) and per member value a TENSOR and a VALUE
    assertEquals(8L + 2 * 5, (long) run.get("nodes"));
  }

  @Test
  void aConflictNamesTheBlockOfTheCallNotOfTheSlice() {
    write(List.of(nodes("PLUS", List.of(7L))), List.of(), List.of(), false, 0);
    List<Map<String, Object>> blocks =
        List.of(nodes("TOKEN", List.of(1L, 2L, 3L)), nodes("TOKEN", List.of(4L, 7L)));

    Map<String, Object> row = write(blocks, List.of(), List.of(), false, 2).get(0);

    assertEquals(List.of(1L), row.get("conflict_blocks"));
    assertEquals(List.of(7L), row.get("conflict_ids"));
  }

  @Test
  void aCallThatFailsAfterSomeSlicesAndIsSentAgainCountsEachNodeOnce() {
    Map<String, Object> tooLarge = new HashMap<>(nodes("TOKEN", List.of(5L)));
    tooLarge.put("relation", "r".repeat(40_000)); // over the (run_id, relation) index's key limit
    List<Map<String, Object>> good =
        List.of(nodes("TOKEN", List.of(1L, 2L)), nodes("TOKEN", List.of(3L, 4L)));
    List<Map<String, Object>> all = new ArrayList<>(good);
    all.add(tooLarge);

    assertThrows(Exception.class, () -> write(all, List.of(), List.of(), true, 2));
    long committed = (Long) neo4j.one("MATCH (n:Node) RETURN count(n)", Map.of());
    // ingest dead-letters the refused record and sends the rest again
    write(good, List.of(), List.of(), true, 2);

    assertEquals(4L, committed); // the two slices before the refused one
    assertEquals(4L, neo4j.one("MATCH (n:Node) RETURN count(n)", Map.of()));
    assertEquals(
        4L, neo4j.one("MATCH (r:Run {run_id: $run}) RETURN r.stored_nodes", Map.of("run", RUN)));
  }

  @Test
  void deferredSlicesLeaveTheIndexerTheSameIds() {
    List<List<?>> f = flush();
    write(f.get(0), f.get(1), f.get(2), false, 0);
    Set<Set<Object>> groups = components();
    neo4j.clear();

    write(f.get(0), f.get(1), f.get(2), true, 2);
    for (int call = 0; call < 100 && (Long) neo4j.index(3).get("remaining") > 0; call++) {
      assertTrue(call < 99, "the indexer never caught up"); // small calls, in the slices' order
    }

    assertEquals(groups, components());
  }
}
