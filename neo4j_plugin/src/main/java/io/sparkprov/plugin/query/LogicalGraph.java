package io.sparkprov.plugin.query;

import static io.sparkprov.plugin.graph.Nodes.idOf;

import io.sparkprov.plugin.graph.DerivedIds;
import io.sparkprov.plugin.graph.Schema;
import io.sparkprov.plugin.ids.IdView;
import io.sparkprov.plugin.query.MemberEdge.Derived;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.ResourceIterable;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;

/**
 * The logical graph (../shared/MODEL.md section 6) read from the stored one inside one
 * transaction: every method answers with the derived TENSOR and VALUE nodes of member edges as if
 * they were stored. The Java twin of query_service/store.py's reads (parents, children,
 * component_edges, edges_into_sets, edges_out_of_sets, resolve), which stay the reference the
 * integration tests compare against. Edges are {@code long[]{src, dst}}.
 */
final class LogicalGraph {
  private static final String[] KINDS = {"tensor", "value"};

  private final Transaction tx;
  final IdView ids;
  private final MemberEdge.Salts salts = new MemberEdge.Salts();
  private final Map<Long, Derived> derived = new HashMap<>();
  // Stored nodes by id (null: none), from index seeks and from the relationships walked: a trace
  // reads each node's view after reaching it, and seeks cost more than the walk.
  private final Map<Long, Node> nodes = new HashMap<>();
  // Each stored node's properties, read in one pass over its property chain: a trace needs a
  // node's id when it walks to it, its op when it expands it and all of it for its view, and
  // reading them one by one walked the chain three times (JFR: most of a trace's store reads).
  private final Map<Node, Long> idsOf = new HashMap<>();
  private final Map<Long, Map<String, Object>> props = new HashMap<>();
  private Map<String, Integer> keys;

  /**
   * Whether some write's ids wait for the indexer ({@code sparkprov.index}): node views then show
   * no ids (pending, not stale) and traces that need them run RECURSIVE ({@link Traces}).
   */
  final boolean idsPending;

  LogicalGraph(Transaction tx) {
    this.tx = tx;
    this.ids = IdView.reader(tx, this::stored);
    this.idsPending = IdView.idsPending(tx);
  }

  Node stored(long id) {
    if (nodes.containsKey(id)) {
      return nodes.get(id);
    }
    Node n = tx.findNode(Schema.NODE, "id", id);
    nodes.put(id, n);
    return n;
  }

  /** A stored node's id, remembering the node for {@link #stored} and its properties. */
  private long seen(Node n) {
    Long known = idsOf.get(n);
    if (known != null) {
      return known;
    }
    Map<String, Object> all = n.getAllProperties();
    long id = ((Number) all.get("id")).longValue();
    idsOf.put(n, id);
    nodes.putIfAbsent(id, n);
    props.putIfAbsent(id, all);
    return id;
  }

  /** A stored node's properties (null: no stored node), read once. */
  Map<String, Object> properties(long id) {
    Map<String, Object> known = props.get(id);
    if (known != null) {
      return known;
    }
    Node n = stored(id);
    if (n == null) {
      return null;
    }
    seen(n);
    return props.get(id);
  }

  /** The derived node with this id, or null (neither stored nor derived: unknown). */
  Derived resolve(long id) {
    Derived known = derived.get(id);
    if (known != null) {
      return known;
    }
    for (Map.Entry<String, Integer> key : memberKeys().entrySet()) {
      for (int i = 0; i < key.getValue(); i++) {
        for (String kind : KINDS) {
          long pair = DerivedIds.underive(id, salts.of(key.getKey(), i, kind));
          try (ResourceIterator<Relationship> rels =
              tx.findRelationships(Schema.DERIVES, Schema.PAIR, pair)) {
            rels.forEachRemaining(r -> expand(MemberEdge.of(r)));
          }
          if (derived.containsKey(id)) {
            return derived.get(id);
          }
        }
      }
    }
    return null;
  }

  /** Whether the id is a node of the logical graph (stored, placeholders included, or derived). */
  boolean exists(long id) {
    return stored(id) != null || resolve(id) != null;
  }

  /** Logical in-edges of the nodes (store.py's parents), each parent read whole for its view. */
  List<long[]> parents(List<Long> frontier) {
    return parents(frontier, true);
  }

  /**
   * Logical in-edges of the nodes. With {@code whole} false only each stored parent's id is read,
   * for callers that never show the parents: deletion propagation reads every parent of its
   * closure, most of them outside it, and reading their whole property chains was 63% of a
   * 10k-node deletion's samples (JFR, 10M uniform).
   */
  List<long[]> parents(List<Long> frontier, boolean whole) {
    List<long[]> out = new ArrayList<>();
    for (long id : frontier) {
      Node n = stored(id);
      if (n == null) {
        Derived d = resolve(id);
        if (d != null) {
          out.addAll(d.parents());
        }
        continue;
      }
      try (ResourceIterable<Relationship> rels =
          n.getRelationships(Direction.INCOMING, Schema.DERIVES)) {
        for (Relationship r : rels) {
          Node parent = r.getStartNode();
          out.add(new long[] {whole ? seen(parent) : idOf(parent), id});
        }
      }
      if ("AGGREGATE".equals(properties(id).get("op"))) {
        out.addAll(aggregateInputs(n, id));
      }
    }
    return out;
  }

  /** Logical out-edges of the nodes (store.py's children). */
  List<long[]> children(List<Long> frontier) {
    List<long[]> out = new ArrayList<>();
    for (long id : frontier) {
      Node n = stored(id);
      if (n == null) {
        Derived d = resolve(id);
        if (d != null) {
          out.addAll(d.children());
        }
        continue;
      }
      try (ResourceIterable<Relationship> rels =
          n.getRelationships(Direction.OUTGOING, Schema.DERIVES)) {
        for (Relationship r : rels) {
          out.add(new long[] {id, seen(r.getEndNode())});
          for (Derived d : expand(MemberEdge.of(r))) {
            if (d.isTensor()) {
              out.add(new long[] {id, d.id()});
            }
          }
        }
      }
    }
    return out;
  }

  /**
   * The derived TENSOR inputs of an AGGREGATE node: of the member edges into the group rows it
   * feeds, the TENSOR of the column whose aggregate it is (store.py's _aggregate_inputs).
   */
  private List<long[]> aggregateInputs(Node aggregate, long id) {
    List<long[]> out = new ArrayList<>();
    try (ResourceIterable<Relationship> toGroups =
        aggregate.getRelationships(Direction.OUTGOING, Schema.DERIVES)) {
      for (Relationship toGroup : toGroups) {
        try (ResourceIterable<Relationship> into =
            toGroup.getEndNode().getRelationships(Direction.INCOMING, Schema.DERIVES)) {
          for (Relationship r : into) {
            MemberEdge e = MemberEdge.of(r);
            Integer column = e == null ? null : e.columnOf(id, salts);
            if (column == null) {
              continue;
            }
            for (Derived d : e.column(column, salts)) {
              derived.put(d.id(), d);
              if (d.isTensor()) {
                out.add(new long[] {d.id(), d.aggregate()});
              }
            }
          }
        }
      }
    }
    return out;
  }

  /** Every logical edge out of the component's nodes, hence every edge of the component. */
  List<long[]> componentEdges(long component) {
    List<long[]> out = new ArrayList<>();
    for (Node a : ids.componentNodes(component)) {
      outEdges(a, out);
    }
    return out;
  }

  /** Logical edges whose source lies in the sets (a member's derived nodes lie in its set). */
  List<long[]> edgesOutOfSets(List<Long> sets) {
    List<long[]> out = new ArrayList<>();
    for (long s : sets) {
      for (Node a : ids.setNodes(s)) {
        outEdges(a, out);
      }
    }
    return out;
  }

  /**
   * Logical edges whose destination lies in the sets: stored ones, TENSOR -> AGGREGATE of member
   * edges into them, and m -> TENSOR, VALUE -> TENSOR of member edges out of them.
   */
  List<long[]> edgesIntoSets(List<Long> sets) {
    List<long[]> out = new ArrayList<>();
    List<Node> nodes = new ArrayList<>();
    for (long s : sets) {
      nodes.addAll(ids.setNodes(s));
    }
    for (Node b : nodes) {
      long bid = idOf(b);
      try (ResourceIterable<Relationship> rels =
          b.getRelationships(Direction.INCOMING, Schema.DERIVES)) {
        for (Relationship r : rels) {
          out.add(new long[] {idOf(r.getStartNode()), bid});
          for (Derived d : expand(MemberEdge.of(r))) {
            if (d.isTensor()) {
              out.add(new long[] {d.id(), d.aggregate()});
            }
          }
        }
      }
    }
    for (Node a : nodes) {
      try (ResourceIterable<Relationship> rels =
          a.getRelationships(Direction.OUTGOING, Schema.DERIVES)) {
        for (Relationship r : rels) {
          for (Derived d : expand(MemberEdge.of(r))) {
            if (d.isTensor()) {
              out.add(new long[] {idOf(a), d.id()});
              out.add(new long[] {d.value(), d.id()});
            }
          }
        }
      }
    }
    return out;
  }

  long componentSize(long component) {
    return ids.componentSize(component);
  }

  long setSize(long set) {
    return ids.setSize(set);
  }

  /** The node's op ("" for a placeholder or an unknown id). */
  String op(long id) {
    Node n = stored(id);
    if (n != null) {
      return String.valueOf(properties(id).getOrDefault("op", ""));
    }
    Derived d = resolve(id);
    return d == null ? "" : d.op();
  }

  /** The stored node that carries an id's ids: itself, or a derived node's member. */
  Node owner(long id) {
    Node n = stored(id);
    if (n != null) {
      return n;
    }
    Derived d = resolve(id);
    return d == null ? null : stored(d.edge().member());
  }

  /** The node's view as a map (NodeView.asMap); null for unknown ids. */
  Map<String, Object> view(long id) {
    NodeView v = node(id);
    return v == null ? null : v.asMap();
  }

  /** The node's view, as query_service/store.py builds its NodeView; null for unknown ids. */
  NodeView node(long id) {
    Node carrier = owner(id);
    if (carrier == null) {
      return resolve(id) == null ? null : node(id, null, null, null);
    }
    if (idsPending) {
      return node(id, properties(seen(carrier)), null, null);
    }
    return node(id, properties(seen(carrier)), ids.component(carrier), ids.set(carrier).id());
  }

  /**
   * The views of a trace's nodes, whose edges are {@code edges}: ids are looked up once per group
   * of nodes that must share them, not once per node. Every node of a trace is connected to a
   * seed, so when the seeds share a component all nodes do (its ids are the weakly connected
   * components, MODEL.md section 5); and two nodes joined by an edge whose carriers have the same
   * split path lie in the same connected set at every level, so they share their set.
   */
  List<NodeView> nodes(List<Long> traceIds, List<long[]> edges, List<Long> seeds) {
    // Carriers are numbered in trace order so that the same-set groups are an int union-find.
    Map<Long, Carrier> carrierOf = new HashMap<>(traceIds.size() * 2);
    Map<Long, Carrier> carriers = new HashMap<>(traceIds.size() * 2);
    for (long id : traceIds) {
      Long carrierId = carrierId(id);
      Carrier carrier = carrierId == null ? null : carriers.get(carrierId);
      Map<String, Object> p = carrier != null || carrierId == null ? null : properties(carrierId);
      if (p != null) {
        carrier = new Carrier(carrierId, carriers.size(), p, split(p));
        carriers.put(carrierId, carrier);
      }
      if (carrier != null) {
        carrierOf.put(id, carrier);
      }
    }
    Long shared = idsPending ? null : sharedComponent(seeds);
    int[] group = new int[carriers.size()];
    Arrays.setAll(group, i -> i);
    for (long[] e : edges) {
      Carrier a = carrierOf.get(e[0]);
      Carrier b = carrierOf.get(e[1]);
      if (a != null && b != null && a.id() != b.id() && Arrays.equals(a.split(), b.split())) {
        group[root(group, a.index())] = root(group, b.index());
      }
    }
    Long[] setOfGroup = new Long[group.length];
    List<NodeView> out = new ArrayList<>(traceIds.size());
    for (long id : traceIds) {
      Carrier carrier = carrierOf.get(id);
      if (carrier == null) {
        out.add(node(id));
        continue;
      }
      if (idsPending) {
        out.add(node(id, carrier.props(), null, null));
        continue;
      }
      Node c = stored(carrier.id());
      long component = shared != null ? shared : ids.component(c);
      int g = root(group, carrier.index());
      if (setOfGroup[g] == null) {
        setOfGroup[g] = ids.set(c, component).id();
      }
      out.add(node(id, carrier.props(), component, setOfGroup[g]));
    }
    return out;
  }

  /** A group's root in an int union-find, halving the path on the way. */
  private static int root(int[] group, int i) {
    while (group[i] != i) {
      group[i] = group[group[i]];
      i = group[i];
    }
    return i;
  }

  /**
   * The stored node that carries a trace node's ids (its index among the trace's carriers; a
   * derived node and its member share one), with its properties and split path.
   */
  private record Carrier(long id, int index, Map<String, Object> props, String[] split) {}

  /** The id of the stored node that carries an id's ids (itself, or a derived node's member). */
  private Long carrierId(long id) {
    if (stored(id) != null) {
      return id;
    }
    Derived d = resolve(id);
    return d == null ? null : d.edge().member();
  }

  private static String[] split(Map<String, Object> props) {
    Object v = props.get("split");
    return v instanceof String[] names ? names : new String[0];
  }

  /** The component all seeds lie in, or null when they lie in several (or one is unknown). */
  private Long sharedComponent(List<Long> seeds) {
    Long shared = null;
    for (long seed : seeds) {
      Node carrier = owner(seed);
      if (carrier == null) {
        return null;
      }
      long c = ids.component(carrier);
      if (shared != null && shared != c) {
        return null;
      }
      shared = c;
    }
    return shared;
  }

  /** A view from the carrier's properties ({@code carrierProps}: null for none). */
  private NodeView node(long id, Map<String, Object> carrierProps, Long component, Long set) {
    String runId = carrierProps == null ? "" : text(carrierProps, "run_id");
    Node n = stored(id);
    if (n != null) {
      Map<String, Object> props = carrierProps != null ? carrierProps : properties(id);
      Map<String, String> attributes = new TreeMap<>();
      props.forEach(
          (k, v) -> {
            if (k.startsWith("a_")) {
              attributes.put(k.substring(2), String.valueOf(v));
            }
          });
      return new NodeView(id, runId, text(props, "op"), text(props, "label"),
          text(props, "relation"), attributes, text(props, "value"), component, set);
    }
    Derived d = resolve(id);
    return new NodeView(id, runId, d.op(), d.label(), "", Map.of(),
        d.isTensor() ? "" : d.text(), component, set);
  }

  private static String text(Map<String, Object> props, String key) {
    Object v = props.get(key);
    return v == null ? "" : v.toString();
  }

  private void outEdges(Node a, List<long[]> out) {
    long aid = idOf(a);
    try (ResourceIterable<Relationship> rels =
        a.getRelationships(Direction.OUTGOING, Schema.DERIVES)) {
      for (Relationship r : rels) {
        out.add(new long[] {aid, idOf(r.getEndNode())});
        for (Derived d : expand(MemberEdge.of(r))) {
          if (d.isTensor()) {
            out.add(new long[] {aid, d.id()});
            out.add(new long[] {d.value(), d.id()});
            out.add(new long[] {d.id(), d.aggregate()});
          }
        }
      }
    }
  }

  /** A member edge's derived nodes (none for a plain edge), kept for later look-ups. */
  private List<Derived> expand(MemberEdge e) {
    if (e == null) {
      return List.of();
    }
    List<Derived> nodes = e.derived(salts);
    nodes.forEach(d -> derived.put(d.id(), d));
    return nodes;
  }

  private Map<String, Integer> memberKeys() {
    if (keys == null) {
      keys = new LinkedHashMap<>();
      try (ResourceIterator<Node> it = tx.findNodes(Schema.MEMBER_KEY)) {
        it.forEachRemaining(
            k ->
                keys.put(
                    (String) k.getProperty(Schema.KEY),
                    ((Number) k.getProperty(Schema.AGGREGATES, 0L)).intValue()));
      }
    }
    return keys;
  }
}
