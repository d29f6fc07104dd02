package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Nodes;
import io.sparkprov.plugin.graph.Schema;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.LongFunction;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Transaction;

/**
 * A node's current component and connected set, resolved from the ids it was born with through
 * the union-finds ({@link Forest}): the one definition id maintenance, the Cypher functions
 * ({@link Ids}) and the queries share. A node's connected set is the set of its first split level
 * whose set holds fewer than theta nodes, else of its deepest level (CSProv, Algorithm 3).
 *
 * <p>Its public methods are all the queries (the query package) read of the ids.
 *
 * <p>Theta belongs to the component (level sets never leave one): its root record keeps the theta
 * its sets were kept under ({@link Forest#THETA}). A component of one node has no record and no
 * set to refine.
 */
public final class IdView {
  /** Ingest's default (ingest_service.levels.DEFAULT_THETA), for components that name none. */
  static final long DEFAULT_THETA = 25000;

  /** A node's connected set: its level, that level's root and size, and the set's id. */
  public record SetOf(int level, long root, long size, long id) {}

  final Forest components;
  final Forest[] levels = new Forest[Schema.LEVELS];
  /** The theta of components whose root names none (see {@link #thetaOf}). */
  final long theta;
  private final boolean perComponent;
  final Transaction tx;
  private final LongFunction<Node> nodes;
  private final Map<Node, Integer> depths = new Memo<>();
  private final Map<Node, String[]> splits = new Memo<>();
  private final Map<Node, Boolean> knowns = new Memo<>();
  private final Map<Node, Long> ids = new Memo<>();
  private final Visibility visibility;

  /**
   * A writer's view: every node it resolves lies in a component kept under {@code theta} (the
   * writer checks each component it touches) or in one of a single node.
   */
  IdView(Transaction tx, LongFunction<Node> nodes, long theta, Visibility visibility) {
    this(tx, nodes, theta, false, visibility);
  }

  private IdView(
      Transaction tx,
      LongFunction<Node> nodes,
      long theta,
      boolean perComponent,
      Visibility visibility) {
    this.visibility = visibility;
    this.perComponent = perComponent;
    this.tx = tx;
    this.nodes = nodes;
    this.components = Forest.components(tx, nodes);
    for (int k = 0; k < levels.length; k++) {
      levels[k] = Forest.levelSets(tx, k, nodes, this::depth, this::joins);
    }
    this.theta = theta;
  }

  /** A reader's view: each component's theta as stored on its root. */
  static IdView reader(Transaction tx) {
    return reader(tx, id -> tx.findNode(Schema.NODE, "id", id));
  }

  /** A reader's view that finds nodes by id with {@code nodes} (a caller's cache, say). */
  public static IdView reader(Transaction tx, LongFunction<Node> nodes) {
    return new IdView(tx, nodes, DEFAULT_THETA, true, Visibility.ALL);
  }

  /**
   * Whether some write's ids wait for the indexer ({@link IdWork}): until it ran, a view's
   * component and set ids are stale.
   */
  public static boolean idsPending(Transaction tx) {
    return IdIndexer.hasPending(tx);
  }

  Node nodeById(long id) {
    return nodes.apply(id);
  }

  /** The {@code :ConnectedSet} record of a current set (none for a lone node without deps). */
  Node setRecord(long setId) {
    return tx.findNode(Schema.SET, "id", setId);
  }

  public long component(Node n) {
    return components.root(components.birth(n));
  }

  /** Every node of the component of this component id. */
  public List<Node> componentNodes(long component) {
    return components.members(components.root(component), Forest.NONE);
  }

  /** The number of nodes of the component of this component id. */
  public long componentSize(long component) {
    return components.size(components.root(component));
  }

  /** Every node of the current connected set with this id ({@link Ids#members}). */
  public List<Node> setNodes(long setId) {
    return Ids.members(this, setId);
  }

  /** The number of nodes of the current connected set with this id. */
  public long setSize(long setId) {
    Node record = setRecord(setId);
    return record == null ? 1L : ((Number) record.getProperty("size", 1L)).longValue();
  }

  /**
   * The sets and every set they depend on, directly or not (backward: their set-lineage), or
   * that depend on them (forward), in walk order ({@link Ids#walk}).
   */
  public List<Long> setLineage(Collection<Long> sets, boolean backward) {
    return Ids.walk(this, sets, backward);
  }

  /** The root of the node's set at this level. */
  long levelRoot(Node n, int level) {
    return levels[level].root(levels[level].birth(n));
  }

  /** The theta the node's sets are kept under: its component's. */
  long thetaOf(Node n) {
    return perComponent ? components.theta(component(n), theta) : theta;
  }

  public SetOf set(Node n) {
    return setUnder(n, thetaOf(n));
  }

  /** The node's set, its component (root) known: its theta is read from there. */
  public SetOf set(Node n, long component) {
    return setUnder(n, perComponent ? components.theta(component, theta) : theta);
  }

  private SetOf setUnder(Node n, long theta) {
    int depth = depth(n);
    for (int k = 0; k < depth; k++) {
      long root = levelRoot(n, k);
      long size = levels[k].size(root);
      if (size < theta || k == depth - 1) {
        return new SetOf(k, root, size, setKey(k, root));
      }
    }
    throw new IllegalStateException("depth " + depth); // unreachable: depth >= 1
  }

  /**
   * Whether the node is a stored node (not a placeholder) as this view sees it, read once per
   * view: no node changes state while ids are kept.
   */
  boolean known(Node n) {
    return knowns.computeIfAbsent(n, visibility::known);
  }

  /** The node's id, read once per view. */
  long idOf(Node n) {
    return ids.computeIfAbsent(n, Nodes::idOf);
  }

  /** The number of split levels whose sets are kept for this node (at least one). */
  int depth(Node n) {
    return depths.computeIfAbsent(n, IdView::depthOf);
  }

  /** The node's split path, read once per view. */
  String[] split(Node n) {
    return splits.computeIfAbsent(n, IdView::splitOf);
  }

  static int depthOf(Node n) {
    return Math.max(1, Math.min(splitOf(n).length, Schema.LEVELS));
  }

  /**
   * Whether the edge a -> b joins level sets at this level: both ends are stored nodes (not
   * placeholders), the level is one the source's split path has, and the two paths share their
   * part there (their first level+1 names). Both ends of such an edge have the level.
   */
  boolean joins(int level, Node a, Node b) {
    if (!known(a) || !known(b) || level >= depth(a)) {
      return false;
    }
    return samePart(split(a), split(b), level);
  }

  static String[] splitOf(Node n) {
    return (String[]) n.getProperty("split", new String[0]);
  }

  /** Whether two split paths share their part at this level (their first level+1 names). */
  static boolean samePart(String[] a, String[] b, int level) {
    int la = Math.min(a.length, level + 1);
    int lb = Math.min(b.length, level + 1);
    if (la != lb) {
      return false;
    }
    for (int i = 0; i < la; i++) {
      if (!a[i].equals(b[i])) {
        return false;
      }
    }
    return true;
  }

  /**
   * The connected set's id: its level set's root at level 0, mixed with the level below (the
   * same node can head a set at several levels, and those sets differ).
   */
  static long setKey(int level, long root) {
    return level == 0 ? root : root ^ (level * 0x9E3779B97F4A7C15L);
  }

  /** The level-set root a set id stands for, at that level ({@link #setKey} inverted). */
  static long rootOfSet(int level, long setId) {
    return setKey(level, setId); // xor is its own inverse
  }
}
