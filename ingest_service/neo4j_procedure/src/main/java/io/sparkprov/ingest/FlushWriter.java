package io.sparkprov.ingest;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.neo4j.graphdb.Direction;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.ResourceIterable;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;
import org.neo4j.logging.Log;

/**
 * The work of one {@code sparkprov.write} call (see {@link Ingest}): upsert the blocks' nodes and
 * edges, then keep the ids exact in phases (components, level sets, connected sets, the
 * dependencies of sets whose members changed, set dependencies), then delete what was merged away.
 */
final class FlushWriter {
  static final Label NODE = Label.label("Node");
  static final Label COMPONENT = Label.label("Component");
  static final Label LEVEL_SET = Label.label("LevelSet");
  static final Label SET = Label.label("ConnectedSet");
  static final RelationshipType DERIVES = RelationshipType.withName("DERIVES");
  static final RelationshipType SET_DEP = RelationshipType.withName("SET_DEP");
  static final int LEVELS = 3;
  static final String[] LEVEL_KEYS = {"s0", "s1", "s2"};
  static final String COMPONENT_ID = "component_id";
  static final String SET_ID = "set_id";
  /**
   * A placeholder (an edge's end whose node has not arrived) carries {@code pending_run}: the run
   * of the edge that made it. Filling the node removes it, so at a run's completion the indexed
   * count of nodes still pending for it is the number of never-stored nodes its edges reference.
   */
  static final String PENDING = "pending_run";

  private static final long SLOW_MS = 2000;

  /** The phases of one call, timed and logged when a call is slow. */
  private enum Phase {
    UPSERT,
    COMPONENTS,
    LEVELS,
    SETS,
    REREAD,
    DEPS
  }

  /** An edge, from the node that is used to the node derived from it. */
  record Edge(long src, long dst) {}

  /** A component or a level set in a union by size: its id and its number of nodes. */
  record Group(long id, long size) {}

  /**
   * A node's connected set: the first split level whose set is below theta (else the deepest),
   * that level set's size, the component, and the connected set's id ({@link #setKey}).
   */
  record SetRow(int level, long size, long component, long setId) {}

  /**
   * What assigning connected sets changed: the rows of every set seen (by set id), the nodes that
   * moved to another set, the sets they left, and which of those shrank by refinement (their
   * other members stayed).
   */
  record SetChanges(
      Map<Long, SetRow> rows, Set<Long> movedNodes, Set<Long> oldSets, Set<Long> shrunk) {
    SetChanges() {
      this(new HashMap<>(), new HashSet<>(), new HashSet<>(), new HashSet<>());
    }
  }

  /** Node {@code id} of block {@code block} (its position in the call) differs from the stored. */
  record Conflict(long block, long id) {}

  /** The nodes and edges this call created for one run. */
  private static final class RunCounts {
    long nodes;
    long edges;
  }

  private final Transaction tx;
  private final Log log;
  private final long[] nanos = new long[Phase.values().length];
  private long touchedCount;
  private long rereadCount;

  private final Map<Long, Node> cache = new HashMap<>();
  // Ids whose node this call created (as a placeholder or to fill it at once).
  private final Set<Long> created = new HashSet<>();
  private final Map<Node, String[]> splits = new HashMap<>();
  private final Map<String, Node> levelSets = new HashMap<>();
  // Per run: the nodes of its blocks that conflict with their stored version.
  private final Map<String, List<Conflict>> conflicts = new HashMap<>();
  // Nodes to delete at the end of the call (see deleteDoomed).
  private final List<Node> doomed = new ArrayList<>();
  private final Map<String, Node> doomedLevelSets = new HashMap<>();

  FlushWriter(Transaction tx, Log log) {
    this.tx = tx;
    this.log = log;
  }

  Stream<Ingest.Written> write(List<NodeBlock> blocks, List<EdgeBlock> edgeBlocks, long theta) {
    long started = System.nanoTime();
    Map<String, RunCounts> perRun = new LinkedHashMap<>();
    Set<Long> fresh = new HashSet<>();
    for (int b = 0; b < blocks.size(); b++) {
      writeBlock(b, blocks.get(b), perRun, fresh);
    }
    Set<Edge> edges = writeEdges(edgeBlocks, perRun);
    lap(Phase.UPSERT, started);
    long merges = maintainIds(edges, fresh, theta);
    logIfSlow(started, fresh.size(), edges.size());
    return results(perRun, merges).stream();
  }

  private long lap(Phase phase, long since) {
    long now = System.nanoTime();
    nanos[phase.ordinal()] += now - since;
    return now;
  }

  private long ms(Phase phase) {
    return nanos[phase.ordinal()] / 1_000_000;
  }

  private void logIfSlow(long started, int freshNodes, int edges) {
    long totalMs = (System.nanoTime() - started) / 1_000_000;
    if (totalMs >= SLOW_MS || log.isDebugEnabled()) {
      log.info(
          "sparkprov.write took %d ms: %d fresh nodes, %d edges; ms: upsert %d, components %d, levels %d,"
              + " sets %d, reread %d, deps %d; touched %d, reread %d",
          totalMs, freshNodes, edges, ms(Phase.UPSERT), ms(Phase.COMPONENTS), ms(Phase.LEVELS),
          ms(Phase.SETS), ms(Phase.REREAD), ms(Phase.DEPS), touchedCount, rereadCount);
    }
  }

  private List<Ingest.Written> results(Map<String, RunCounts> perRun, long merges) {
    List<Ingest.Written> out = new ArrayList<>();
    perRun.forEach(
        (run, c) -> {
          List<Conflict> found = conflicts.getOrDefault(run, List.of());
          out.add(
              new Ingest.Written(
                  run,
                  c.nodes,
                  c.edges,
                  merges,
                  found.stream().map(Conflict::block).toList(),
                  found.stream().map(Conflict::id).toList()));
        });
    return out;
  }

  // ---- Upsert: nodes and edges ------------------------------------------------------------

  private void writeBlock(
      int position, NodeBlock block, Map<String, RunCounts> perRun, Set<Long> fresh) {
    RunCounts counts = perRun.computeIfAbsent(block.run(), r -> new RunCounts());
    String relation = block.relation() == null ? "" : block.relation();
    String[] splitPath = block.split().toArray(new String[0]);
    for (int i = 0; i < block.ids().length; i++) {
      long id = block.ids()[i];
      Node n = node(id);
      String label = block.labelOf(i);
      if (n.hasProperty("op")) {
        // Stored before (by an earlier flush or block): at-least-once delivery re-sent it, or
        // another version of the node was sent, which is reported and not stored.
        if (differs(n, block.run(), block.op(), label, relation, block.shared())) {
          conflicts.computeIfAbsent(block.run(), r -> new ArrayList<>())
              .add(new Conflict(position, id));
        }
        continue;
      }
      fresh.add(id);
      fill(n, block, i, label, splitPath);
      if (!block.shared()) {
        counts.nodes++;
      }
    }
  }

  /**
   * Whether a node already stored (its {@code op} set, by an earlier call or block) differs from
   * this version in what identifies its content. Only the stored one is kept; at-least-once
   * duplicates (equal content) are not conflicts. A shared node (module state) is stored by its
   * first run and re-sent by later ones: its run is not compared.
   */
  private static boolean differs(
      Node n, String run, String op, String label, String relation, boolean shared) {
    return !op.equals(n.getProperty("op"))
        || !label.equals(n.getProperty("label", ""))
        || !relation.equals(n.getProperty("relation", ""))
        || !(shared || run.equals(n.getProperty("run_id", null)));
  }

  /** Gives node {@code i} of the block its content (a new node or a placeholder). */
  private void fill(Node n, NodeBlock block, int i, String label, String[] splitPath) {
    if (!created.contains(block.ids()[i])) {
      n.removeProperty(PENDING); // a placeholder an earlier flush's edge made
    }
    n.setProperty("run_id", block.run());
    n.setProperty("op", block.op());
    n.setProperty("label", label);
    if (block.relation() != null && !block.relation().isEmpty()) {
      n.setProperty("relation", block.relation());
    }
    if (!block.values().isEmpty()) {
      n.setProperty("value", block.values().get(i));
    }
    if (block.shared()) {
      n.setProperty("shared", true);
    }
    n.setProperty("split", splitPath);
    for (int a = 0; a < block.attributeNames().size(); a++) {
      if (!block.isNull(a, i)) {
        n.setProperty("a_" + block.attributeNames().get(a), block.attributeValues().get(a).get(i));
      }
    }
  }

  /** Creates each edge once (per call and in the store); returns this call's distinct edges. */
  private Set<Edge> writeEdges(List<EdgeBlock> blocks, Map<String, RunCounts> perRun) {
    Set<Edge> edges = new HashSet<>();
    for (EdgeBlock block : blocks) {
      RunCounts counts = perRun.computeIfAbsent(block.run(), r -> new RunCounts());
      for (int i = 0; i < block.size(); i++) {
        Edge e = new Edge(block.src()[i], block.dst()[i]);
        if (edges.add(e) && writeEdge(e, block.run())) {
          counts.edges++;
        }
      }
    }
    return edges;
  }

  /** Whether the edge was created (false: it was stored before). */
  private boolean writeEdge(Edge e, String run) {
    Node a = endOfEdge(e.src(), run);
    Node b = endOfEdge(e.dst(), run);
    if (connected(a, b, DERIVES)) {
      return false;
    }
    a.createRelationshipTo(b, DERIVES);
    return true;
  }

  /** An edge's end: a placeholder created here is marked pending for the edge's run. */
  private Node endOfEdge(long id, String run) {
    boolean before = cache.containsKey(id); // every node this call created is cached
    Node n = node(id);
    if (!before && created.contains(id)) {
      n.setProperty(PENDING, run);
    }
    return n;
  }

  /** The node with this id, created as a placeholder (its own component and sets) if missing. */
  private Node node(long id) {
    Node n = cache.get(id);
    if (n == null) {
      n = tx.findNode(NODE, "id", id);
      if (n == null) {
        created.add(id);
        n = tx.createNode(NODE);
        n.setProperty("id", id);
        n.setProperty(COMPONENT_ID, id);
        n.setProperty(SET_ID, id);
        for (String key : LEVEL_KEYS) {
          n.setProperty(key, id);
        }
      }
      cache.put(id, n);
    }
    return n;
  }

  private static boolean connected(Node a, Node b, RelationshipType type) {
    if (a.getDegree(type, Direction.OUTGOING) <= b.getDegree(type, Direction.INCOMING)) {
      try (ResourceIterable<Relationship> rels = a.getRelationships(Direction.OUTGOING, type)) {
        for (Relationship r : rels) {
          if (r.getEndNode().equals(b)) {
            return true;
          }
        }
      }
    } else {
      try (ResourceIterable<Relationship> rels = b.getRelationships(Direction.INCOMING, type)) {
        for (Relationship r : rels) {
          if (r.getStartNode().equals(a)) {
            return true;
          }
        }
      }
    }
    return false;
  }

  // ---- Ids: the phases ------------------------------------------------------------------------

  /** Keeps every id exact after the upsert; returns the number of components merged away. */
  private long maintainIds(Set<Edge> edges, Set<Long> fresh, long theta) {
    long t = System.nanoTime();
    Set<Edge> work = new HashSet<>(edges);
    work.addAll(incident(fresh));
    if (work.isEmpty() && fresh.isEmpty()) {
      return 0;
    }
    long merges = mergeComponents(work);
    t = lap(Phase.COMPONENTS, t);
    List<Edge> knownEdges = knownEdges(work);
    Set<Long> touched = mergeLevelSets(knownEdges, fresh, theta);
    touchedCount = touched.size();
    t = lap(Phase.LEVELS, t);
    SetChanges changes = assignConnectedSets(touched, theta);
    t = lap(Phase.SETS, t);
    Set<Long> gone = rereadChangedSets(changes, work, knownEdges, fresh, theta);
    t = lap(Phase.REREAD, t);
    writeSetDependencies(knownEdges, changes.rows(), theta);
    dropGoneSets(gone);
    deleteDoomed();
    lap(Phase.DEPS, t);
    return merges;
  }

  /** The stored DERIVES edges at these nodes. */
  private List<Edge> incident(Iterable<Long> ids) {
    List<Edge> out = new ArrayList<>();
    for (long id : ids) {
      Node n = node(id);
      try (ResourceIterable<Relationship> rels = n.getRelationships(DERIVES)) {
        for (Relationship r : rels) {
          out.add(new Edge(prop(r.getStartNode(), "id"), prop(r.getEndNode(), "id")));
        }
      }
    }
    return out;
  }

  /** The edges whose two ends are stored nodes (not placeholders): only these join sets. */
  private List<Edge> knownEdges(Collection<Edge> work) {
    List<Edge> out = new ArrayList<>();
    for (Edge e : work) {
      if (known(node(e.src())) && known(node(e.dst()))) {
        out.add(e);
      }
    }
    return out;
  }

  // Phase 1, components: every edge counts, known ends or not.

  private long mergeComponents(Set<Edge> work) {
    UnionFind components = new UnionFind();
    for (Edge e : work) {
      components.union(prop(node(e.src()), COMPONENT_ID), prop(node(e.dst()), COMPONENT_ID));
    }
    long merges = 0;
    for (List<Long> ids : components.groups().values()) {
      merges += mergeComponentGroup(ids);
    }
    return merges;
  }

  /** Merges components joined by this call's edges into the largest; returns how many merged. */
  private long mergeComponentGroup(List<Long> ids) {
    Map<Long, Node> stored = new HashMap<>();
    List<Group> groups = new ArrayList<>();
    for (long c : ids) {
      Node k = tx.findNode(COMPONENT, "id", c);
      stored.put(c, k);
      groups.add(new Group(c, k == null ? 1 : prop(k, "size")));
    }
    Group target = absorber(groups);
    for (Group g : groups) {
      if (g.id() != target.id()) {
        absorbComponent(g, target.id(), stored.get(g.id()));
      }
    }
    Node k = stored.get(target.id());
    if (k == null) {
      k = tx.createNode(COMPONENT);
      k.setProperty("id", target.id());
    }
    k.setProperty("size", total(groups));
    return groups.size() - 1;
  }

  private void absorbComponent(Group absorbed, long target, Node storedComponent) {
    for (Node n : members(COMPONENT_ID, absorbed.id(), absorbed.size())) {
      n.setProperty(COMPONENT_ID, target);
    }
    if (absorbed.size() > 1) { // a component of one node has no edges, so no ConnectedSet
      for (Node s : collect(tx.findNodes(SET, COMPONENT_ID, absorbed.id()))) {
        s.setProperty(COMPONENT_ID, target);
      }
    }
    if (storedComponent != null) {
      doomed.add(storedComponent);
    }
  }

  // Phase 2, level sets, level by level: edges whose two known ends share their part there.

  /** Returns the nodes whose connected set may have changed (fresh, moved, or refined). */
  private Set<Long> mergeLevelSets(List<Edge> knownEdges, Set<Long> fresh, long theta) {
    Set<Long> touched = new HashSet<>(fresh);
    for (int level = 0; level < LEVELS; level++) {
      for (List<Long> ids : levelUnions(level, knownEdges).groups().values()) {
        mergeLevelGroup(level, ids, theta, touched);
      }
    }
    return touched;
  }

  private UnionFind levelUnions(int level, List<Edge> knownEdges) {
    String key = LEVEL_KEYS[level];
    UnionFind sets = new UnionFind();
    for (Edge e : knownEdges) {
      Node a = node(e.src());
      Node b = node(e.dst());
      // Levels at or past a node's split depth are never read for it (setRow): skip them.
      // (Both ends of an edge in one part at this level have the same depth here.)
      if (level >= depth(a)) {
        continue;
      }
      if (samePart(split(a), split(b), level)) {
        sets.union(prop(a, key), prop(b, key));
      }
    }
    return sets;
  }

  private void mergeLevelGroup(int level, List<Long> ids, long theta, Set<Long> touched) {
    String key = LEVEL_KEYS[level];
    List<Group> groups = new ArrayList<>();
    for (long c : ids) {
      groups.add(new Group(c, levelSize(level, c)));
    }
    Group target = absorber(groups);
    long total = total(groups);
    for (Group g : groups) {
      if (g.id() == target.id()) {
        continue;
      }
      for (Node n : members(key, g.id(), g.size())) {
        n.setProperty(key, target.id());
        touched.add(prop(n, "id"));
      }
      setLevelSize(level, g.id(), 0);
    }
    setLevelSize(level, target.id(), total);
    // A set that crossed theta is refined: every member's connected set is recomputed.
    if (target.size() < theta && total >= theta) {
      for (Node n : collect(tx.findNodes(NODE, key, target.id()))) {
        touched.add(prop(n, "id"));
      }
    }
  }

  // Phase 3, connected sets of the touched nodes.

  private SetChanges assignConnectedSets(Set<Long> touched, long theta) {
    SetChanges changes = new SetChanges();
    for (long id : touched) {
      Node n = node(id);
      if (known(n)) {
        assignConnectedSet(n, id, theta, changes);
      }
    }
    return changes;
  }

  private void assignConnectedSet(Node n, long id, long theta, SetChanges changes) {
    SetRow row = setRow(n, theta);
    changes.rows().put(row.setId(), row);
    long current = prop(n, SET_ID);
    if (current == row.setId()) {
      return;
    }
    n.setProperty(SET_ID, row.setId());
    changes.movedNodes().add(id);
    changes.oldSets().add(current);
    // Left for a deeper level while its old set lives on (refinement): the old set shrank.
    for (int k = 0; k < row.level(); k++) {
      if (setKey(k, prop(n, LEVEL_KEYS[k])) == current) {
        changes.shrunk().add(current);
      }
    }
  }

  // Phase 4, the sets nodes left: adds the stored edges whose dependencies must be re-read.

  /** Returns the sets none of whose nodes still carries their id (merged into another set). */
  private Set<Long> rereadChangedSets(
      SetChanges changes, Set<Edge> work, List<Edge> knownEdges, Set<Long> fresh, long theta) {
    Set<Long> gone = new HashSet<>();
    if (changes.movedNodes().isEmpty()) {
      return gone;
    }
    // The stored edges of nodes that changed set get their dependencies re-read.
    // A fresh node's stored edges are all in `work` already (incident(fresh) in maintainIds).
    Set<Long> reread = new HashSet<>(changes.movedNodes());
    reread.removeAll(fresh);
    for (long old : changes.oldSets()) {
      boolean lives =
          changes.shrunk().contains(old)
              ? compactShrunkSet(old, reread, changes.rows(), theta)
              : hasMembers(old);
      if (!lives) {
        gone.add(old);
      }
    }
    rereadCount = reread.size();
    for (Edge e : incident(reread)) {
      if (!work.contains(e) && known(node(e.src())) && known(node(e.dst()))) {
        work.add(e);
        knownEdges.add(e);
      }
    }
    return gone;
  }

  private boolean hasMembers(long set) {
    try (ResourceIterator<Node> members = tx.findNodes(NODE, SET_ID, set)) {
      return members.hasNext();
    }
  }

  /**
   * Refinement moved some members of {@code old} to a deeper level: the set shrank, so its
   * dependencies are recomputed from all of its remaining members' edges (the atomic
   * compaction). Returns false if no member is left.
   */
  private boolean compactShrunkSet(
      long old, Set<Long> reread, Map<Long, SetRow> rows, long theta) {
    List<Node> members = collect(tx.findNodes(NODE, SET_ID, old));
    if (members.isEmpty()) {
      return false;
    }
    Node s = tx.findNode(SET, "id", old);
    if (s != null) {
      deleteRelationships(s, SET_DEP);
    }
    for (Node m : members) {
      reread.add(prop(m, "id"));
    }
    SetRow row = setRow(members.get(0), theta);
    rows.put(row.setId(), row);
    return true;
  }

  // Phase 5, set dependencies and the ConnectedSet nodes.

  private void writeSetDependencies(List<Edge> knownEdges, Map<Long, SetRow> rows, long theta) {
    Map<Long, Set<Long>> deps = new HashMap<>();
    Set<Long> ends = new HashSet<>();
    for (Edge e : knownEdges) {
      Node a = node(e.src());
      Node b = node(e.dst());
      long sa = prop(a, SET_ID);
      long sb = prop(b, SET_ID);
      if (sa != sb) {
        deps.computeIfAbsent(sa, s -> new HashSet<>()).add(sb);
        dependencyEnd(a, ends, rows, theta);
        dependencyEnd(b, ends, rows, theta);
      }
    }
    Map<Long, Node> setNodes = storeSets(rows.values(), ends);
    for (Map.Entry<Long, Set<Long>> dep : deps.entrySet()) {
      Node a = setNodes.get(dep.getKey());
      for (long dst : dep.getValue()) {
        Node b = setNodes.get(dst);
        if (!connected(a, b, SET_DEP)) {
          a.createRelationshipTo(b, SET_DEP);
        }
      }
    }
  }

  private void dependencyEnd(Node end, Set<Long> ends, Map<Long, SetRow> rows, long theta) {
    long s = prop(end, SET_ID);
    ends.add(s);
    if (!rows.containsKey(s)) {
      SetRow row = setRow(end, theta);
      rows.put(row.setId(), row);
    }
  }

  /** Only sets of more than one node or with dependencies get a ConnectedSet node. */
  private Map<Long, Node> storeSets(Collection<SetRow> rows, Set<Long> ends) {
    Map<Long, Node> setNodes = new HashMap<>();
    for (SetRow row : rows) {
      if (row.size() <= 1 && !ends.contains(row.setId())) {
        continue;
      }
      Node s = tx.findNode(SET, "id", row.setId());
      if (s == null) {
        s = tx.createNode(SET);
        s.setProperty("id", row.setId());
      }
      s.setProperty("level", (long) row.level()); // a long, as Cypher writes integers
      s.setProperty("size", row.size());
      s.setProperty(COMPONENT_ID, row.component());
      setNodes.put(row.setId(), s);
    }
    return setNodes;
  }

  /** A set id none of whose nodes still carries it is gone, with its dependencies. */
  private void dropGoneSets(Set<Long> gone) {
    for (long old : gone) {
      Node s = tx.findNode(SET, "id", old);
      if (s != null) {
        deleteRelationships(s, null);
        doomed.add(s);
      }
    }
  }

  /**
   * Deleted last: every index seek in a transaction merges the ids of the nodes the transaction
   * deleted so far (Neo4j's tx state), so seeks after deletions cost O(deleted).
   */
  private void deleteDoomed() {
    for (Node n : doomed) {
      n.delete();
    }
    for (Node n : doomedLevelSets.values()) {
      n.delete();
    }
  }

  // ---- Helpers --------------------------------------------------------------------------------

  /** The group that absorbs the others in a union by size: the largest, ties to the larger id. */
  private static Group absorber(List<Group> groups) {
    Group best = null;
    for (Group g : groups) {
      if (best == null
          || g.size() > best.size()
          || (g.size() == best.size() && g.id() > best.id())) {
        best = g;
      }
    }
    return best;
  }

  private static long total(List<Group> groups) {
    return groups.stream().mapToLong(Group::size).sum();
  }

  /**
   * The nodes whose {@code key} is {@code id}, a group of {@code size}. A group of one is its
   * founding node (ids start as the node's own id), found without an index seek: most merges
   * absorb a new node, and seeks on properties this transaction changed are the costly part.
   */
  private List<Node> members(String key, long id, long size) {
    if (size == 1) {
      Node n = cache.get(id);
      if (n == null) {
        n = tx.findNode(NODE, "id", id);
      }
      if (n != null && prop(n, key) == id) {
        return List.of(n);
      }
    }
    return collect(tx.findNodes(NODE, key, id));
  }

  private static long prop(Node n, String key) {
    return ((Number) n.getProperty(key)).longValue();
  }

  private static boolean known(Node n) {
    return n.hasProperty("op");
  }

  private String[] split(Node n) {
    return splits.computeIfAbsent(n, k -> (String[]) k.getProperty("split", new String[0]));
  }

  /** The number of split levels whose sets are kept for this node (at least one). */
  private int depth(Node n) {
    return Math.max(1, Math.min(split(n).length, LEVELS));
  }

  /** Whether two split paths share their part at this level (their first level+1 names). */
  private static boolean samePart(String[] a, String[] b, int level) {
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

  /** The node's connected set (see {@link SetRow}). */
  private SetRow setRow(Node n, long theta) {
    int levels = depth(n);
    int level = levels - 1;
    for (int k = 0; k < levels; k++) {
      if (levelSize(k, prop(n, LEVEL_KEYS[k])) < theta) {
        level = k;
        break;
      }
    }
    long id = prop(n, LEVEL_KEYS[level]);
    return new SetRow(level, levelSize(level, id), prop(n, COMPONENT_ID), setKey(level, id));
  }

  /**
   * The connected set's id: its level set's id at level 0, mixed with the level below (the same
   * node can head a set at several levels, and those sets differ).
   */
  static long setKey(int level, long id) {
    return level == 0 ? id : id ^ (level * 0x9E3779B97F4A7C15L);
  }

  private long levelSize(int level, long id) {
    Node s = levelSetNode(level + ":" + id);
    return s == null ? 1L : prop(s, "size");
  }

  /** The LevelSet node of a level set of two or more nodes (none for a group of one). */
  private Node levelSetNode(String key) {
    if (levelSets.containsKey(key)) {
      return levelSets.get(key);
    }
    Node s = tx.findNode(LEVEL_SET, "key", key);
    levelSets.put(key, s);
    return s;
  }

  /** Stores a level set's size; 0 removes it (merged away). Size 1 is implicit. */
  private void setLevelSize(int level, long id, long size) {
    String key = level + ":" + id;
    Node s = levelSetNode(key);
    if (size <= 1) {
      if (s != null) {
        doomedLevelSets.put(key, s);
        levelSets.put(key, null);
      }
      return;
    }
    if (s == null) {
      s = doomedLevelSets.remove(key);
      if (s == null) {
        s = tx.createNode(LEVEL_SET);
        s.setProperty("key", key);
      }
      levelSets.put(key, s);
    }
    s.setProperty("size", size);
  }

  /** Deletes the node's relationships of this type (all of them for null). */
  private static void deleteRelationships(Node n, RelationshipType type) {
    try (ResourceIterable<Relationship> rels =
        type == null ? n.getRelationships() : n.getRelationships(type)) {
      for (Relationship r : rels) {
        r.delete();
      }
    }
  }

  private static List<Node> collect(ResourceIterator<Node> nodes) {
    List<Node> out = new ArrayList<>();
    try (nodes) {
      nodes.forEachRemaining(out::add);
    }
    return out;
  }
}
