package io.sparkprov.plugin.ids;

import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.graph.Nodes;
import io.sparkprov.plugin.graph.Schema;
import io.sparkprov.plugin.ids.IdView.SetOf;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.LongFunction;
import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.ResourceIterable;
import org.neo4j.graphdb.Transaction;

/**
 * Keeps the component and connected-set ids exact after one call's upsert, by reference
 * (docs/graph-schema.md, "Component and set ids"): components and level sets merge in their
 * union-finds ({@link Forest}); connected sets are derived from them ({@link IdView}), so only
 * the {@code :ConnectedSet} records and their {@code SET_DEP} relationships are maintained. Only
 * sets of more than one stored node have a record, and only dependencies between two such sets
 * are stored: a lone node's set and its dependencies are read from the node and its edges
 * ({@link Ids#neighbours}).
 *
 * <ul>
 *   <li>sets merged by this call's edges hand their dependencies to the set that absorbed them;
 *   <li>a set that grew past theta is refined: its members move to deeper sets, and the
 *       dependencies of all of them are read again from their edges (at most once per node and
 *       level: the set was below theta);
 *   <li>every edge this call made known (both ends stored) adds its dependency.
 * </ul>
 */
public final class IdMaintenance {
  /**
   * A connected set with a record before this call: its level, level root and size then, and
   * whether some member has a deeper level to be refined into.
   */
  private record OldSet(
      long id, int level, long root, long sizeBefore, boolean deeper, Node record) {}

  private final Transaction tx;
  private final LongFunction<Node> nodes;
  private final Visibility visibility;
  private final Runnable checkpoint;
  private long ticks;
  private final IdView view;
  private final long theta;
  private final Map<Long, Node> setRecords = new HashMap<>();
  private final Map<Long, Node> doomed = new HashMap<>();
  private final Set<Long> thetaChecked = new HashSet<>();
  // A node's set after this call's merges (final: no merge follows once it is read).
  private final Map<Node, SetOf> setOf = new Memo<>();
  // The edges this call adds to the level sets (see Forest.members).
  private Set<Edge> addedEdges = Set.of();
  long rereadCount;
  // What the call read and wrote, for the indexer's log of slow calls (IdIndexer.Result).
  private long incidentRead;
  private long depsWritten;
  private int refinedSets;
  // The most edges the set refinement of this call may re-read (RefinementTooLarge past it).
  private long rereadBound = Long.MAX_VALUE;

  IdMaintenance(
      Transaction tx, LongFunction<Node> nodes, long theta, Visibility visibility,
      Runnable checkpoint) {
    this.tx = tx;
    this.nodes = nodes;
    this.visibility = visibility;
    this.checkpoint = checkpoint;
    this.view = new IdView(tx, nodes, theta, visibility);
    this.theta = theta;
  }

  /**
   * Keeps every id exact after a write that keeps its ids in its own transaction (it sees the
   * whole stored graph); returns the number of components merged away.
   */
  public static long keep(
      Transaction tx, LongFunction<Node> nodes, long theta, Set<Edge> edges,
      Collection<Long> filled) {
    return apply(tx, nodes, theta, Visibility.ALL, edges, filled, () -> {}, Long.MAX_VALUE)
        .merges();
  }

  /**
   * Keeps every id exact after a write (or, for the indexer, after the writes it indexes) that
   * created {@code edges} and filled the placeholders {@code filled}; returns the number of
   * components merged away and what the call read. {@code nodes} finds a stored node by id.
   * Throws {@link RefinementTooLarge} (before reading them) when the sets this call refines
   * would have it re-read more than {@code rereadBound} edges.
   */
  static Applied apply(
      Transaction tx,
      LongFunction<Node> nodes,
      long theta,
      Visibility visibility,
      Set<Edge> edges,
      Collection<Long> filled,
      Runnable checkpoint,
      long rereadBound) {
    if (edges.isEmpty() && filled.isEmpty()) {
      return Applied.NONE;
    }
    IdMaintenance ids = new IdMaintenance(tx, nodes, theta, visibility, checkpoint);
    ids.rereadBound = rereadBound;
    long merges = ids.mergeComponents(edges);
    ids.maintainSets(ids.knownEdges(edges, filled));
    return new Applied(
        merges, ids.refinedSets, ids.rereadCount, ids.incidentRead, ids.depsWritten);
  }

  /**
   * What one call did: components merged away, sets refined, nodes whose edges were read again
   * (refined sets' members, lone nodes joined), the relationships read at them, and the set
   * dependencies written (new or already stored).
   */
  record Applied(long merges, int refined, long reread, long incident, long deps) {
    static final Applied NONE = new Applied(0, 0, 0, 0, 0);
  }

  /**
   * The edges that join sets for the first time: those whose two ends are stored nodes (not
   * placeholders), among the edges written and the stored edges of the placeholders filled.
   */
  private Set<Edge> knownEdges(Set<Edge> edges, Collection<Long> filled) {
    Set<Edge> out = new LinkedHashSet<>();
    for (Edge e : edges) {
      if (view.known(node(e.src())) && view.known(node(e.dst()))) {
        out.add(e);
      }
    }
    for (long id : filled) {
      forKnownIncident(node(id), out::add);
    }
    return out;
  }

  // ---- Components: every edge counts, placeholders included. ----------------------------------

  /** Returns the number of components merged away. */
  long mergeComponents(Collection<Edge> edges) {
    UnionFind uf = new UnionFind();
    Set<Long> roots = new HashSet<>();
    for (Edge e : edges) {
      long a = view.component(node(e.src()));
      long b = view.component(node(e.dst()));
      roots.add(a);
      roots.add(b);
      uf.union(a, b);
    }
    for (long root : roots) {
      checkTheta(root);
    }
    long merges = 0;
    for (List<Long> group : uf.groups().values()) {
      merge(view.components, group, theta);
      merges += group.size() - 1;
    }
    return merges;
  }

  /**
   * Refuses a component kept under another theta (its sets would be derived with the other), and
   * names this one on a record that names none (written before components kept theirs).
   */
  private void checkTheta(long root) {
    if (!thetaChecked.add(root)) {
      return;
    }
    if (view.components.conflicts(root, theta)) {
      throw new IllegalArgumentException(
          "theta " + theta + " differs from the " + view.components.theta(root, theta)
              + " component " + root + " was kept under: connected sets are exact for one"
              + " theta (set SPARKPROV_SET_THETA to it, or recompute the ids with"
              + " python -m ingest_service.reindex --write)");
    }
    view.components.claim(root, theta);
  }

  /** Union by size: the largest root absorbs the others (ties to the larger id). */
  private static void merge(Forest forest, List<Long> roots, long theta) {
    long target = roots.get(0);
    long targetSize = forest.size(target);
    long total = 0;
    boolean deeper = false;
    for (long r : roots) {
      long size = forest.size(r);
      total += size;
      deeper |= forest.deeper(r);
      if (size > targetSize || (size == targetSize && r > target)) {
        target = r;
        targetSize = size;
      }
    }
    for (long r : roots) {
      if (r != target) {
        forest.absorb(r, target);
      }
    }
    forest.setSize(target, total, deeper, theta);
  }

  // ---- Level sets and connected sets: edges whose two ends are stored nodes. -------------------

  /** Keeps level sets, connected-set records and set dependencies exact for these edges. */
  void maintainSets(Set<Edge> knownEdges) {
    addedEdges = knownEdges; // each joins sets for the first time
    List<Map<Long, List<Long>>> unions = new ArrayList<>();
    for (int level = 0; level < Schema.LEVELS; level++) {
      unions.add(levelUnions(level, knownEdges).groups());
    }
    List<OldSet> old = oldSets(unions); // read before any merge
    Set<Long> reread = lonesJoined(unions);
    for (int level = 0; level < Schema.LEVELS; level++) {
      for (List<Long> group : unions.get(level).values()) {
        merge(view.levels[level], group, theta);
      }
    }
    Map<Long, Long> mergedInto = new HashMap<>();
    Set<Long> refined = new HashSet<>();
    Rows rows = new Rows();
    checkRefinedSizes(old);
    for (OldSet o : old) {
      classify(o, mergedInto, refined, reread, rows);
    }
    checkRereadBound(reread, refined);
    List<long[]> moved = new ArrayList<>();
    for (OldSet o : old) {
      if (mergedInto.containsKey(o.id())) {
        takeDependencies(o, moved);
      }
    }
    writeDependencies(knownEdges, reread, moved, mergedInto, refined, rows);
    for (Node n : doomed.values()) {
      n.delete();
    }
    refinedSets = refined.size();
  }

  /** Whether the set {@code o} grew past theta in this call: it is refined by its sub-splits. */
  private boolean refines(OldSet o) {
    long size = view.levels[o.level()].size(view.levels[o.level()].root(o.root()));
    return o.deeper() && o.sizeBefore() < theta && size >= theta;
  }

  /**
   * The first guard of {@link #checkRereadBound}, before any set's members are walked: each
   * refined set re-reads at least its members before this call.
   */
  private void checkRefinedSizes(List<OldSet> old) {
    if (rereadBound == Long.MAX_VALUE) {
      return;
    }
    long members = 0;
    int sets = 0;
    for (OldSet o : old) {
      if (refines(o)) {
        members += o.sizeBefore();
        sets++;
        if (members > rereadBound) {
          throw new RefinementTooLarge(sets, rereadBound);
        }
      }
    }
  }

  /**
   * Refuses a call whose refined sets would have it re-read more edges than its bound: every
   * member of a set that grew past theta, and its edges, are read again, and sets of like size
   * grow past theta together (an aggregation's groups: at 3M rows, 37 sets and 971k edges in one
   * call), past Neo4j's heap at 10M. The indexer calls again with fewer writes.
   */
  private void checkRereadBound(Set<Long> reread, Set<Long> refined) {
    if (rereadBound == Long.MAX_VALUE || refined.isEmpty()) {
      return;
    }
    long edges = 0;
    for (long id : reread) {
      Node n = node(id);
      edges += n == null ? 0 : n.getDegree();
      if (edges > rereadBound) {
        throw new RefinementTooLarge(refined.size(), rereadBound);
      }
    }
  }

  private UnionFind levelUnions(int level, Collection<Edge> knownEdges) {
    UnionFind sets = new UnionFind();
    for (Edge e : knownEdges) {
      Node a = node(e.src());
      Node b = node(e.dst());
      // Levels at or past a node's split depth are never read for it (IdView.set): skip them.
      // (Both ends of an edge in one part at this level have the level: see IdView.joins.)
      if (level >= view.depth(a)) {
        continue;
      }
      checkTheta(view.component(a));
      if (IdView.samePart(view.split(a), view.split(b), level)) {
        sets.union(view.levelRoot(a, level), view.levelRoot(b, level));
      }
    }
    return sets;
  }

  /**
   * The nodes of one-node level sets that take part in a union of this call (read before any
   * merge). A lone node's dependencies were not stored; once its set has other nodes they are,
   * so its edges are read again.
   */
  private Set<Long> lonesJoined(List<Map<Long, List<Long>>> unions) {
    Set<Long> out = new LinkedHashSet<>();
    for (int level = 0; level < unions.size(); level++) {
      for (List<Long> group : unions.get(level).values()) {
        for (long root : group) {
          if (view.levels[level].size(root) <= 1) {
            out.add(root); // a one-node level set's root is its node
          }
        }
      }
    }
    return out;
  }

  /** The connected sets with a record whose level set takes part in a union of this call. */
  private List<OldSet> oldSets(List<Map<Long, List<Long>>> unions) {
    List<OldSet> out = new ArrayList<>();
    for (int level = 0; level < unions.size(); level++) {
      for (List<Long> group : unions.get(level).values()) {
        for (long root : group) {
          long id = IdView.setKey(level, root);
          Node record = setRecord(id);
          if (record != null && levelOf(record) == level) {
            Forest forest = view.levels[level];
            out.add(
                new OldSet(id, level, root, forest.size(root), forest.deeper(root), record));
          }
        }
      }
    }
    return out;
  }

  private void classify(
      OldSet o, Map<Long, Long> mergedInto, Set<Long> refined, Set<Long> reread, Rows rows) {
    int level = o.level();
    long root = view.levels[level].root(o.root());
    long size = view.levels[level].size(root);
    if (refines(o)) {
      // Grew past theta: its members' sets are deeper now; their dependencies are re-read.
      refined.add(o.id());
      reread.add(o.root()); // its founding node, even if its one property was just rewritten
      Set<Edge> added = addedEdges;
      for (Node m :
          view.levels[level].members(
              o.root(), r -> visibility.pending(r) || added.contains(edgeOf(r)))) {
        reread.add(view.idOf(m));
      }
      deleteDependencies(o.record());
      doom(o.id(), o.record());
      return;
    }
    long target = IdView.setKey(level, root);
    if (target != o.id()) {
      mergedInto.put(o.id(), target);
    }
    rows.put(new SetOf(level, root, size, target), view.component(node(root)));
  }

  /** The current sets this call touched, with a component id of each. */
  private static final class Rows {
    final Map<Long, SetOf> sets = new HashMap<>();
    final Map<Long, Long> components = new HashMap<>();

    void put(SetOf set, long component) {
      if (sets.putIfAbsent(set.id(), set) == null) {
        components.put(set.id(), component);
      }
    }

    /**
     * Whether a set has a record: more than one node. A set this call did not touch is an end of
     * a stored dependency, so it has one.
     */
    boolean kept(long id) {
      SetOf set = sets.get(id);
      return set == null || set.size() > 1;
    }
  }

  /** Removes a merged set's dependencies, keeping them (old ids) to hand to its absorber. */
  private void takeDependencies(OldSet o, List<long[]> moved) {
    try (ResourceIterable<Relationship> rels = o.record().getRelationships(Schema.SET_DEP)) {
      for (Relationship r : rels) {
        moved.add(new long[] {prop(r.getStartNode(), "id"), prop(r.getEndNode(), "id")});
        r.delete();
      }
    }
    doom(o.id(), o.record());
  }

  /**
   * Stores the dependencies of the edges this call made known and of the nodes it re-reads,
   * streamed edge by edge (a refined set's hub brings every edge it has: millions at 10M rows),
   * and hands merged sets' dependencies to their absorbers. Only sets of more than one node take
   * part ({@link #kept}).
   */
  private void writeDependencies(
      Collection<Edge> knownEdges,
      Set<Long> reread,
      List<long[]> moved,
      Map<Long, Long> mergedInto,
      Set<Long> refined,
      Rows rows) {
    rereadCount = reread.size();
    Map<Long, Set<Long>> deps = new HashMap<>();
    Set<Long> ends = new HashSet<>();
    for (long id : reread) {
      row(node(id), rows);
    }
    Consumer<Edge> depend = e -> addDependency(e, rows, deps, ends);
    knownEdges.forEach(depend);
    for (long id : reread) {
      forKnownIncident(node(id), depend);
    }
    for (long[] dep : moved) {
      Long src = mapSet(dep[0], mergedInto, refined);
      Long dst = mapSet(dep[1], mergedInto, refined);
      if (src != null && dst != null && !src.equals(dst) && rows.kept(src) && rows.kept(dst)) {
        deps.computeIfAbsent(src, s -> new HashSet<>()).add(dst);
        ends.add(src);
        ends.add(dst);
      }
    }
    Map<Long, Node> records = storeSets(rows, ends);
    for (Map.Entry<Long, Set<Long>> dep : deps.entrySet()) {
      Node a = records.get(dep.getKey());
      for (long dst : dep.getValue()) {
        tick();
        depsWritten++;
        Node b = records.get(dst);
        if (!Nodes.connected(a, b, Schema.SET_DEP)) {
          a.createRelationshipTo(b, Schema.SET_DEP);
        }
      }
    }
  }

  /** The edge's dependency, between two sets of more than one node. */
  private void addDependency(
      Edge e, Rows rows, Map<Long, Set<Long>> deps, Set<Long> ends) {
    SetOf sa = row(node(e.src()), rows);
    SetOf sb = row(node(e.dst()), rows);
    if (sa.id() != sb.id() && kept(sa) && kept(sb)) {
      deps.computeIfAbsent(sa.id(), s -> new HashSet<>()).add(sb.id());
      ends.add(sa.id());
      ends.add(sb.id());
    }
  }

  /** Whether a current set has a record: more than one node (a lone node's set has none). */
  private static boolean kept(SetOf set) {
    return set.size() > 1;
  }

  /** A set id after this call's merges (null: refined, its dependencies are re-read). */
  private static Long mapSet(long id, Map<Long, Long> mergedInto, Set<Long> refined) {
    if (refined.contains(id)) {
      return null;
    }
    return mergedInto.getOrDefault(id, id);
  }

  /** The node's current set; a set of more than one node is kept among the call's rows. */
  private SetOf row(Node n, Rows rows) {
    SetOf known = setOf.get(n); // no merge follows: a node's set is final here
    if (known != null) {
      return known;
    }
    SetOf set = view.set(n);
    if (kept(set) && !rows.sets.containsKey(set.id())) {
      rows.put(set, view.component(n));
    }
    setOf.put(n, set);
    return set;
  }

  /**
   * Only sets of more than one node have a record (all dependency ends are such sets). Returns
   * the records of the rows and of every dependency end.
   */
  private Map<Long, Node> storeSets(Rows rows, Set<Long> ends) {
    Map<Long, Node> out = new HashMap<>();
    for (SetOf row : rows.sets.values()) {
      tick();
      if (row.size() <= 1) {
        continue;
      }
      Node s = liveSetRecord(row.id());
      s.setProperty("level", (long) row.level()); // a long, as Cypher writes integers
      s.setProperty("size", row.size());
      s.setProperty(Schema.COMPONENT_ID, rows.components.get(row.id()));
      out.put(row.id(), s);
    }
    for (long end : ends) {
      if (!out.containsKey(end)) {
        // An end this call did not touch: a set that had a dependency before, so a record.
        Node s = setRecord(end);
        if (s == null) {
          throw new IllegalStateException("set " + end + " has a dependency but no record");
        }
        out.put(end, s);
      }
    }
    return out;
  }

  /** The record of a current set: the stored one, one doomed earlier in this call, or new. */
  private Node liveSetRecord(long id) {
    Node s = doomed.remove(id);
    if (s == null) {
      s = setRecord(id);
    }
    if (s == null) {
      s = tx.createNode(Schema.SET);
      s.setProperty("id", id);
    }
    setRecords.put(id, s);
    return s;
  }

  private Node setRecord(long id) {
    if (setRecords.containsKey(id)) {
      return setRecords.get(id);
    }
    Node s = tx.findNode(Schema.SET, "id", id);
    setRecords.put(id, s);
    return s;
  }

  /**
   * Deleted at the end of the call: every index seek in a transaction merges the ids of the nodes
   * the transaction deleted so far (Neo4j's tx state), so seeks after deletions cost O(deleted).
   */
  private void doom(long id, Node record) {
    doomed.put(id, record);
    setRecords.put(id, null);
  }

  private static void deleteDependencies(Node set) {
    try (ResourceIterable<Relationship> rels = set.getRelationships(Schema.SET_DEP)) {
      for (Relationship r : rels) {
        r.delete();
      }
    }
  }

  /**
   * Adds the stored DERIVES edges at {@code n} whose two ends are known nodes, leaving out the
   * edges of writes not indexed yet ({@link Visibility}); a PARTNER relationship r -> g counts as
   * the edge r -> g (its folded rows' r -> times -> g, times lying in g's sets).
   */
  private void forKnownIncident(Node n, Consumer<Edge> out) {
    try (ResourceIterable<Relationship> rels =
        n.getRelationships(Direction.BOTH, Schema.DERIVES, Schema.PARTNER)) {
      for (Relationship r : rels) {
        incidentRead++;
        Node a = r.getStartNode();
        Node b = r.getEndNode();
        if (view.known(a) && view.known(b) && !visibility.pending(r)) {
          out.accept(new Edge(view.idOf(a), view.idOf(b)));
        }
      }
    }
  }

  /**
   * Every few thousand steps, the caller's checkpoint: inside a procedure, Neo4j's termination
   * guard, so a transaction its client gave up on (or an operator killed) stops at once instead
   * of holding its locks and memory until the end of a long batch.
   */
  private void tick() {
    if ((++ticks & 4095) == 0) {
      checkpoint.run();
    }
  }

  private Edge edgeOf(Relationship r) {
    return new Edge(view.idOf(r.getStartNode()), view.idOf(r.getEndNode()));
  }

  private Node node(long id) {
    tick();
    return nodes.apply(id);
  }

  private static int levelOf(Node set) {
    return ((Number) set.getProperty("level")).intValue();
  }

  private static long prop(Node n, String key) {
    return ((Number) n.getProperty(key)).longValue();
  }
}
