package io.sparkprov.ingest;

import io.sparkprov.ingest.MemberEdge.Derived;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
  private Map<String, Integer> keys;

  LogicalGraph(Transaction tx) {
    this.tx = tx;
    this.ids = IdView.reader(tx);
  }

  Node stored(long id) {
    return tx.findNode(FlushWriter.NODE, "id", id);
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
              tx.findRelationships(FlushWriter.DERIVES, FlushWriter.PAIR, pair)) {
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

  /** Logical in-edges of the nodes (store.py's parents). */
  List<long[]> parents(List<Long> frontier) {
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
          n.getRelationships(Direction.INCOMING, FlushWriter.DERIVES)) {
        for (Relationship r : rels) {
          out.add(new long[] {idOf(r.getStartNode()), id});
        }
      }
      if ("AGGREGATE".equals(n.getProperty("op", null))) {
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
          n.getRelationships(Direction.OUTGOING, FlushWriter.DERIVES)) {
        for (Relationship r : rels) {
          out.add(new long[] {id, idOf(r.getEndNode())});
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
        aggregate.getRelationships(Direction.OUTGOING, FlushWriter.DERIVES)) {
      for (Relationship toGroup : toGroups) {
        try (ResourceIterable<Relationship> into =
            toGroup.getEndNode().getRelationships(Direction.INCOMING, FlushWriter.DERIVES)) {
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
    for (Node a : ids.components.members(ids.components.root(component), Set.of())) {
      outEdges(a, out);
    }
    return out;
  }

  /** Logical edges whose source lies in the sets (a member's derived nodes lie in its set). */
  List<long[]> edgesOutOfSets(List<Long> sets) {
    List<long[]> out = new ArrayList<>();
    for (long s : sets) {
      for (Node a : Ids.members(ids, s)) {
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
      nodes.addAll(Ids.members(ids, s));
    }
    for (Node b : nodes) {
      long bid = idOf(b);
      try (ResourceIterable<Relationship> rels =
          b.getRelationships(Direction.INCOMING, FlushWriter.DERIVES)) {
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
          a.getRelationships(Direction.OUTGOING, FlushWriter.DERIVES)) {
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

  /** The sets one SET_DEP step up (backward) or down from a set. */
  List<Long> setNeighbours(long set, boolean backward) {
    Node record = ids.setRecord(set);
    if (record == null) {
      return List.of();
    }
    List<Long> out = new ArrayList<>();
    Direction d = backward ? Direction.INCOMING : Direction.OUTGOING;
    try (ResourceIterable<Relationship> rels =
        record.getRelationships(d, FlushWriter.SET_DEP)) {
      for (Relationship r : rels) {
        out.add(idOf(r.getOtherNode(record)));
      }
    }
    return out;
  }

  long componentSize(long component) {
    return ids.components.size(ids.components.root(component));
  }

  long setSize(long set) {
    Node record = ids.setRecord(set);
    return record == null ? 1L : ((Number) record.getProperty("size", 1L)).longValue();
  }

  /** The node's op ("" for a placeholder or an unknown id). */
  String op(long id) {
    Node n = stored(id);
    if (n != null) {
      return String.valueOf(n.getProperty("op", ""));
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

  /** The node's view, as query_service/store.py builds its NodeView; null for unknown ids. */
  Map<String, Object> view(long id) {
    Node n = stored(id);
    if (n != null) {
      Map<String, Object> attributes = new LinkedHashMap<>();
      Map<String, Object> props = n.getAllProperties();
      props.forEach(
          (k, v) -> {
            if (k.startsWith("a_")) {
              attributes.put(k.substring(2), String.valueOf(v));
            }
          });
      return view(
          id, n, text(props, "op"), text(props, "label"), text(props, "relation"),
          text(props, "value"), attributes);
    }
    Derived d = resolve(id);
    if (d == null) {
      return null;
    }
    return view(id, stored(d.edge().member()), d.op(), d.label(), "",
        d.isTensor() ? "" : d.text(), Map.of());
  }

  private Map<String, Object> view(long id, Node carrier, String op, String label,
      String relation, String value, Map<String, Object> attributes) {
    Map<String, Object> out = new HashMap<>();
    out.put("id", id);
    out.put("op", op);
    out.put("label", label);
    out.put("relation", relation);
    out.put("value", value);
    out.put("attributes", attributes);
    out.put("run_id", carrier == null ? "" : text(carrier.getAllProperties(), "run_id"));
    out.put("component", carrier == null ? null : ids.component(carrier));
    out.put("set", carrier == null ? null : ids.set(carrier).id());
    return out;
  }

  private static String text(Map<String, Object> props, String key) {
    Object v = props.get(key);
    return v == null ? "" : v.toString();
  }

  private void outEdges(Node a, List<long[]> out) {
    long aid = idOf(a);
    try (ResourceIterable<Relationship> rels =
        a.getRelationships(Direction.OUTGOING, FlushWriter.DERIVES)) {
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
      try (ResourceIterator<Node> it = tx.findNodes(FlushWriter.MEMBER_KEY)) {
        it.forEachRemaining(
            k ->
                keys.put(
                    (String) k.getProperty(FlushWriter.KEY),
                    ((Number) k.getProperty(FlushWriter.AGGREGATES, 0L)).intValue()));
      }
    }
    return keys;
  }

  static long idOf(Node n) {
    return ((Number) n.getProperty("id")).longValue();
  }
}
