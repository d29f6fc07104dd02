package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.graph.Schema;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;

/**
 * The indexer: applies the id work of deferred writes ({@link IdWork}) in the order they were
 * recorded, a bounded batch per call, and deletes it. Ids end exactly as if each write had kept
 * them in its own transaction: the batch is indexed as one write of all its edges and fills,
 * and the writes after it stay invisible to it ({@link Visibility}: their edges are not walked or
 * added, the placeholders they filled still count as placeholders) until their turn.
 */
final class IdIndexer {
  /**
   * One call: the writes indexed, their edges, the components merged away, the writes left, and
   * the runs with no id work left (indexed, once they are complete).
   */
  record Result(long items, long edges, long merges, long remaining, List<String> indexed) {}

  private IdIndexer() {}

  /**
   * One call over {@code pending}, the cached id work of {@code tx}'s database; yields to the
   * writers (indexes nothing) while any write recorded work within the last {@code quietMillis}:
   * data first, whichever ingest process writes it.
   */
  static Result index(
      Transaction tx, PendingWork pending, long maxEdges, long quietMillis, Runnable checkpoint) {
    if (quietMillis > 0) {
      long latest = latestSeq(tx);
      if (latest != Long.MIN_VALUE && System.nanoTime() - latest < quietMillis * 1_000_000L) {
        return new Result(0, 0, 0, count(tx), List.of());
      }
    }
    IdWork.enterAlone(tx);
    List<PendingWork.Row> work = pending.sync(tx);
    if (work.isEmpty()) {
      return new Result(0, 0, 0, 0, List.of());
    }
    long theta = work.get(0).work().theta();
    Set<Edge> edges = new LinkedHashSet<>();
    List<Long> filled = new ArrayList<>();
    Set<String> runs = new TreeSet<>();
    int taken = 0;
    for (PendingWork.Row row : work) {
      PendingWork.Recorded w = row.work();
      if (taken > 0 && (w.theta() != theta || edges.size() >= maxEdges)) {
        break;
      }
      for (int i = 0; i < w.src().length; i++) {
        edges.add(w.edge(i));
      }
      for (long id : w.filled()) {
        filled.add(id);
      }
      runs.addAll(List.of(w.runs()));
      taken++;
    }
    List<PendingWork.Row> rest = work.subList(taken, work.size());
    Visibility visibility = pending.after(work.subList(0, taken));
    Map<Long, Node> cache = new HashMap<>();
    long merges =
        IdMaintenance.apply(
            tx,
            id -> cache.computeIfAbsent(id, k -> tx.findNode(Schema.NODE, "id", k)),
            theta,
            visibility,
            edges,
            filled,
            checkpoint);
    for (PendingWork.Row row : work.subList(0, taken)) {
      row.node().delete();
    }
    Set<String> still = new HashSet<>();
    for (PendingWork.Row row : rest) {
      still.addAll(List.of(row.work().runs()));
    }
    runs.removeAll(still);
    return new Result(taken, edges.size(), merges, rest.size(), List.copyOf(runs));
  }

  /** Whether some write's ids are not kept yet (any {@code :IdWork} left). */
  static boolean hasPending(Transaction tx) {
    try (ResourceIterator<Node> it = tx.findNodes(IdWork.WORK)) {
      return it.hasNext();
    }
  }

  /** The {@code seq} of the latest recorded write (MIN_VALUE: none). */
  private static long latestSeq(Transaction tx) {
    long latest = Long.MIN_VALUE;
    try (ResourceIterator<Node> it = tx.findNodes(IdWork.WORK)) {
      while (it.hasNext()) {
        latest = Math.max(latest, ((Number) it.next().getProperty(IdWork.SEQ)).longValue());
      }
    }
    return latest;
  }

  private static long count(Transaction tx) {
    long n = 0;
    try (ResourceIterator<Node> it = tx.findNodes(IdWork.WORK)) {
      while (it.hasNext()) {
        it.next();
        n++;
      }
    }
    return n;
  }
}
