package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.graph.Nodes;
import io.sparkprov.plugin.graph.Schema;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;

/**
 * Ids behind the data (docs/graph-schema.md, "Component and set ids"): a write that defers its
 * ids records what the indexer needs in one {@code (:IdWork)} node, the edges it created ({@code
 * src}, {@code dst}), the placeholders it filled ({@code filled}), its runs and theta, in the
 * write's own transaction. The indexer ({@link IdIndexer}) applies and deletes them later. The
 * row also holds the internal ids of those relationships ({@code rels}) and filled nodes ({@code
 * filled_nodes}): what the indexer keeps of the waiting rows between its calls ({@link Backlog}).
 *
 * <p>Writers and the indexer meet at one {@code (:IdBarrier)} node: a writer holds a shared lock
 * on it (writers never wait for each other there), the indexer an exclusive one, so the indexer
 * sees a stored graph no write is changing, and every write it does not index is recorded.
 */
public final class IdWork {
  static final Label WORK = Label.label("IdWork");
  static final Label BARRIER = Label.label("IdBarrier");
  static final String SRC = "src";
  static final String DST = "dst";
  static final String FILLED = "filled";
  static final String RELS = "rels";
  static final String FILLED_NODES = "filled_nodes";
  static final String RUNS = "runs";
  static final String THETA = "theta";
  static final String SEQ = "seq";

  private IdWork() {}

  /** A writer's shared lock on the barrier. */
  public static void enter(Transaction tx) {
    tx.acquireReadLock(barrier(tx));
  }

  /** The indexer's exclusive lock on the barrier: no write is running once it returns. */
  static void enterAlone(Transaction tx) {
    tx.acquireWriteLock(barrier(tx));
  }

  /** The barrier node: sparkprov/schema.cypher makes it; made here in a database emptied since. */
  private static Node barrier(Transaction tx) {
    try (ResourceIterator<Node> it = tx.findNodes(BARRIER)) {
      if (it.hasNext()) {
        return it.next();
      }
    }
    Node n = tx.createNode(BARRIER);
    n.setProperty("name", "ids");
    return n;
  }

  /**
   * Records a deferred write's id work (nothing when it created no edge and filled nothing):
   * {@code rels} are the internal ids of the relationships of {@code edges}, {@code filledNodes}
   * those of the nodes of {@code filled}.
   */
  public static void record(
      Transaction tx,
      Set<Edge> edges,
      long[] rels,
      List<Long> filled,
      long[] filledNodes,
      Collection<String> runs,
      long theta) {
    if (edges.isEmpty() && filled.isEmpty()) {
      return;
    }
    long[] src = new long[edges.size()];
    long[] dst = new long[edges.size()];
    int i = 0;
    for (Edge e : edges) {
      src[i] = e.src();
      dst[i] = e.dst();
      i++;
    }
    Node w = tx.createNode(WORK);
    w.setProperty(SRC, src);
    w.setProperty(DST, dst);
    w.setProperty(RELS, rels);
    w.setProperty(FILLED, filled.stream().mapToLong(Long::longValue).toArray());
    w.setProperty(FILLED_NODES, filledNodes);
    w.setProperty(RUNS, runs.toArray(new String[0]));
    w.setProperty(THETA, theta);
    w.setProperty(SEQ, System.nanoTime());
  }

  /**
   * Leaves only the placeholders {@code later} of a row for a later call (their internal ids
   * {@code laterNodes}): its edges and its other fills were indexed ({@link IdIndexer}, a fill
   * paged). The row keeps its place in the queue.
   */
  static void keepOnly(Node row, long[] later, long[] laterNodes) {
    row.setProperty(SRC, new long[0]);
    row.setProperty(DST, new long[0]);
    row.setProperty(RELS, new long[0]);
    row.setProperty(FILLED, later);
    row.setProperty(FILLED_NODES, laterNodes);
  }

  /**
   * The internal ids of the relationships a row's write created; for a row recorded before rows
   * held them, found from its edges' ends (an edge no longer stored has none).
   */
  static long[] relationships(Transaction tx, Node row) {
    if (row.hasProperty(RELS)) {
      return (long[]) row.getProperty(RELS);
    }
    long[] src = (long[]) row.getProperty(SRC);
    long[] dst = (long[]) row.getProperty(DST);
    long[] out = new long[src.length];
    int found = 0;
    for (int i = 0; i < src.length; i++) {
      Node a = tx.findNode(Schema.NODE, "id", src[i]);
      Node b = tx.findNode(Schema.NODE, "id", dst[i]);
      Relationship r = a == null || b == null ? null : Nodes.relationship(a, b, Schema.DERIVES);
      if (r == null && a != null && b != null) {
        r = Nodes.relationship(a, b, Schema.PARTNER); // a right row's edge r -> g of folded rows
      }
      if (r != null) {
        out[found++] = r.getId();
      }
    }
    return Arrays.copyOf(out, found);
  }

  /** The internal ids of the nodes a row's write filled (for older rows, found by their ids). */
  static long[] filledNodes(Transaction tx, Node row) {
    if (row.hasProperty(FILLED_NODES)) {
      return (long[]) row.getProperty(FILLED_NODES);
    }
    return Arrays.stream((long[]) row.getProperty(FILLED))
        .mapToObj(id -> tx.findNode(Schema.NODE, "id", id))
        .filter(Objects::nonNull)
        .mapToLong(Node::getId)
        .toArray();
  }
}
