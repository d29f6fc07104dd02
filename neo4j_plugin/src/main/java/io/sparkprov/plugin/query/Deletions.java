package io.sparkprov.plugin.query;

import io.sparkprov.plugin.graph.Schema;
import io.sparkprov.plugin.query.MemberEdge.Derived;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.ResourceIterable;
import org.neo4j.graphdb.Transaction;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;

/**
 * {@code CALL sparkprov.propagateDeletion(nodeIds, limit, autoFetchMax)}: deletion propagation
 * (Lipstick Definition 4.2, ../shared/MODEL.md section 4) over the logical graph in one call, as
 * query_service/deletion.py's {@code propagate} computes it on the forward closure: remove the
 * nodes, then, level by level and each removed node's children in id order, every node that had
 * incoming edges and lost all of them, or is TIMES, TENSOR or EXCLUDED (an anti join's excluded
 * row with its match: the pair's product) and lost any. Nothing is written.
 *
 * <p>One row: {@code missing} (unknown ids; nothing else then), {@code truncated} (the forward
 * closure, found with AUTO's strategy, has more than {@code limit} nodes; nothing else then),
 * {@code removed} (the given nodes first, then in removal order), and {@code aggregates}: per
 * surviving AGGREGATE node that lost an input, its id, label, value and the values of its
 * surviving TENSOR inputs in TENSOR id order, which the service recomputes the aggregate from.
 */
public final class Deletions {
  private static final Set<String> ALL_INPUTS = Set.of("TIMES", "TENSOR", "EXCLUDED");

  @Context public Transaction tx;

  /** The one output row. */
  public static final class Row {
    public List<Long> missing = List.of();
    public boolean truncated;
    public List<Long> removed = List.of();
    public List<Map<String, Object>> aggregates = List.of();
  }

  @Procedure(name = "sparkprov.propagateDeletion", mode = Mode.READ)
  @Description(
      "The nodes removed when these are deleted (Lipstick Definition 4.2), and the surviving"
          + " aggregates that lost inputs with their surviving inputs' values")
  public Stream<Row> propagateDeletion(
      @Name("nodeIds") List<Long> nodeIds,
      @Name(value = "limit", defaultValue = "1000000") long limit,
      @Name(value = "autoFetchMax", defaultValue = "0") long autoFetchMax) {
    if (nodeIds == null || nodeIds.isEmpty() || limit < 1) {
      throw new IllegalArgumentException("nodeIds must name a node; limit >= 1");
    }
    LogicalGraph graph = new LogicalGraph(tx);
    List<Long> seeds = List.copyOf(new LinkedHashSet<>(nodeIds));
    Row row = new Row();
    row.missing = seeds.stream().filter(id -> !graph.exists(id)).toList();
    if (!row.missing.isEmpty()) {
      return Stream.of(row);
    }
    Propagation p = new Propagation(graph);
    // The forward closure bounds the answer. The walk inside Neo4j reads only the closure's
    // edges (traces.AUTO_FETCH_MAX: no wholesale fetch), so it runs on the propagation's own
    // children, which it then finds read.
    Traversal.Expander walk =
        autoFetchMax <= 0
            ? p.childrenExpander()
            : new Traces.Planner(graph, seeds, false, 0, autoFetchMax).plan("AUTO").expander();
    if (Traversal.run(seeds, false, 0, limit, walk).truncated()) {
      row.truncated = true;
      return Stream.of(row);
    }
    Set<Long> removed = p.propagate(seeds);
    row.removed = List.copyOf(removed);
    row.aggregates = p.touched(removed);
    return Stream.of(row);
  }

  /** Definition 4.2 on the logical graph, with each node's parents and children read once. */
  static final class Propagation {
    private final LogicalGraph graph;
    private final Map<Long, Set<Long>> parents = new HashMap<>();
    private final Map<Long, Set<Long>> children = new HashMap<>();
    private final Map<Long, String> ops = new HashMap<>();

    Propagation(LogicalGraph graph) {
      this.graph = graph;
    }

    Set<Long> propagate(List<Long> deleted) {
      Set<Long> removed = new LinkedHashSet<>(deleted);
      List<Long> frontier = new ArrayList<>(deleted);
      while (!frontier.isEmpty()) {
        List<Long> following = new ArrayList<>();
        for (long n : frontier) {
          for (long child : children(n)) {
            if (!removed.contains(child)
                && (ALL_INPUTS.contains(op(child)) || removed.containsAll(parents(child)))) {
              removed.add(child);
              following.add(child);
            }
          }
        }
        frontier = following;
      }
      return removed;
    }

    /** The surviving AGGREGATE children of removed nodes, in id order, with their inputs. */
    List<Map<String, Object>> touched(Set<Long> removed) {
      Set<Long> touched = new TreeSet<>();
      for (long n : removed) {
        for (long c : children(n)) {
          if (!removed.contains(c) && op(c).equals("AGGREGATE")) {
            touched.add(c);
          }
        }
      }
      List<Map<String, Object>> out = new ArrayList<>();
      for (long a : touched) {
        Map<String, Object> view = graph.view(a);
        List<String> values = inputValues(a, removed);
        out.add(touchedRow(a, view, values));
      }
      return out;
    }

    /** The values of the aggregate's surviving TENSOR inputs, in TENSOR id order. */
    private List<String> inputValues(long aggregate, Set<Long> removed) {
      List<String> values = new ArrayList<>();
      for (long p : parents(aggregate)) {
        String value = removed.contains(p) ? null : tensorValue(p);
        if (value != null) {
          values.add(value);
        }
      }
      return values;
    }

    /** A TENSOR's value (its VALUE parent's), or null for a node that is no TENSOR. */
    private String tensorValue(long id) {
      Node n = graph.stored(id);
      if (n == null) {
        Derived d = graph.resolve(id);
        return d != null && d.isTensor() ? d.text() : null;
      }
      if (!"TENSOR".equals(n.getProperty("op", null))) {
        return null;
      }
      String value = null;
      try (ResourceIterable<Relationship> rels =
          n.getRelationships(Direction.INCOMING, Schema.DERIVES)) {
        for (Relationship r : rels) {
          Node v = r.getStartNode();
          if ("VALUE".equals(v.getProperty("op", null))) {
            value = String.valueOf(v.getProperty("value", ""));
          }
        }
      }
      return value;
    }

    /** The logical out-edges of a frontier, read through this propagation's cache. */
    Traversal.Expander childrenExpander() {
      return new Traversal.Expander() {
        private long fetched;

        @Override
        public List<long[]> next(List<Long> frontier) {
          List<long[]> out = new ArrayList<>();
          for (long n : frontier) {
            for (long c : children(n)) {
              out.add(new long[] {n, c});
            }
          }
          fetched += out.size();
          return out;
        }

        @Override
        public long fetched() {
          return fetched;
        }
      };
    }

    private Set<Long> parents(long id) {
      return parents.computeIfAbsent(id, k -> ends(graph.parents(List.of(k), false), 0));
    }

    private Set<Long> children(long id) {
      return children.computeIfAbsent(id, k -> ends(graph.children(List.of(k)), 1));
    }

    private String op(long id) {
      return ops.computeIfAbsent(id, graph::op);
    }

    private static Set<Long> ends(List<long[]> edges, int end) {
      Set<Long> out = new TreeSet<>();
      edges.forEach(e -> out.add(e[end]));
      return out;
    }
  }

  /**
   * One touched aggregate as the procedure yields it (read by query_service/store.py; its keys are
   * procedure-rows.json's {@code maps.aggregate}).
   */
  static Map<String, Object> touchedRow(long id, Map<String, Object> view, List<String> values) {
    return Map.of(
        "id", id, "label", view.get("label"), "value", view.get("value"), "values", values);
  }
}
