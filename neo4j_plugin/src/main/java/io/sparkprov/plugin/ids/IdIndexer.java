package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.graph.Schema;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
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
   * One call: the writes it finished indexing (a write whose fills are paged counts once, in its
   * last call), the edges it joined, the components merged away, the writes left, and the runs
   * with no id work left (indexed, once they are complete); and what its id maintenance read
   * and wrote (for the log of slow calls).
   */
  record Result(
      long items, long edges, long remaining, List<String> indexed, IdMaintenance.Applied work) {
    long merges() {
      return work.merges();
    }
  }

  /** A stored {@code :IdWork} row: its node, when it was recorded, its theta. */
  record Item(Node node, long seq, long theta) {}

  /**
   * A call of several writes re-reads at most this many edges per edge of its bound when the
   * sets it grows past theta are refined (more: {@link RefinementTooLarge}, and ingest calls
   * again with half the edges); a call of one write, or a page of a hub, is never refused.
   */
  static final long REREAD_PER_EDGE = 8;

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
        return new Result(0, 0, seen.size(), List.of(), IdMaintenance.Applied.NONE);
      }
    }
    IdWork.enterAlone(tx);
    List<Item> work = queue(tx);
    if (work.isEmpty()) {
      return new Result(0, 0, 0, List.of(), IdMaintenance.Applied.NONE);
    }
    Map<Long, Node> cache = new Memo<>();
    if (HubPages.paging(work.get(0).node())) {
      return nextPage(tx, backlog, work, cache, maxEdges, checkpoint);
    }
    long theta = work.get(0).theta();
    Set<Edge> edges = new LinkedHashSet<>();
    List<Long> filled = new ArrayList<>();
    Set<String> runs = new TreeSet<>();
    int taken = 0;
    long fillWeight = 0; // the degrees of the placeholders filled
    long weight = 0; // and the edges
    Fills later = null; // the first write's fills left for later calls
    Node hub = null; // the first write's first fill, when it alone is past the bound
    for (Item item : work) {
      if (taken > 0 && (item.theta() != theta || weight >= maxEdges)) {
        break;
      }
      Fills fills = Fills.of(tx, cache, longs(item.node(), IdWork.FILLED));
      long budget = maxEdges - weight - longs(item.node(), IdWork.SRC).length;
      int now = fills.within(budget);
      if (taken > 0 && (now < fills.size() || fills.degreeOf(now) > budget)) {
        break; // first in the next call, where it may be paged
      }
      if (taken == 0 && fills.size() > 0 && fills.degrees()[0] > budget) {
        now = 1; // a hub: its edges in pages (HubPages), the other fills in later calls
        hub = fills.nodes()[0];
      }
      addEdges(item.node(), edges);
      for (int f = 0; f < now; f++) {
        filled.add(fills.ids()[f]);
      }
      fillWeight += fills.degreeOf(now);
      weight = edges.size() + fillWeight;
      runs.addAll(List.of((String[]) item.node().getProperty(IdWork.RUNS)));
      taken++;
      if (now < fills.size()) {
        later = fills.from(now);
        break;
      }
      if (hub != null) {
        break;
      }
    }
    List<Item> rest = work.subList(taken, work.size());
    Visibility visibility = backlog.visibility(tx, work.subList(0, taken), rest);
    if (later != null) {
      // Placeholders until their page: an edge between one filled now and one filled later
      // joins sets once, with the later one.
      visibility = visibility.withPendingFilled(later.internal()::contains);
    }
    HubPages page = null;
    long[] own = null;
    if (hub != null) {
      own = IdWork.relationships(tx, work.get(0).node()).clone();
      Arrays.sort(own);
      long size = Math.max(maxEdges - edges.size(), maxEdges / 4);
      page = HubPages.next(hub, -1, own, visibility, size, false); // they join by the fill
      visibility = page.hide(visibility);
    }
    IdMaintenance.Applied applied =
        IdMaintenance.apply(
            tx,
            id -> cache.computeIfAbsent(id, k -> tx.findNode(Schema.NODE, "id", k)),
            theta,
            visibility,
            edges,
            filled,
            checkpoint,
            taken > 1 ? REREAD_PER_EDGE * maxEdges : Long.MAX_VALUE);
    Set<String> still = new HashSet<>();
    int done = 0;
    for (int i = 0; i < taken; i++) {
      Item item = work.get(i);
      boolean paged = page != null && !page.done();
      if ((later != null || paged) && i == taken - 1) {
        Fills left = later == null ? Fills.NONE : later;
        IdWork.keepOnly(item.node(), left.ids(), left.internalIds());
        if (paged) {
          page.keep(item.node(), hub, own);
        }
        still.addAll(List.of((String[]) item.node().getProperty(IdWork.RUNS)));
      } else {
        item.node().delete();
        done++;
      }
    }
    for (Item item : rest) {
      still.addAll(List.of((String[]) item.node().getProperty(IdWork.RUNS)));
    }
    runs.removeAll(still);
    long remaining = rest.size() + (taken - done);
    long added = page == null ? weight : edges.size() + page.taken();
    return new Result(done, added, remaining, List.copyOf(runs), applied);
  }

  /**
   * The next page of the hub the first write fills ({@link HubPages}): its next edges join sets
   * as new edges of a stored node, the rest of them and the write's later fills still waiting.
   */
  private static Result nextPage(
      Transaction tx,
      Backlog backlog,
      List<Item> work,
      Map<Long, Node> cache,
      long maxEdges,
      Runnable checkpoint) {
    Item item = work.get(0);
    Node row = item.node();
    List<Item> rest = work.subList(1, work.size());
    Visibility visibility = backlog.visibility(tx, work.subList(0, 1), rest);
    long[] laterFills = IdWork.filledNodes(tx, row);
    if (laterFills.length > 0) {
      long[] sorted = laterFills.clone();
      Arrays.sort(sorted);
      visibility = visibility.withPendingFilled(id -> Arrays.binarySearch(sorted, id) >= 0);
    }
    long hubId = ((Number) row.getProperty(HubPages.HUB)).longValue();
    Node hub = cache.computeIfAbsent(hubId, k -> tx.findNode(Schema.NODE, "id", k));
    long[] skip = longs(row, HubPages.HUB_SKIP);
    HubPages page =
        hub == null
            ? HubPages.NONE
            : HubPages.next(hub, HubPages.after(row), skip, visibility, maxEdges, true);
    IdMaintenance.Applied applied =
        IdMaintenance.apply(
            tx,
            id -> cache.computeIfAbsent(id, k -> tx.findNode(Schema.NODE, "id", k)),
            item.theta(),
            page.hide(visibility),
            page.page(),
            List.of(),
            checkpoint,
            Long.MAX_VALUE); // a page of a hub is never refused
    Set<String> runs = new TreeSet<>(List.of((String[]) row.getProperty(IdWork.RUNS)));
    boolean finished = page.done() && laterFills.length == 0;
    if (!page.done()) {
      page.keep(row, hub, skip);
    } else if (!finished) {
      HubPages.forget(row); // the write's later fills come next, paged as any
    } else {
      row.delete();
    }
    Set<String> still = new HashSet<>();
    if (!finished) {
      still.addAll(runs);
    }
    for (Item waiting : rest) {
      still.addAll(List.of((String[]) waiting.node().getProperty(IdWork.RUNS)));
    }
    runs.removeAll(still);
    long remaining = rest.size() + (finished ? 0 : 1);
    return new Result(
        finished ? 1 : 0, page.page().size(), remaining, List.copyOf(runs), applied);
  }

  /**
   * The placeholders a write filled, with their degrees: a filled node's stored edges join sets
   * when its write is indexed, so a write that fills hubs (a group's node whose members came
   * first) weighs its degrees, not one. A write whose fills exceed a call's bound is indexed in
   * pages of fills, in order, over several calls: its edges and the first fills in one call, the
   * rest (still placeholders to that call) in the next ones, while the writes after it wait.
   */
  private record Fills(long[] ids, Node[] nodes, long[] degrees) {
    static final Fills NONE = new Fills(new long[0], new Node[0], new long[0]);

    static Fills of(Transaction tx, Map<Long, Node> cache, long[] ids) {
      Node[] nodes = new Node[ids.length];
      long[] degrees = new long[ids.length];
      for (int i = 0; i < ids.length; i++) {
        nodes[i] = cache.computeIfAbsent(ids[i], k -> tx.findNode(Schema.NODE, "id", k));
        degrees[i] = nodes[i] == null ? 0 : nodes[i].getDegree();
      }
      return new Fills(ids, nodes, degrees);
    }

    int size() {
      return ids.length;
    }

    /** How many of the first fills fit {@code budget} edges (at least one when there is one). */
    int within(long budget) {
      long sum = 0;
      for (int i = 0; i < ids.length; i++) {
        sum += degrees[i];
        if (sum > budget && i > 0) {
          return i;
        }
      }
      return ids.length;
    }

    long degreeOf(int first) {
      long sum = 0;
      for (int i = 0; i < first; i++) {
        sum += degrees[i];
      }
      return sum;
    }

    Fills from(int first) {
      return new Fills(
          Arrays.copyOfRange(ids, first, ids.length),
          Arrays.copyOfRange(nodes, first, nodes.length),
          Arrays.copyOfRange(degrees, first, degrees.length));
    }

    long[] internalIds() {
      return Arrays.stream(nodes).filter(Objects::nonNull).mapToLong(Node::getId).toArray();
    }

    Set<Long> internal() {
      Set<Long> out = new HashSet<>();
      for (long id : internalIds()) {
        out.add(id);
      }
      return out;
    }
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
