package io.sparkprov.plugin.query;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;

/**
 * {@code CALL sparkprov.subgraph(nodeId, limit, maxNodes, autoFetchMax)}: Lipstick's
 * Subgraph(n) over the logical graph in one call, as tests/reference/store.py's {@code subgraph}
 * answers it: n's ancestors and descendants (two traces with AUTO's strategy, each of at most
 * {@code maxNodes} nodes), the parents of the descendants and their other children (siblings),
 * in the order n, ancestors, descendants, siblings; the first {@code limit} with the edges among
 * them.
 *
 * <p>One row: {@code missing} (n unknown) or {@code tooLarge} ("the ancestry" or "the
 * descendants": that closure has more than {@code maxNodes} nodes) and nothing else; otherwise
 * the ids, their views, the edges {@code sources[k] -> targets[k]}, {@code truncated} and the
 * stats of the traces.
 */
public final class Subgraphs {
  @Context public Transaction tx;

  /** The one output row. */
  public static final class Row {
    public List<Long> missing = List.of();
    public String tooLarge = "";
    public List<Long> ids = List.of();
    public List<Map<String, Object>> nodes = List.of();
    public List<Long> sources = List.of();
    public List<Long> targets = List.of();
    public boolean truncated;
    public String strategy = "";
    public long levels;
    public long reached;
    public long fetched;
    public long sets;
  }

  @Procedure(name = "sparkprov.subgraph", mode = Mode.READ)
  @Description(
      "Lipstick's Subgraph(n): ancestors, descendants and the descendants' siblings, with the"
          + " edges among them")
  public Stream<Row> subgraph(
      @Name("nodeId") long nodeId,
      @Name(value = "limit", defaultValue = "100000") long limit,
      @Name(value = "maxNodes", defaultValue = "1000000") long maxNodes,
      @Name(value = "autoFetchMax", defaultValue = "0") long autoFetchMax) {
    if (limit < 1 || maxNodes < 1) {
      throw new IllegalArgumentException("limit and maxNodes must be at least 1");
    }
    LogicalGraph graph = new LogicalGraph(tx);
    Row row = new Row();
    if (!graph.exists(nodeId)) {
      row.missing = List.of(nodeId);
      return Stream.of(row);
    }
    List<Long> seed = List.of(nodeId);
    Traces.Plan upPlan = new Traces.Planner(graph, seed, true, 0, autoFetchMax).plan("AUTO");
    Traversal.Outcome up = Traversal.run(seed, true, 0, maxNodes, upPlan.expander());
    Traces.Plan downPlan = new Traces.Planner(graph, seed, false, 0, autoFetchMax).plan("AUTO");
    Traversal.Outcome down = Traversal.run(seed, false, 0, maxNodes, downPlan.expander());
    if (up.truncated() || down.truncated()) {
      row.tooLarge = up.truncated() ? "the ancestry" : "the descendants";
      return Stream.of(row);
    }
    List<Long> descendants = down.ids().subList(1, down.ids().size());
    List<long[]> into = descendants.isEmpty() ? List.of() : graph.parents(descendants);
    Set<Long> parents = new TreeSet<>();
    into.forEach(e -> parents.add(e[0]));
    List<long[]> out = parents.isEmpty() ? List.of() : graph.children(List.copyOf(parents));
    Adjacency adjacency = new Adjacency();
    for (List<long[]> edges : List.of(up.edges(), down.edges(), into, out)) {
      edges.forEach(adjacency::add);
    }
    List<Long> order = adjacency.subgraph(nodeId);
    row.truncated = order.size() > limit;
    row.ids = order.subList(0, (int) Math.min(limit, order.size()));
    Set<Long> kept = Set.copyOf(row.ids);
    row.nodes = row.ids.stream().map(graph::view).toList();
    Set<List<Long>> among = new TreeSet<>(Adjacency.ORDER);
    for (long[] e : graph.children(row.ids)) {
      if (kept.contains(e[1])) {
        among.add(List.of(e[0], e[1]));
      }
    }
    row.sources = among.stream().map(e -> e.get(0)).toList();
    row.targets = among.stream().map(e -> e.get(1)).toList();
    row.strategy = upPlan.strategy();
    row.levels = Math.max(up.levels(), down.levels());
    row.reached = kept.size() + (row.truncated ? 1 : 0);
    row.fetched =
        upPlan.expander().fetched() + downPlan.expander().fetched() + into.size() + out.size();
    row.sets = upPlan.sets() + downPlan.sets();
    return Stream.of(row);
  }

  /** The fetched edges both ways, each node's neighbours in id order. */
  static final class Adjacency {
    static final java.util.Comparator<List<Long>> ORDER =
        java.util.Comparator.comparing((List<Long> e) -> e.get(0)).thenComparing(e -> e.get(1));
    private final Map<Long, Set<Long>> children = new HashMap<>();
    private final Map<Long, Set<Long>> parents = new HashMap<>();

    void add(long[] e) {
      children.computeIfAbsent(e[0], k -> new TreeSet<>()).add(e[1]);
      parents.computeIfAbsent(e[1], k -> new TreeSet<>()).add(e[0]);
    }

    /** n, its ancestors, its descendants, then its descendants' siblings (graph.subgraph). */
    List<Long> subgraph(long n) {
      List<Long> ancestors = reach(n, parents);
      List<Long> descendants = reach(n, children);
      Set<Long> order = new LinkedHashSet<>(ancestors);
      order.addAll(descendants);
      for (long d : descendants.subList(1, descendants.size())) {
        for (long p : parents.getOrDefault(d, Set.of())) {
          order.addAll(children.getOrDefault(p, Set.of()));
        }
      }
      return new ArrayList<>(order);
    }

    private static List<Long> reach(long n, Map<Long, Set<Long>> step) {
      Set<Long> order = new LinkedHashSet<>(List.of(n));
      List<Long> frontier = List.of(n);
      while (!frontier.isEmpty()) {
        List<Long> following = new ArrayList<>();
        for (long m : frontier) {
          for (long next : step.getOrDefault(m, Set.of())) {
            if (order.add(next)) {
              following.add(next);
            }
          }
        }
        frontier = following;
      }
      return new ArrayList<>(order);
    }
  }
}
