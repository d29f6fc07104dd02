package io.sparkprov.plugin.query;

import static io.sparkprov.plugin.graph.Nodes.idOf;

import io.sparkprov.plugin.graph.DerivedIds;
import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.graph.Schema;
import io.sparkprov.plugin.ids.IdView;
import io.sparkprov.plugin.query.MemberEdge.Column;
import io.sparkprov.plugin.query.MemberEdge.Derived;
import io.sparkprov.plugin.query.MemberEdge.Times;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
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
 *
 * <p>A join's rows folded into their member edges (docs/graph-schema.md, "A join's rows folded
 * into their member edges") are derived here too: a folded member edge {@code l -> g} stands for
 * its TIMES node {@code times} with the edges l -> times, partner -> times, times -> g and the
 * member's TENSOR and VALUE nodes with times as their member, never for an edge l -> g; a {@code
 * PARTNER} relationship r -> g is no logical edge but says r partners folded rows into g. A folded
 * TIMES node and its TENSOR and VALUE nodes lie in g's component and set. A TIMES node may be
 * stored and also folded (two aggregations of one join row): its edges are then read twice and
 * returned once.
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
    Times times = times(id);
    if (times != null) {
      return times;
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

  /**
   * The folded TIMES node with this id, from every folded member edge that names it (the
   * {@code times} index), or null when none does.
   */
  private Times times(long id) {
    List<MemberEdge> edges = new ArrayList<>();
    try (ResourceIterator<Relationship> rels =
        tx.findRelationships(Schema.DERIVES, Schema.TIMES, id)) {
      rels.forEachRemaining(r -> edges.add(MemberEdge.of(r)));
    }
    if (edges.isEmpty()) {
      return null;
    }
    List<long[]> tensors = new ArrayList<>();
    for (MemberEdge e : edges) {
      for (Column c : expand(e)) {
        if (c.isTensor()) {
          tensors.add(new long[] {id, c.id()});
        }
      }
    }
    Times t = new Times(id, List.copyOf(edges), tensors);
    derived.put(id, t);
    return t;
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
    Edges out = new Edges();
    for (long id : frontier) {
      Node n = stored(id);
      if (n == null) {
        Derived d = resolve(id);
        if (d != null) {
          out.addAll(d.parents(), d instanceof Times);
        }
        continue;
      }
      try (ResourceIterable<Relationship> rels =
          n.getRelationships(Direction.INCOMING, Schema.DERIVES)) {
        for (Relationship r : rels) {
          Object times = r.getProperty(Schema.TIMES, null);
          if (times != null) {
            out.folded(((Number) times).longValue(), id); // a folded row: times -> g
            continue;
          }
          Node parent = r.getStartNode();
          out.add(whole ? seen(parent) : idOf(parent), id);
        }
      }
      if ("AGGREGATE".equals(properties(id).get("op"))) {
        out.addAll(aggregateInputs(n, id), false);
      }
    }
    return out.list();
  }

  /** Logical out-edges of the nodes (store.py's children). */
  List<long[]> children(List<Long> frontier) {
    Edges out = new Edges();
    for (long id : frontier) {
      Node n = stored(id);
      if (n == null) {
        Derived d = resolve(id);
        if (d != null) {
          out.addAll(d.children(), d instanceof Times);
        }
        continue;
      }
      try (ResourceIterable<Relationship> rels =
          n.getRelationships(Direction.OUTGOING, Schema.DERIVES)) {
        for (Relationship r : rels) {
          MemberEdge e = MemberEdge.of(r);
          if (e != null && e.folded()) {
            out.folded(id, e.member()); // l -> times, not l -> g
            continue;
          }
          out.add(id, seen(r.getEndNode()));
          if (e != null) {
            columns(e, out, true, false, false);
          }
        }
      }
      partnerEdges(n, id, out);
      if ("TIMES".equals(properties(id).get("op"))) {
        Times folded = times(id); // stored, and folded into another aggregation's group too
        if (folded != null) {
          out.addAll(folded.children(), true);
        }
      }
    }
    return out.list();
  }

  /**
   * The edges r -> times of the folded rows that {@code r} partners: for each of its PARTNER
   * relationships r -> g, the folded member edges into g whose {@code partner} is r (found by
   * the {@code partner} index). A self-pair (partner = start) is left to its member edge.
   */
  private void partnerEdges(Node r, long id, Edges out) {
    Set<Node> groups = new HashSet<>();
    try (ResourceIterable<Relationship> rels =
        r.getRelationships(Direction.OUTGOING, Schema.PARTNER)) {
      for (Relationship p : rels) {
        groups.add(p.getEndNode());
      }
    }
    if (groups.isEmpty()) {
      return;
    }
    try (ResourceIterator<Relationship> rels =
        tx.findRelationships(Schema.DERIVES, Schema.PARTNER_PROPERTY, id)) {
      while (rels.hasNext()) {
        Relationship m = rels.next();
        if (groups.contains(m.getEndNode()) && !m.getStartNode().equals(r)) {
          out.folded(id, ((Number) m.getProperty(Schema.TIMES)).longValue());
        }
      }
    }
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
            for (Column c : e.column(column, salts)) {
              derived.put(c.id(), c);
              if (c.isTensor()) {
                out.add(new long[] {c.id(), c.aggregate()});
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
    Edges out = new Edges();
    for (Node a : ids.componentNodes(component)) {
      outEdges(a, out, true);
    }
    return out.list();
  }

  /**
   * Logical edges whose source lies in the sets: a member's derived nodes lie in its set, a
   * folded member's (its TIMES, TENSOR and VALUE nodes) in its group row's.
   */
  List<long[]> edgesOutOfSets(List<Long> sets) {
    Edges out = new Edges();
    for (long s : sets) {
      for (Node a : ids.setNodes(s)) {
        outEdges(a, out, false);
        if (mayHoldFolded(a)) {
          try (ResourceIterable<Relationship> rels =
              a.getRelationships(Direction.INCOMING, Schema.DERIVES)) {
            for (Relationship r : rels) {
              MemberEdge e = MemberEdge.of(r);
              if (e != null && e.folded()) {
                timesEdges(e, out);
              }
            }
          }
        }
      }
    }
    return out.list();
  }

  /**
   * Logical edges whose destination lies in the sets: stored ones, TENSOR -> AGGREGATE of member
   * edges into them, and m -> TENSOR, VALUE -> TENSOR of member edges out of them; of a folded
   * member edge into them, every edge of its TIMES node and its columns (all lie in g's set).
   */
  List<long[]> edgesIntoSets(List<Long> sets) {
    Edges out = new Edges();
    List<Node> nodes = new ArrayList<>();
    for (long s : sets) {
      nodes.addAll(ids.setNodes(s));
    }
    for (Node b : nodes) {
      long bid = idOf(b);
      try (ResourceIterable<Relationship> rels =
          b.getRelationships(Direction.INCOMING, Schema.DERIVES)) {
        for (Relationship r : rels) {
          MemberEdge e = MemberEdge.of(r);
          if (e != null && e.folded()) {
            out.addAll(e.timesParents(), true);
            timesEdges(e, out);
            continue;
          }
          out.add(idOf(r.getStartNode()), bid);
          if (e != null) {
            columns(e, out, false, false, true);
          }
        }
      }
    }
    for (Node a : nodes) {
      try (ResourceIterable<Relationship> rels =
          a.getRelationships(Direction.OUTGOING, Schema.DERIVES)) {
        for (Relationship r : rels) {
          MemberEdge e = MemberEdge.of(r);
          if (e != null && !e.folded()) {
            columns(e, out, true, true, false);
          }
        }
      }
    }
    return out.list();
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

  /**
   * The stored node that carries an id's ids: itself, or a derived node's carrier (its member,
   * or a folded member's group row).
   */
  Node owner(long id) {
    Node n = stored(id);
    if (n != null) {
      return n;
    }
    Derived d = resolve(id);
    return d == null ? null : stored(d.carrier());
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

  /** The id of the stored node that carries an id's ids (itself, or a derived node's carrier). */
  private Long carrierId(long id) {
    if (stored(id) != null) {
      return id;
    }
    Derived d = resolve(id);
    return d == null ? null : d.carrier();
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

  /**
   * The logical edges out of a stored node: its stored edges, a member's TENSOR and VALUE edges,
   * l -> times of its folded rows and r -> times of the folded rows it partners. With {@code
   * whole} a folded row's other edges too (times -> g and its columns', which lie in g's set).
   */
  private void outEdges(Node a, Edges out, boolean whole) {
    long aid = idOf(a);
    try (ResourceIterable<Relationship> rels =
        a.getRelationships(Direction.OUTGOING, Schema.DERIVES)) {
      for (Relationship r : rels) {
        MemberEdge e = MemberEdge.of(r);
        if (e != null && e.folded()) {
          out.folded(aid, e.member());
          if (whole) {
            timesEdges(e, out);
          }
          continue;
        }
        out.add(aid, idOf(r.getEndNode()));
        if (e != null) {
          columns(e, out, true, true, true);
        }
      }
    }
    partnerEdges(a, aid, out);
  }

  /** A folded row's edges out of its TIMES node and its columns: those sourced in g's set. */
  private void timesEdges(MemberEdge e, Edges out) {
    out.folded(e.member(), e.group());
    columns(e, out, true, true, true);
  }

  /**
   * Per column with a value, the member edge's member -> TENSOR, VALUE -> TENSOR and TENSOR ->
   * AGGREGATE edges, those asked for.
   */
  private void columns(
      MemberEdge e, Edges out, boolean fromMember, boolean fromValue, boolean onward) {
    for (Column c : expand(e)) {
      if (!c.isTensor()) {
        continue;
      }
      if (fromMember) {
        out.add(e.member(), c.id(), e.folded());
      }
      if (fromValue) {
        out.add(c.value(), c.id(), e.folded());
      }
      if (onward) {
        out.add(c.id(), c.aggregate(), e.folded());
      }
    }
  }

  /**
   * Whether folded member edges may end at the node: a group row (a DELTA) or a placeholder;
   * read so that walking a set's out-edges reads other nodes' in-edges not at all.
   */
  private boolean mayHoldFolded(Node a) {
    Object op = properties(seen(a)).get("op");
    return op == null || "DELTA".equals(op);
  }

  /** A member edge's derived column nodes (none for a plain edge), kept for later look-ups. */
  private List<Column> expand(MemberEdge e) {
    if (e == null) {
      return List.of();
    }
    List<Column> nodes = e.derived(salts);
    nodes.forEach(d -> derived.putIfAbsent(d.id(), d));
    return nodes;
  }

  /**
   * The edges one call returns. Each logical edge is read once, except where a TIMES node is
   * stored and folded too: once some edge came from a folded row, the list is deduplicated
   * (keeping the first of each), which a graph without folded rows never pays for.
   */
  private static final class Edges {
    private final List<long[]> list = new ArrayList<>();
    private boolean folded;

    void add(long src, long dst) {
      list.add(new long[] {src, dst});
    }

    void add(long src, long dst, boolean fromFolded) {
      add(src, dst);
      folded |= fromFolded;
    }

    /** An edge of a folded row. */
    void folded(long src, long dst) {
      add(src, dst, true);
    }

    void addAll(List<long[]> edges, boolean fromFolded) {
      list.addAll(edges);
      folded |= fromFolded;
    }

    List<long[]> list() {
      if (!folded) {
        return list;
      }
      Set<Edge> seen = new LinkedHashSet<>();
      List<long[]> out = new ArrayList<>(list.size());
      for (long[] e : list) {
        if (seen.add(new Edge(e[0], e[1]))) {
          out.add(e);
        }
      }
      return out;
    }
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
