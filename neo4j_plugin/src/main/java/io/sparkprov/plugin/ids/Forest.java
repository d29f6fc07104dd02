package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Schema;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongFunction;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;
import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.ResourceIterable;
import org.neo4j.graphdb.Transaction;

/**
 * One union-find kept beside the data (docs/graph-schema.md, "Component and set ids"): the
 * components ({@code :Component}, keyed by {@code id}) or the sets of one split level ({@code
 * :LevelSet}, keyed by {@code "<level>:<id>"}). A data node carries the id it was born with in
 * {@link #nodeProperty}; a record's {@code parent} points towards the root, which holds {@code
 * size}; an id without a record is a root of size one carried by its founding node only.
 *
 * <p>Merges write one pointer instead of relabelling members (as streaming connected components
 * keep a disjoint-set summary and never relabel vertices), except a lone node, whose one property
 * is rewritten rather than given a record of its own. Not thread-safe: one per transaction.
 */
final class Forest {
  static final String PARENT = "parent";
  static final String SIZE = "size";
  /**
   * On a level set's root: some member's split path goes deeper than this level, so the set is
   * refined when it reaches theta (a set all of whose members end at this level never is).
   */
  static final String DEEPER = "deeper";
  /** On a component's root: the theta its connected sets are kept under. */
  static final String THETA = "theta";

  private final Transaction tx;
  private final Label label;
  private final String keyProperty;
  private final String nodeProperty;
  private final int level; // -1: components
  private final LongFunction<Node> nodes;
  private final ToIntFunction<Node> depth;
  private final Joins joins;
  private final Map<Long, Node> records = new Memo<>();
  private final Map<Long, Long> roots = new Memo<>();
  private final Map<Node, Long> births = new Memo<>();
  // Roots merged away in this transaction whose birth id is no longer carried (lone nodes).
  private final Map<Long, Long> absorbed = new HashMap<>();

  /** Whether the edge a -> b joins two groups of this level ({@link IdView#joins}). */
  interface Joins {
    boolean test(int level, Node a, Node b);
  }

  private Forest(
      Transaction tx, Label label, String keyProperty, String nodeProperty, int level,
      LongFunction<Node> nodes, ToIntFunction<Node> depth, Joins joins) {
    this.depth = depth;
    this.joins = joins;
    this.tx = tx;
    this.label = label;
    this.keyProperty = keyProperty;
    this.nodeProperty = nodeProperty;
    this.level = level;
    this.nodes = nodes;
  }

  static Forest components(Transaction tx, LongFunction<Node> nodes) {
    return new Forest(
        tx, Schema.COMPONENT, "id", Schema.COMPONENT_ID, -1, nodes, n -> 1,
        (level, a, b) -> true);
  }

  /** The sets of one split level; {@code depth} is a node's number of levels (IdView#depth). */
  static Forest levelSets(
      Transaction tx, int level, LongFunction<Node> nodes, ToIntFunction<Node> depth,
      Joins joins) {
    return new Forest(
        tx, Schema.LEVEL_SET, "key", Schema.LEVEL_KEYS[level], level, nodes, depth,
        joins);
  }

  /**
   * The birth id a data node carries here (its own id where it carries none). Read once per
   * node: a lone node whose id this transaction rewrites resolves the same through {@link
   * #absorbed}.
   */
  long birth(Node n) {
    Long cached = births.get(n);
    if (cached != null) {
      return cached;
    }
    Object v = n.getProperty(nodeProperty, null);
    long b = v == null ? ((Number) n.getProperty("id")).longValue() : ((Number) v).longValue();
    births.put(n, b);
    return b;
  }

  /** The current root of a birth id. */
  long root(long id) {
    Long cached = roots.get(id);
    long r = cached != null ? cached : storedRoot(id);
    Long next;
    while ((next = absorbed.get(r)) != null) {
      r = next;
    }
    return r;
  }

  /** The size of a root's group (one without a record). */
  long size(long root) {
    Node r = record(root);
    return r == null ? 1L : ((Number) r.getProperty(SIZE, 1L)).longValue();
  }

  /** Whether some member of a level set's group has levels below this one (see DEEPER). */
  boolean deeper(long root) {
    if (level < 0) {
      return false;
    }
    Node r = record(root);
    if (r != null) {
      return (Boolean) r.getProperty(DEEPER, false);
    }
    Node founder = nodes.apply(root);
    return founder != null && depth.applyAsInt(founder) > level + 1;
  }

  /**
   * The data nodes of a root's group, found by walking from its founding node (a root's id is
   * the id of the node that founded the group, which never leaves it) along the edges that join
   * groups here: every DERIVES edge for components; for a level set, the edges whose two known
   * ends share their part at this level ({@link IdView#joins}). A PARTNER relationship r -> g
   * joins as an edge (the folded rows' r -> times -> g do, times having g's split path). Relationships {@code skipped}
   * are not walked: given the edges a call is adding, this is the group as it was before it.
   * Walking costs what reading the group's edges costs, which is what a member index would be
   * used for, without an index entry per node to keep at every write.
   */
  List<Node> members(long root, Predicate<Relationship> skipped) {
    Node founder = nodes.apply(root);
    if (founder == null) {
      return List.of();
    }
    List<Node> out = new ArrayList<>();
    Set<Node> seen = new HashSet<>();
    Deque<Node> todo = new ArrayDeque<>();
    seen.add(founder);
    todo.add(founder);
    while (!todo.isEmpty()) {
      Node n = todo.poll();
      out.add(n);
      try (ResourceIterable<Relationship> rels =
          n.getRelationships(Direction.BOTH, Schema.DERIVES, Schema.PARTNER)) {
        for (Relationship r : rels) {
          Node a = r.getStartNode();
          Node b = r.getEndNode();
          Node other = a.equals(n) ? b : a;
          if (!seen.contains(other) && joins(a, b) && !skipped.test(r)) {
            seen.add(other);
            todo.add(other);
          }
        }
      }
    }
    return out;
  }

  private boolean joins(Node a, Node b) {
    return level < 0 || joins.test(level, a, b);
  }

  /** No edge skipped: a group as stored. */
  static final Predicate<Relationship> NONE = r -> false;

  // ---- Writes -------------------------------------------------------------------------------

  /** Merges root {@code id} (of {@code size}) into root {@code target}. */
  void absorb(long id, long target) {
    Node r = record(id);
    if (r == null) {
      Node founder = nodes.apply(id);
      if (founder != null && birth(founder) == id) {
        founder.setProperty(nodeProperty, target);
        absorbed.put(id, target);
        return;
      }
      r = createRecord(id);
    }
    r.setProperty(PARENT, key(target));
    r.removeProperty(SIZE);
    absorbed.put(id, target);
  }

  /** A component root's theta ({@code fallback} where its record names none, or it has none). */
  long theta(long root, long fallback) {
    Node r = record(root);
    return r == null ? fallback : ((Number) r.getProperty(THETA, fallback)).longValue();
  }

  /** Whether a component root's record names a theta other than this one. */
  boolean conflicts(long root, long theta) {
    Node r = record(root);
    return r != null && r.hasProperty(THETA) && theta(root, theta) != theta;
  }

  /** Names the theta on a component root's record that names none. */
  void claim(long root, long theta) {
    Node r = record(root);
    if (r != null && !r.hasProperty(THETA)) {
      r.setProperty(THETA, theta);
    }
  }

  /**
   * Sets a root's size, giving it a record: for a level set with {@link #DEEPER}, for a
   * component with its theta.
   */
  void setSize(long root, long size, boolean deeper, long theta) {
    Node r = record(root);
    if (r == null) {
      r = createRecord(root);
    }
    r.setProperty(SIZE, size);
    if (level < 0) {
      r.setProperty(THETA, theta);
    } else if (deeper) {
      r.setProperty(DEEPER, true);
    }
  }

  // ---- Records ------------------------------------------------------------------------------

  private long storedRoot(long id) {
    // Union by size keeps chains at most log2(size) long.
    long r = id;
    Node rec;
    while ((rec = record(r)) != null && rec.hasProperty(PARENT)) {
      r = idOf(rec.getProperty(PARENT));
    }
    roots.put(id, r);
    return r;
  }

  private Node record(long id) {
    if (records.containsKey(id)) {
      return records.get(id);
    }
    Node r = tx.findNode(label, keyProperty, key(id));
    records.put(id, r);
    return r;
  }

  private Node createRecord(long id) {
    Node r = tx.createNode(label);
    r.setProperty(keyProperty, key(id));
    records.put(id, r);
    return r;
  }

  private Object key(long id) {
    return level < 0 ? (Object) id : level + ":" + id;
  }

  private long idOf(Object key) {
    if (key instanceof Number number) {
      return number.longValue();
    }
    String k = (String) key;
    return Long.parseLong(k.substring(k.indexOf(':') + 1));
  }
}
