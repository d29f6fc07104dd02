package io.sparkprov.plugin.ids;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Transaction;

/**
 * The id work waiting behind the writes an index call takes, kept in memory across the calls
 * of one database: the relationships the waiting writes created and the placeholders they
 * filled, by internal id ({@link EntityIds}), which is what {@link Visibility} asks for.
 *
 * <p>Reading every waiting {@code :IdWork} row in every call cost each call as much as the whole
 * backlog, so indexing a bulk load grew with its size squared (bench/README.md, "10M rows").
 * Here a call reads only the rows it takes (to forget them) and the rows recorded since the last
 * call (to learn them). It stays exact whatever happens between calls, because each call first
 * matches what it holds against the rows stored now:
 *
 * <ul>
 *   <li>a call that rolled back forgot the rows it took, which are stored again: they are not
 *       held, so they are learnt again (or taken again);
 *   <li>a held row that is gone and no call of this backlog took (dropped by the reindex, or
 *       the database emptied): everything is read again;
 *   <li>a row is known by its node's internal id and its {@code seq}, so a node id reused for a
 *       new row is a new row.
 * </ul>
 *
 * Calls of one database do not overlap: each holds the barrier exclusively ({@link
 * IdWork#enterAlone}) until its transaction ends.
 */
final class Backlog {
  private static final Map<String, Backlog> OF_DATABASE = new ConcurrentHashMap<>();

  /** A stored {@code :IdWork} row: its node's internal id and the time it was recorded. */
  record Row(long node, long seq) {}

  private final Set<Row> held = new HashSet<>();
  private final EntityIds relationships = new EntityIds();
  private final EntityIds filled = new EntityIds();

  /**
   * The backlog of a database, by its name (procedures get a new {@code GraphDatabaseService} per
   * call). Two servers in one JVM with databases of one name (tests) share it and stay exact: each
   * call finds rows it did not hold and starts over.
   */
  static Backlog of(GraphDatabaseService db) {
    return OF_DATABASE.computeIfAbsent(db.databaseName(), d -> new Backlog());
  }

  /**
   * What a call that takes {@code taken} may see: every row of {@code rest} (the rows waiting
   * after them) held, none of {@code taken}.
   */
  synchronized Visibility visibility(
      Transaction tx, List<IdIndexer.Item> taken, List<IdIndexer.Item> rest) {
    Set<Row> stored = new HashSet<>();
    for (IdIndexer.Item item : taken) {
      stored.add(rowOf(item));
    }
    for (IdIndexer.Item item : rest) {
      stored.add(rowOf(item));
    }
    if (!stored.containsAll(held)) {
      clear();
    }
    for (IdIndexer.Item item : taken) {
      if (held.remove(rowOf(item))) {
        change(tx, item.node(), false);
      }
    }
    for (IdIndexer.Item item : rest) {
      if (held.add(rowOf(item))) {
        change(tx, item.node(), true);
      }
    }
    if (held.isEmpty()) {
      return Visibility.ALL;
    }
    return new Visibility(relationships::contains, filled::contains);
  }

  /** How many rows are held (for tests). */
  synchronized int size() {
    return held.size();
  }

  private void change(Transaction tx, Node row, boolean add) {
    for (long id : IdWork.relationships(tx, row)) {
      if (add) {
        relationships.add(id);
      } else {
        relationships.remove(id);
      }
    }
    for (long id : IdWork.filledNodes(tx, row)) {
      if (add) {
        filled.add(id);
      } else {
        filled.remove(id);
      }
    }
  }

  private void clear() {
    held.clear();
    relationships.clear();
    filled.clear();
  }

  private static Row rowOf(IdIndexer.Item item) {
    return new Row(item.node().getId(), item.seq());
  }
}
