package io.sparkprov.plugin.query;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A backward or forward trace, level by level from its seeds, with tests/reference/traces.py's
 * depth and limit semantics: at most {@code maxDepth} levels (0: no bound); once more than
 * {@code limit} nodes are reached the walk stops after that level and is truncated; the first
 * {@code limit} nodes reached are kept (seeds first, then in traversal order) with the edges
 * among them, sorted.
 */
final class Traversal {
  /** Gives the next level's edges {src, dst} for a frontier. */
  interface Expander {
    List<long[]> next(List<Long> frontier);

    /** Logical edges read from the store so far. */
    long fetched();
  }

  /** What a trace found. */
  record Outcome(
      List<Long> ids, List<long[]> edges, boolean truncated, long levels, long reached) {}

  private static final Comparator<long[]> BY_ENDS =
      Comparator.<long[]>comparingLong(e -> e[0]).thenComparingLong(e -> e[1]);

  private Traversal() {}

  static Outcome run(
      List<Long> seeds, boolean backward, long maxDepth, long limit, Expander expand) {
    Set<Long> order = new LinkedHashSet<>(seeds);
    List<long[]> edges = new ArrayList<>();
    List<Long> frontier = new ArrayList<>(order);
    long depth = 0;
    boolean truncated = false;
    while (!frontier.isEmpty() && (maxDepth == 0 || depth < maxDepth)) {
      List<Long> following = new ArrayList<>();
      for (long[] e : expand.next(frontier)) {
        edges.add(e);
        long reached = backward ? e[0] : e[1];
        if (order.add(reached)) {
          following.add(reached);
        }
      }
      depth++;
      frontier = following;
      if (order.size() > limit) {
        truncated = true;
        break;
      }
    }
    List<Long> ids = order.stream().limit(limit).toList();
    // Every edge's two ends were reached; only a cut drops some of them.
    Set<Long> kept = truncated ? new HashSet<>(ids) : order;
    return new Outcome(ids, among(edges, kept), truncated, depth, order.size());
  }

  /** The distinct edges with both ends in {@code kept}, sorted by source then destination. */
  private static List<long[]> among(List<long[]> edges, Set<Long> kept) {
    edges.sort(BY_ENDS);
    List<long[]> out = new ArrayList<>(edges.size());
    long[] last = null;
    for (long[] e : edges) {
      if ((last == null || BY_ENDS.compare(last, e) != 0)
          && kept.contains(e[0]) && kept.contains(e[1])) {
        out.add(e);
      }
      last = e;
    }
    return out;
  }

  /** Expands level by level from the store: one look-up per frontier node. */
  static Expander recursive(LogicalGraph graph, boolean backward) {
    return new Expander() {
      private long fetched;

      @Override
      public List<long[]> next(List<Long> frontier) {
        List<long[]> out = backward ? graph.parents(frontier) : graph.children(frontier);
        fetched += out.size();
        return out;
      }

      @Override
      public long fetched() {
        return fetched;
      }
    };
  }

  /** Walks edges fetched beforehand (a component's, or a set-lineage's), indexed by their end. */
  static Expander indexed(List<long[]> edges, boolean backward) {
    Map<Long, List<long[]>> next = new HashMap<>();
    for (long[] e : edges) {
      next.computeIfAbsent(backward ? e[1] : e[0], k -> new ArrayList<>()).add(e);
    }
    return new Expander() {
      @Override
      public List<long[]> next(List<Long> frontier) {
        List<long[]> out = new ArrayList<>();
        for (long n : frontier) {
          out.addAll(next.getOrDefault(n, List.of()));
        }
        return out;
      }

      @Override
      public long fetched() {
        return edges.size();
      }
    };
  }
}
