package io.sparkprov.plugin.query;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;

/**
 * {@code CALL sparkprov.trace(nodeIds, direction, strategy, maxDepth, limit, views, autoFetchMax)}:
 * a backward or forward trace over the logical graph in one call, so the query service makes one
 * round trip per trace. The strategies are tests/reference/traces.py's, which stay the reference:
 * RECURSIVE expands level by level, COMPONENT walks the seeds' components' edges, CONNECTED_SET
 * walks the set-lineage (or set-descendants, {@code IdView.setLineage}) and then the edges into
 * (out of) those sets, AUTO picks from the stored sizes as traces._auto does. All return the same
 * nodes and edges, derived (member) nodes included.
 *
 * <p>One row. Unknown seeds make {@code missing} non-empty and everything else empty (the caller
 * answers NOT_FOUND). {@code nodes} holds a view per returned id when {@code views} is true.
 */
public final class Traces {
  /** query.proto's strategies, by name without the prefix. */
  static final Set<String> STRATEGIES = TraceMessage.STRATEGIES.keySet();

  @Context public Transaction tx;

  /** The one output row; edges are {@code sources[k] -> targets[k]}. */
  public static final class Row {
    public List<Long> missing;
    public List<Long> ids;
    public List<Map<String, Object>> nodes;
    public List<Long> sources;
    public List<Long> targets;
    public boolean truncated;
    public String strategy;
    /** The strategy asked for needs component or set ids, which were pending: RECURSIVE ran. */
    public boolean ids_pending;
    public long levels;
    public long reached;
    public long fetched;
    public long sets;
    /** With {@code encoded}: the trace as query.proto's TraceResponse bytes (TraceMessage). */
    public byte[] response;
  }

  @Procedure(name = "sparkprov.trace", mode = Mode.READ)
  @Description(
      "Backward or forward trace of nodes over the logical graph (member nodes derived), with a"
          + " strategy (AUTO, RECURSIVE, COMPONENT, CONNECTED_SET), a depth bound and a limit")
  public Stream<Row> trace(
      @Name("nodeIds") List<Long> nodeIds,
      @Name("direction") String direction,
      @Name(value = "strategy", defaultValue = "AUTO") String strategy,
      @Name(value = "maxDepth", defaultValue = "0") long maxDepth,
      @Name(value = "limit", defaultValue = "100000") long limit,
      @Name(value = "views", defaultValue = "true") boolean views,
      @Name(value = "autoFetchMax", defaultValue = "0") long autoFetchMax,
      @Name(value = "encoded", defaultValue = "false") boolean encoded) {
    boolean backward = backward(direction);
    if (!STRATEGIES.contains(strategy)) {
      throw new IllegalArgumentException("unknown strategy " + strategy);
    }
    if (nodeIds == null || nodeIds.isEmpty() || maxDepth < 0 || limit < 1) {
      throw new IllegalArgumentException("nodeIds must name a node; maxDepth >= 0; limit >= 1");
    }
    LogicalGraph graph = new LogicalGraph(tx);
    List<Long> seeds = List.copyOf(new LinkedHashSet<>(nodeIds));
    Row row = new Row();
    row.missing = seeds.stream().filter(id -> !graph.exists(id)).toList();
    if (!row.missing.isEmpty()) {
      return Stream.of(empty(row));
    }
    // Ids behind the data: while some write's ids wait, the strategies that read them would see
    // stale ones, so RECURSIVE runs instead (it reads only edges) and the row says why.
    boolean idsPending = graph.idsPending && !"RECURSIVE".equals(strategy);
    Plan plan = new Planner(graph, seeds, backward, maxDepth, autoFetchMax)
        .plan(idsPending ? "RECURSIVE" : strategy);
    row.ids_pending = idsPending;
    Traversal.Outcome outcome = Traversal.run(seeds, backward, maxDepth, limit, plan.expander());
    List<NodeView> nodes = views || encoded
        ? graph.nodes(outcome.ids(), outcome.edges(), seeds)
        : List.of();
    row.truncated = outcome.truncated();
    row.strategy = plan.strategy();
    row.levels = outcome.levels();
    row.reached = outcome.reached();
    row.fetched = plan.expander().fetched();
    row.sets = plan.sets();
    if (encoded) {
      TraceMessage.Stats stats = new TraceMessage.Stats(
          row.strategy, row.levels, row.fetched, row.sets, row.reached, row.ids_pending);
      row.response = TraceMessage.encode(nodes, outcome.edges(), row.truncated, stats);
      return Stream.of(emptyLists(row));
    }
    row.ids = outcome.ids();
    row.nodes = nodes.stream().map(NodeView::asMap).toList();
    row.sources = outcome.edges().stream().map(e -> e[0]).toList();
    row.targets = outcome.edges().stream().map(e -> e[1]).toList();
    return Stream.of(row);
  }

  static boolean backward(String direction) {
    return switch (direction) {
      case "BACKWARD" -> true;
      case "FORWARD" -> false;
      default -> throw new IllegalArgumentException("direction is BACKWARD or FORWARD");
    };
  }

  private static Row empty(Row row) {
    emptyLists(row);
    row.strategy = "";
    return row;
  }

  private static Row emptyLists(Row row) {
    row.ids = List.of();
    row.nodes = List.of();
    row.sources = List.of();
    row.targets = List.of();
    return row;
  }

  /** The strategy that runs, its expander, and the connected sets it visited. */
  record Plan(String strategy, Traversal.Expander expander, long sets) {}

  /** Turns a strategy (AUTO included) into a plan, as traces.py's trace and _auto do. */
  static final class Planner {
    private final LogicalGraph graph;
    private final List<Long> seeds;
    private final boolean backward;
    private final long maxDepth;
    private final long autoFetchMax;

    Planner(LogicalGraph graph, List<Long> seeds, boolean backward, long maxDepth, long max) {
      this.graph = graph;
      this.seeds = seeds;
      this.backward = backward;
      this.maxDepth = maxDepth;
      this.autoFetchMax = max;
    }

    Plan plan(String strategy) {
      return switch (strategy) {
        case "RECURSIVE" -> recursive();
        case "COMPONENT" -> component(components());
        case "CONNECTED_SET" -> connectedSet(setLineage());
        default -> auto();
      };
    }

    /**
     * COMPONENT when the seeds' components are small; else CONNECTED_SET when the set-lineage is
     * small; else RECURSIVE. A small depth limit, or no fetch allowed (the service's setting,
     * traces.AUTO_FETCH_MAX), goes RECURSIVE at once.
     */
    private Plan auto() {
      if ((maxDepth > 0 && maxDepth <= 2) || autoFetchMax <= 0) {
        return recursive();
      }
      Set<Long> components = components();
      if (components.isEmpty()) {
        return recursive();
      }
      long size = components.stream().mapToLong(graph::componentSize).sum();
      if (size <= autoFetchMax) {
        return component(components);
      }
      List<Long> walked = setLineage();
      if (walked.stream().mapToLong(graph::setSize).sum() <= autoFetchMax) {
        return connectedSet(walked);
      }
      return recursive();
    }

    private Plan recursive() {
      return new Plan("RECURSIVE", Traversal.recursive(graph, backward), 0);
    }

    private Plan component(Set<Long> components) {
      List<long[]> edges = new ArrayList<>();
      for (long c : components) {
        edges.addAll(graph.componentEdges(c));
      }
      return new Plan("COMPONENT", Traversal.indexed(edges, backward), 0);
    }

    private Plan connectedSet(List<Long> sets) {
      List<long[]> edges = backward ? graph.edgesIntoSets(sets) : graph.edgesOutOfSets(sets);
      return new Plan("CONNECTED_SET", Traversal.indexed(edges, backward), sets.size());
    }

    /** The seeds' current components (a derived seed's is its member's). */
    private Set<Long> components() {
      Set<Long> out = new TreeSet<>();
      for (long id : seeds) {
        Node owner = graph.owner(id);
        if (owner != null) {
          out.add(graph.ids.component(owner));
        }
      }
      return out;
    }

    /** The seeds' sets and their set-lineage (or set-descendants). */
    List<Long> setLineage() {
      Set<Long> sets = new LinkedHashSet<>();
      for (long id : seeds) {
        Node owner = graph.owner(id);
        sets.add(owner == null ? id : graph.ids.set(owner).id()); // no set yet: its own
      }
      return graph.ids.setLineage(sets, backward);
    }
  }
}
