package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Edge;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;

/**
 * The id work of the writes not indexed yet ({@link IdWork} rows) of one database, kept in memory
 * across the indexer's calls. A call must not see the edges and fills of the rows it does not
 * index ({@link Visibility}); reading them from the store in every call made a call's cost grow
 * with the backlog, and indexing a bulk load quadratic (at 10M input rows: 16k rows, 12.6M edges
 * read into a set by every call; bench/README.md, "10M rows").
 *
 * <p>Each call first makes the cache equal to the stored rows ({@link #sync}), reading only the
 * rows it has not seen. A row is known by its element id and its {@code seq}, so a node id that
 * Neo4j reuses for a later row is a new row, and a row a call deleted in a transaction that then
 * rolled back is still stored, so it stays. Calls of one database run one at a time (the
 * indexer's exclusive lock on the barrier, {@link IdWork#enterAlone}); the methods are
 * synchronized besides.
 */
final class PendingWork {
  private static final Map<String, PendingWork> DATABASES = new ConcurrentHashMap<>();

  /** One stored row: its node (deleted once indexed) and what it recorded. */
  record Row(Node node, Recorded work) {
    long seq() {
      return work.seq();
    }
  }

  /** What one deferred write recorded (the properties of its {@link IdWork} node). */
  record Recorded(
      long seq, long theta, long[] src, long[] dst, long[] filled, String[] runs) {
    static Recorded of(Node n, long seq) {
      return new Recorded(
          seq,
          ((Number) n.getProperty(IdWork.THETA)).longValue(),
          (long[]) n.getProperty(IdWork.SRC),
          (long[]) n.getProperty(IdWork.DST),
          (long[]) n.getProperty(IdWork.FILLED),
          (String[]) n.getProperty(IdWork.RUNS));
    }

    Edge edge(int i) {
      return new Edge(src[i], dst[i]);
    }
  }

  private final Map<String, Recorded> rows = new HashMap<>();
  // How many cached rows hold each edge and each filled id (two writers may record the same).
  private final Map<Edge, Integer> edges = new HashMap<>();
  private final Map<Long, Integer> filled = new HashMap<>();

  static PendingWork of(String database) {
    return DATABASES.computeIfAbsent(database, d -> new PendingWork());
  }

  /** The stored rows, oldest first; the cache is made equal to them. */
  synchronized List<Row> sync(Transaction tx) {
    List<Row> out = new ArrayList<>();
    Set<String> stored = new HashSet<>();
    try (ResourceIterator<Node> it = tx.findNodes(IdWork.WORK)) {
      while (it.hasNext()) {
        Node n = it.next();
        String key = n.getElementId();
        long seq = ((Number) n.getProperty(IdWork.SEQ)).longValue();
        Recorded work = rows.get(key);
        if (work == null || work.seq() != seq) {
          if (work != null) {
            count(work, -1);
          }
          work = Recorded.of(n, seq);
          rows.put(key, work);
          count(work, 1);
        }
        stored.add(key);
        out.add(new Row(n, work));
      }
    }
    rows.entrySet()
        .removeIf(
            e -> {
              if (stored.contains(e.getKey())) {
                return false;
              }
              count(e.getValue(), -1);
              return true;
            });
    out.sort(Comparator.comparingLong(Row::seq));
    return out;
  }

  /**
   * What a call that indexes {@code taken} (stored rows) may see: the edges and fills of every
   * other stored row are pending.
   */
  synchronized Visibility after(List<Row> taken) {
    if (taken.size() == rows.size()) {
      return Visibility.ALL;
    }
    Map<Edge, Integer> takenEdges = new HashMap<>();
    Map<Long, Integer> takenFilled = new HashMap<>();
    for (Row row : taken) {
      Recorded w = row.work();
      for (int i = 0; i < w.src().length; i++) {
        takenEdges.merge(w.edge(i), 1, Integer::sum);
      }
      for (long id : w.filled()) {
        takenFilled.merge(id, 1, Integer::sum);
      }
    }
    return new Visibility(
        e -> edges.getOrDefault(e, 0) > takenEdges.getOrDefault(e, 0),
        id -> filled.getOrDefault(id, 0) > takenFilled.getOrDefault(id, 0));
  }

  private void count(Recorded w, int delta) {
    for (int i = 0; i < w.src().length; i++) {
      edges.merge(w.edge(i), delta, PendingWork::sumOrNone);
    }
    for (long id : w.filled()) {
      filled.merge(id, delta, PendingWork::sumOrNone);
    }
  }

  /** A count plus a change; null (the entry removed) at zero. */
  private static Integer sumOrNone(Integer a, Integer b) {
    int sum = a + b;
    return sum == 0 ? null : sum;
  }
}
