package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.graph.Schema;
import java.util.ArrayList;
import java.util.Comparator;
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
 * added, the placeholders they filled still count as placeholders) until their turn. What those
 * writes created is kept between calls ({@link Backlog}), so a call reads the rows it takes and
 * the rows recorded since the last call, not the whole backlog.
 */
final class IdIndexer {
  /**
   * One call: the writes indexed, their edges, the components merged away, the writes left, and
   * the runs with no id work left (indexed, once they are complete).
   */
  record Result(long items, long edges, long merges, long remaining, List<String> indexed) {}

  /** A stored {@code :IdWork} row: its node, when it was recorded, its theta. */
  record Item(Node node, long seq, long theta) {}

  private IdIndexer() {}

  static Result index(Transaction tx, Backlog backlog, long maxEdges) {
    return index(tx, backlog, maxEdges, 0, () -> {});
  }

  /**
   * As {@link #index(Transaction, long)}, but yields to the writers (indexes nothing) while any
   * write recorded work within the last {@code quietMillis}: data first, whichever ingest process
   * writes it.
   */
  static Result index(
      Transaction tx, Backlog backlog, long maxEdges, long quietMillis, Runnable checkpoint) {
    if (quietMillis > 0) {
      List<Item> seen = queue(tx);
      if (!seen.isEmpty()
          && System.nanoTime() - seen.get(seen.size() - 1).seq() < quietMillis * 1_000_000L) {
        return new Result(0, 0, 0, seen.size(), List.of());
      }
    }
    IdWork.enterAlone(tx);
    List<Item> work = queue(tx);
    if (work.isEmpty()) {
      return new Result(0, 0, 0, 0, List.of());
    }
    long theta = work.get(0).theta();
    Set<Edge> edges = new LinkedHashSet<>();
    List<Long> filled = new ArrayList<>();
    Set<String> runs = new TreeSet<>();
    int taken = 0;
    for (Item item : work) {
      if (taken > 0 && (item.theta() != theta || edges.size() >= maxEdges)) {
        break;
      }
      addEdges(item.node(), edges);
      for (long id : longs(item.node(), IdWork.FILLED)) {
        filled.add(id);
      }
      runs.addAll(List.of((String[]) item.node().getProperty(IdWork.RUNS)));
      taken++;
    }
    List<Item> rest = work.subList(taken, work.size());
    Visibility visibility = backlog.visibility(tx, work.subList(0, taken), rest);
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
    for (Item item : work.subList(0, taken)) {
      item.node().delete();
    }
    Set<String> still = new HashSet<>();
    for (Item item : rest) {
      still.addAll(List.of((String[]) item.node().getProperty(IdWork.RUNS)));
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

  private static List<Item> queue(Transaction tx) {
    List<Item> out = new ArrayList<>();
    try (ResourceIterator<Node> it = tx.findNodes(IdWork.WORK)) {
      while (it.hasNext()) {
        Node n = it.next();
        out.add(
            new Item(
                n,
                ((Number) n.getProperty(IdWork.SEQ)).longValue(),
                ((Number) n.getProperty(IdWork.THETA)).longValue()));
      }
    }
    out.sort(Comparator.comparingLong(Item::seq));
    return out;
  }

  private static void addEdges(Node item, Set<Edge> out) {
    long[] src = longs(item, IdWork.SRC);
    long[] dst = longs(item, IdWork.DST);
    for (int i = 0; i < src.length; i++) {
      out.add(new Edge(src[i], dst[i]));
    }
  }

  private static long[] longs(Node item, String key) {
    return (long[]) item.getProperty(key);
  }
}
