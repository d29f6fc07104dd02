package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.graph.Nodes;
import io.sparkprov.plugin.graph.Schema;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Set;
import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.ResourceIterable;

/**
 * One filled node whose stored edges are more than one index call may take (a group of a global
 * aggregate over millions of rows, whose node arrived after its members' edges): its edges join
 * sets in pages, in the order of their relationships' internal ids, over several calls, while
 * the writes after its write wait. The first page fills the node and takes the first edges (the
 * rest stay as a write not indexed yet would leave them: not walked, not added); each later page
 * adds the next edges as new edges of a stored node. The ids after the last page are those of
 * one transaction: every edge has joined sets exactly once, and components were joined when the
 * edges were written (a placeholder counts for components).
 *
 * <p>The paged write's {@code :IdWork} row says where it is: {@code hub} (the node's id), {@code
 * hub_after} (the last relationship indexed) and {@code hub_skip} (the write's own relationships
 * at the node, indexed with the write's edges in the first page).
 *
 * @param page the relationships of this call, as edges (none when not asked for: the first page
 *     joins sets through the fill)
 * @param taken how many relationships this call takes
 * @param last the internal id of the last relationship of this call
 * @param beyond the relationships left for later calls, sorted (pending to this call)
 */
record HubPages(Set<Edge> page, int taken, long last, long[] beyond) {
  static final String HUB = "hub";
  static final String HUB_AFTER = "hub_after";
  static final String HUB_SKIP = "hub_skip";

  /** No page: the hub is gone (its run deleted while it was paged). */
  static final HubPages NONE = new HubPages(Set.of(), 0, -1, new long[0]);

  /** Whether {@code row} is a write whose fill is being paged. */
  static boolean paging(Node row) {
    return row.hasProperty(HUB);
  }

  /**
   * The next page of {@code hub}'s edges: at most {@code size} of its relationships after {@code
   * after} that {@code visibility} shows, leaving out {@code skip} (sorted); as edges when
   * {@code asEdges}.
   */
  static HubPages next(
      Node hub, long after, long[] skip, Visibility visibility, long size, boolean asEdges) {
    long[] ids = new long[Math.max(16, hub.getDegree())];
    int n = 0;
    try (ResourceIterable<Relationship> rels = relationships(hub)) {
      for (Relationship r : rels) {
        if (candidate(r, after, skip, visibility)) {
          if (n == ids.length) {
            ids = Arrays.copyOf(ids, n * 2);
          }
          ids[n++] = r.getId();
        }
      }
    }
    Arrays.sort(ids, 0, n);
    int taken = (int) Math.min(n, Math.max(1, size));
    long last = taken == 0 ? after : ids[taken - 1];
    if (!asEdges) {
      return new HubPages(Set.of(), taken, last, Arrays.copyOfRange(ids, taken, n));
    }
    Set<Edge> page = new LinkedHashSet<>();
    try (ResourceIterable<Relationship> rels = relationships(hub)) {
      for (Relationship r : rels) {
        if (r.getId() <= last && candidate(r, after, skip, visibility)) {
          page.add(new Edge(Nodes.idOf(r.getStartNode()), Nodes.idOf(r.getEndNode())));
        }
      }
    }
    return new HubPages(page, taken, last, Arrays.copyOfRange(ids, taken, n));
  }

  private static ResourceIterable<Relationship> relationships(Node hub) {
    return hub.getRelationships(Direction.BOTH, Schema.DERIVES, Schema.PARTNER);
  }

  private static boolean candidate(Relationship r, long after, long[] skip, Visibility v) {
    long id = r.getId();
    return id > after && !v.pending(r) && Arrays.binarySearch(skip, id) < 0;
  }

  /** This call's visibility: the relationships beyond the page are pending too. */
  Visibility hide(Visibility visibility) {
    long[] later = beyond;
    return visibility.withPendingRelationships(id -> Arrays.binarySearch(later, id) >= 0);
  }

  /** Where {@code row}'s paging stands: the last relationship indexed. */
  static long after(Node row) {
    return ((Number) row.getProperty(HUB_AFTER)).longValue();
  }

  /** Records in {@code row} that this page was indexed and the hub's next edges wait. */
  void keep(Node row, Node hub, long[] skip) {
    row.setProperty(HUB, Nodes.idOf(hub));
    row.setProperty(HUB_AFTER, last);
    row.setProperty(HUB_SKIP, skip);
  }

  /** The hub's last page was indexed: {@code row} keeps only its other waiting fills. */
  static void forget(Node row) {
    for (String key : new String[] {HUB, HUB_AFTER, HUB_SKIP}) {
      row.removeProperty(key);
    }
  }

  boolean done() {
    return beyond.length == 0;
  }
}
