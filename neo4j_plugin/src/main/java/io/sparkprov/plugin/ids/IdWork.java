package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Edge;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;

/**
 * Ids behind the data (docs/graph-schema.md, "Component and set ids"): a write that defers its
 * ids records what the indexer needs in one {@code (:IdWork)} node, the edges it created ({@code
 * src}, {@code dst}), the placeholders it filled ({@code filled}), its runs and theta, in the
 * write's own transaction. The indexer ({@link IdIndexer}) applies and deletes them later.
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

  /** Records a deferred write's id work (nothing when it created no edge and filled nothing). */
  public static void record(
      Transaction tx, Set<Edge> edges, List<Long> filled, Collection<String> runs, long theta) {
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
    w.setProperty(FILLED, filled.stream().mapToLong(Long::longValue).toArray());
    w.setProperty(RUNS, runs.toArray(new String[0]));
    w.setProperty(THETA, theta);
    w.setProperty(SEQ, System.nanoTime());
  }
}
