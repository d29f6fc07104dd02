package io.sparkprov.plugin.ids;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.BlockMaps;
import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;

/**
 * The waiting id work the indexer keeps between its calls ({@link Backlog}): kept per database,
 * learnt and forgotten row by row, started over when rows it held went away by other hands; and
 * the rows' internal ids, read from rows of older writers too. The ids it leads to are checked
 * against a recomputation by IdsPropertyTest.
 */
class BacklogTest {
  private EmbeddedNeo4j neo4j;

  @BeforeEach
  void threeWrites() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    neo4j.clear();
    // 1 -> 2, then 2 -> 3, then 3 -> 4: three rows of id work, one edge each.
    for (long i = 1; i <= 3; i++) {
      neo4j.writeDeferred(
          List.of(BlockMaps.nodes("TOKEN", List.of(i, i + 1))),
          List.of(BlockMaps.edges(new long[][] {{i, i + 1}})),
          25000);
    }
  }

  @Test
  void aCallReadsOnlyWhatChangedSinceTheLast() {
    Backlog backlog = Backlog.of(neo4j.db);
    assertEquals(1L, neo4j.index(1).get("items"));
    assertEquals(2, backlog.size(), "the two rows after the one taken are held");
    neo4j.writeDeferred(
        List.of(BlockMaps.nodes("TOKEN", List.of(5L))),
        List.of(BlockMaps.edges(new long[][] {{4, 5}})),
        25000);
    assertEquals(1L, neo4j.index(1).get("items"));
    assertEquals(2, backlog.size(), "one row forgotten, the new one learnt");
    assertEquals(0L, neo4j.index(50_000).get("remaining"));
    assertEquals(0, backlog.size());
    assertEquals(1, components());
  }

  @Test
  void rowsDroppedByOtherHandsStartItOver() {
    Backlog backlog = Backlog.of(neo4j.db);
    neo4j.index(1);
    assertEquals(2, backlog.size());
    // The reindex drops the waiting rows it makes moot; a write comes after.
    neo4j.query("MATCH (w:IdWork) DELETE w", Map.of());
    neo4j.writeDeferred(
        List.of(BlockMaps.nodes("TOKEN", List.of(7L, 8L))),
        List.of(BlockMaps.edges(new long[][] {{7, 8}})),
        25000);
    neo4j.writeDeferred(
        List.of(BlockMaps.nodes("TOKEN", List.of(9L))),
        List.of(BlockMaps.edges(new long[][] {{8, 9}})),
        25000);
    assertEquals(1L, neo4j.index(1).get("items"));
    assertEquals(1, backlog.size(), "only the row still stored after the one taken");
  }

  @Test
  void rowsOfOlderWritersNameTheirRelationshipsByTheirEdges() {
    try (Transaction tx = neo4j.db.beginTx()) {
      for (Node row : rows(tx)) {
        long[] recorded = (long[]) row.getProperty(IdWork.RELS);
        long[] filled = (long[]) row.getProperty(IdWork.FILLED_NODES);
        row.removeProperty(IdWork.RELS);
        row.removeProperty(IdWork.FILLED_NODES);
        assertEquals(1, recorded.length);
        assertArrayEquals(recorded, IdWork.relationships(tx, row));
        assertArrayEquals(filled, IdWork.filledNodes(tx, row));
      }
      tx.rollback();
    }
  }

  @Test
  void theWriteRecordsTheRelationshipsItCreatedAndTheNodesItFilled() {
    // A write that fills placeholder 6 (made by the edge 5 -> 6 of the write before it).
    neo4j.writeDeferred(
        List.of(BlockMaps.nodes("TOKEN", List.of(5L))),
        List.of(BlockMaps.edges(new long[][] {{5, 6}})),
        25000);
    neo4j.writeDeferred(List.of(BlockMaps.nodes("TOKEN", List.of(6L))), List.of(), 25000);
    try (Transaction tx = neo4j.db.beginTx()) {
      List<Long> relationships = new ArrayList<>();
      List<Long> filled = new ArrayList<>();
      for (Node row : rows(tx)) {
        Arrays.stream((long[]) row.getProperty(IdWork.RELS)).forEach(relationships::add);
        Arrays.stream((long[]) row.getProperty(IdWork.FILLED_NODES)).forEach(filled::add);
      }
      List<Long> stored = new ArrayList<>();
      tx.getAllRelationships().forEach(r -> stored.add(r.getId()));
      assertEquals(stored.stream().sorted().toList(), relationships.stream().sorted().toList());
      assertEquals(List.of(tx.findNode(org.neo4j.graphdb.Label.label("Node"), "id", 6L).getId()),
          filled);
    }
  }

  @Test
  void entityIdsCountAnIdHeldTwice() {
    EntityIds ids = new EntityIds();
    ids.add(5);
    ids.add(5);
    ids.add(1L << 40);
    ids.remove(5);
    assertTrue(ids.contains(5));
    ids.remove(5);
    assertFalse(ids.contains(5));
    assertTrue(ids.contains(1L << 40));
    ids.remove(1L << 40);
    assertTrue(ids.isEmpty());
  }

  private int components() {
    return neo4j
        .query("MATCH (n:Node) RETURN DISTINCT sparkprov.component(n) AS c", Map.of())
        .size();
  }

  private static List<Node> rows(Transaction tx) {
    List<Node> out = new ArrayList<>();
    try (ResourceIterator<Node> it = tx.findNodes(IdWork.WORK)) {
      it.forEachRemaining(out::add);
    }
    return out;
  }
}
