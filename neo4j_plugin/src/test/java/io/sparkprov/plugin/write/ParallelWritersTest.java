package io.sparkprov.plugin.write;

import static io.sparkprov.plugin.BlockMaps.edges;
import static io.sparkprov.plugin.BlockMaps.nodes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.neo4j.graphdb.Transaction;
import org.neo4j.logging.NullLog;

/**
 * Two writers ({@link FlushWriter}s of two calls, as two ingest processes run them) upsert the
 * same records at once: each edge is stored and counted once, a placeholder filled by both is
 * counted once, and a joined row folded by both is counted once. The interleavings are made
 * explicit, transaction by transaction; ids are left to the indexer, as ingest's writers in
 * parallel leave them.
 */
class ParallelWritersTest {
  private static final long THETA = 25000;

  private EmbeddedNeo4j neo4j;

  @BeforeEach
  void emptyDatabase() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    // As sparkprov/schema.cypher makes it (else the first two writers would both create it).
    neo4j.query("MERGE (:IdBarrier {name: 'ids'})", Map.of());
  }

  private static Slice slice(
      List<Map<String, Object>> blocks, List<Map<String, Object>> edgeBlocks,
      List<Map<String, Object>> members) {
    return Slice.whole(
        NodeBlock.parseAll(blocks), MemberBlock.parseAll(members), EdgeBlock.parseAll(edgeBlocks));
  }

  /** The slice written by {@code call} in a transaction of its own, committed; its one row. */
  private Ingest.Written commit(FlushWriter.Call call, Slice slice) {
    try (Transaction tx = neo4j.db.beginTx()) {
      List<Ingest.Written> rows =
          new FlushWriter(tx, NullLog.getInstance(), call).write(slice, THETA, true);
      tx.commit();
      return rows.get(0);
    }
  }

  private long count(String cypher) {
    return (Long) neo4j.one(cypher, Map.of());
  }

  @Test
  void anEdgeAtANodeAnEarlierSliceCreatedIsLookedForOnceOtherWritersSeeTheNode() {
    FlushWriter.Call first = new FlushWriter.Call();
    commit(first, slice(List.of(nodes("TOKEN", List.of(1L)), nodes("PLUS", List.of(2L))),
        List.of(), List.of()));
    // Another writer, between the first call's slices, stores the edge the next slice holds.
    Slice edge = slice(List.of(), List.of(edges(new long[][] {{1, 2}})), List.of());
    Ingest.Written other = commit(new FlushWriter.Call(), edge);

    Ingest.Written later = commit(first, edge);

    assertEquals(1L, other.edges);
    assertEquals(0L, later.edges);
    assertEquals(1L, count("MATCH (:Node {id: 1})-[r:DERIVES]->(:Node {id: 2}) RETURN count(r)"));
  }

  @Test
  void twoWritersOfOneEdgeBetweenStoredNodesCreateItOnce() throws Exception {
    neo4j.write(List.of(nodes("TOKEN", List.of(1L)), nodes("PLUS", List.of(2L))), List.of(), THETA);
    Slice edge = slice(List.of(), List.of(edges(new long[][] {{1, 2}})), List.of());

    Ingest.Written[] rows = writeAtOnce(edge, edge);

    assertEquals(1L, rows[0].edges + rows[1].edges);
    assertEquals(1L, count("MATCH (:Node {id: 1})-[r:DERIVES]->(:Node {id: 2}) RETURN count(r)"));
  }

  @Test
  void aPlaceholderFilledByTwoWritersAtOnceIsCountedOnce() throws Exception {
    // An edge stored before its head's block: node 2 is a placeholder, committed.
    neo4j.write(List.of(nodes("TOKEN", List.of(1L))), List.of(edges(new long[][] {{1, 2}})),
        THETA);
    Slice fill = slice(List.of(nodes("PLUS", List.of(2L))), List.of(), List.of());

    Ingest.Written[] rows = writeAtOnce(fill, fill);

    assertEquals(1L, rows[0].nodes + rows[1].nodes);
    assertEquals(1L, count("MATCH (n:Node {id: 2, op: 'PLUS'}) RETURN count(n)"));
  }

  @Test
  void oneJoinedRowFoldedIntoTwoGroupsByTwoWritersAtOnceIsCountedOnce() throws Exception {
    // Row 501 (left 81, right 85) is a member of group 90 in one job, of 91 in another.
    neo4j.write(
        List.of(nodes("TOKEN", List.of(81L, 85L)), nodes("DELTA", List.of(90L, 91L))),
        List.of(), THETA);
    // The group key is known (a new one would be created by both: ingest runs the loser again).
    neo4j.query("CREATE (:MemberKey {key: 'g#j', aggregates: 1})", Map.of());
    Slice into90 = slice(List.of(), List.of(),
        List.of(WriteProcedureTest.joinRows(new long[][] {{501, 81, 85, 90}})));
    Slice into91 = slice(List.of(), List.of(),
        List.of(WriteProcedureTest.joinRows(new long[][] {{501, 81, 85, 91}})));

    Ingest.Written[] rows = writeAtOnce(into90, into91);

    // The row's TIMES node and its 2 edges once; per group its member edge, TENSOR, VALUE and
    // their 3 edges.
    assertEquals(1L + 2 * 2, rows[0].nodes + rows[1].nodes);
    assertEquals(2L + 2 * (1 + 3), rows[0].edges + rows[1].edges);
    assertEquals(2L, count("MATCH (:Node {id: 81})-[r:DERIVES]->() RETURN count(r)"));
  }

  /**
   * Writes {@code a} and, while its transaction is still open, {@code b} in another thread (a
   * writer of its own), then commits {@code a} and waits for {@code b}: b does every look-up
   * either before a started or after it committed, as a second ingest process does.
   */
  private Ingest.Written[] writeAtOnce(Slice a, Slice b) throws Exception {
    Ingest.Written[] rows = new Ingest.Written[2];
    CompletableFuture<Ingest.Written> other;
    try (Transaction tx = neo4j.db.beginTx()) {
      rows[0] = new FlushWriter(tx, NullLog.getInstance(), new FlushWriter.Call())
          .write(a, THETA, true).get(0);
      other = CompletableFuture.supplyAsync(() -> commit(new FlushWriter.Call(), b));
      Thread.sleep(300); // b reaches the record a holds
      assertTrue(!other.isDone(), "the second writer waits for the first's commit");
      tx.commit();
    }
    rows[1] = other.get(30, TimeUnit.SECONDS);
    return rows;
  }
}
