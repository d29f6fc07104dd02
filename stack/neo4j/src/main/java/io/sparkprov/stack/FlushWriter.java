package io.sparkprov.stack;

import java.util.ArrayList;
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

/** The work of one {@code sparkprov.write} call (see {@link Ingest}). */
final class FlushWriter {
  static final Label NODE = Label.label("Node");
  static final Label COMPONENT = Label.label("Component");
  static final Label LEVEL_SET = Label.label("LevelSet");
  static final Label SET = Label.label("ConnectedSet");
  static final RelationshipType DERIVES = RelationshipType.withName("DERIVES");
  static final RelationshipType SET_DEP = RelationshipType.withName("SET_DEP");
  static final int LEVELS = 3;
  static final String[] LEVEL_KEYS = {"s0", "s1", "s2"};

  private final Transaction tx;
  private final Log log;
  // Phase timings of this call (ns) and sizes, logged when a call is slow.
  private final long[] nanos = new long[6];
  private static final long SLOW_MS = 2000;
  private long touchedCount;
  private long rereadCount;

  FlushWriter(Transaction tx, Log log) {
    this.tx = tx;
    this.log = log;
  }

  private long lap(int phase, long since) {
    long now = System.nanoTime();
    nanos[phase] += now - since;
    return now;
  }

  record Edge(long src, long dst) {}

  private final Map<Long, Node> cache = new HashMap<>();
  // Ids whose node this call created (as a placeholder or to fill it at once).
  private final Set<Long> created = new HashSet<>();
  /**
   * A placeholder (an edge's end whose node has not arrived) carries {@code pending_run}: the run
   * of the edge that made it. Filling the node removes it, so at a run's completion the indexed
   * count of nodes still pending for it is the number of never-stored nodes its edges reference.
   */
  static final String PENDING = "pending_run";
  private final Map<String, Node> levelSets = new HashMap<>();
  // Nodes to delete at the end of the call (see maintainIds).
  private final List<Node> doomed = new ArrayList<>();
  private final Map<String, Node> doomedLevelSets = new HashMap<>();

  Stream<Ingest.Written> write(
      List<Map<String, Object>> blocks, List<Map<String, Object>> edgeBlocks, long theta) {
    long started = System.nanoTime();
    long t = started;
    Map<String, long[]> perRun = new LinkedHashMap<>();
    Set<Long> fresh = new HashSet<>();
    for (int b = 0; b < blocks.size(); b++) {
      writeBlock(b, blocks.get(b), perRun, fresh);
    }
    Set<Edge> edges = new HashSet<>();
    for (Map<String, Object> block : edgeBlocks) {
      String run = (String) block.get("run");
      List<?> src = (List<?>) block.get("src");
      List<?> dst = (List<?>) block.get("dst");
      long[] counts = perRun.computeIfAbsent(run, r -> new long[2]);
      for (int i = 0; i < src.size(); i++) {
        Edge e = new Edge(((Number) src.get(i)).longValue(), ((Number) dst.get(i)).longValue());
        if (!edges.add(e)) {
          continue;
        }
        Node a = endOfEdge(e.src, run);
        Node b = endOfEdge(e.dst, run);
        if (!connected(a, b, DERIVES)) {
          a.createRelationshipTo(b, DERIVES);
          counts[1]++;
        }
      }
    }
    t = lap(0, t);
    long merges = maintainIds(edges, fresh, theta);
    long totalMs = (System.nanoTime() - started) / 1_000_000;
    if (totalMs >= SLOW_MS || log.isDebugEnabled()) {
      log.info(
          "sparkprov.write took %d ms: %d fresh nodes, %d edges; ms: upsert %d, components %d, levels %d,"
              + " sets %d, reread %d, deps %d; touched %d, reread %d",
          totalMs, fresh.size(), edges.size(), nanos[0] / 1_000_000, nanos[1] / 1_000_000,
          nanos[2] / 1_000_000, nanos[3] / 1_000_000, nanos[4] / 1_000_000,
          nanos[5] / 1_000_000, touchedCount, rereadCount);
    }
    List<Ingest.Written> out = new ArrayList<>();
    perRun.forEach(
        (run, c) -> {
          List<Long>[] conflict = conflicts.getOrDefault(run, NO_CONFLICTS);
          out.add(new Ingest.Written(run, c[0], c[1], merges, conflict[0], conflict[1]));
        });
    return out.stream();
  }

  @SuppressWarnings("unchecked")
  private static final List<Long>[] NO_CONFLICTS = new List[] {List.of(), List.of()};

  // Per run: the blocks (positions) and ids of nodes that conflict with their stored version.
  private final Map<String, List<Long>[]> conflicts = new HashMap<>();

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

  @SuppressWarnings("unchecked")
  private void conflict(String run, int block, long id) {
    List<Long>[] lists =
        conflicts.computeIfAbsent(run, r -> new List[] {new ArrayList<>(), new ArrayList<>()});
    lists[0].add((long) block);
    lists[1].add(id);
  }

  private void writeBlock(
      int position, Map<String, Object> block, Map<String, long[]> perRun, Set<Long> fresh) {
    String run = (String) block.get("run");
    String op = (String) block.get("op");
    List<?> ids = (List<?>) block.get("ids");
    String label = (String) block.get("label");
    List<?> labels = (List<?>) block.get("labels");
    String relation = (String) block.get("relation");
    List<?> values = (List<?>) block.get("values");
    boolean shared = Boolean.TRUE.equals(block.get("shared"));
    List<?> split = (List<?>) block.get("split");
    String[] splitPath = split.toArray(new String[0]);
    List<?> attrNames = (List<?>) block.get("attribute_names");
    List<?> attrValues = (List<?>) block.get("attribute_values");
    List<?> nullRows = (List<?>) block.get("null_rows");
    List<Set<Long>> nulls = new ArrayList<>();
    for (Object rows : nullRows) {
      Set<Long> set = new HashSet<>();
      for (Object r : (List<?>) rows) {
        set.add(((Number) r).longValue());
      }
      nulls.add(set);
    }
    long[] counts = perRun.computeIfAbsent(run, r -> new long[2]);
    for (int i = 0; i < ids.size(); i++) {
      long id = ((Number) ids.get(i)).longValue();
      Node n = node(id);
      String nodeLabel = labels.isEmpty() ? label : (String) labels.get(i);
      if (n.hasProperty("op")) {
        // Stored before (by an earlier flush or block): at-least-once delivery re-sent it, or
        // another version of the node was sent, which is reported and not stored.
        if (differs(n, run, op, nodeLabel, relation == null ? "" : relation, shared)) {
          conflict(run, position, id);
        }
        continue;
      }
      fresh.add(id);
      if (!created.contains(id)) {
        n.removeProperty(PENDING); // a placeholder an earlier flush's edge made
      }
      n.setProperty("run_id", run);
      n.setProperty("op", op);
      n.setProperty("label", nodeLabel);
      if (relation != null && !relation.isEmpty()) {
        n.setProperty("relation", relation);
      }
      if (!values.isEmpty()) {
        n.setProperty("value", values.get(i));
      }
      if (shared) {
        n.setProperty("shared", true);
      } else {
        counts[0]++;
      }
      n.setProperty("split", splitPath);
      for (int a = 0; a < attrNames.size(); a++) {
        if (!nulls.get(a).contains((long) i)) {
          n.setProperty("a_" + attrNames.get(a), ((List<?>) attrValues.get(a)).get(i));
        }
      }
    }
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
        n.setProperty("component_id", id);
        n.setProperty("set_id", id);
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

  private static long prop(Node n, String key) {
    return ((Number) n.getProperty(key)).longValue();
  }

  private static boolean known(Node n) {
    return n.hasProperty("op");
  }

  private final Map<Node, String[]> splits = new HashMap<>();

  private String[] split(Node n) {
    return splits.computeIfAbsent(n, k -> (String[]) k.getProperty("split", new String[0]));
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

  private long maintainIds(Set<Edge> edges, Set<Long> fresh, long theta) {
    long t = System.nanoTime();
    Set<Edge> work = new HashSet<>(edges);
    work.addAll(incident(fresh));
    if (work.isEmpty() && fresh.isEmpty()) {
      return 0;
    }
    // Components: every edge counts, known ends or not.
    UnionFind components = new UnionFind();
    for (Edge e : work) {
      components.union(prop(node(e.src), "component_id"), prop(node(e.dst), "component_id"));
    }
    long merges = 0;
    for (Map.Entry<Long, List<Long>> group : components.groups().entrySet()) {
      List<Long> members = group.getValue();
      Map<Long, Long> sizes = new HashMap<>();
      Map<Long, Node> kept = new HashMap<>();
      for (long c : members) {
        Node k = tx.findNode(COMPONENT, "id", c);
        kept.put(c, k);
        sizes.put(c, k == null ? 1 : prop(k, "size"));
      }
      long target = absorber(sizes);
      long total = sizes.values().stream().mapToLong(Long::longValue).sum();
      for (long c : members) {
        if (c == target) {
          continue;
        }
        merges++;
        for (Node n : members("component_id", c, sizes.get(c))) {
          n.setProperty("component_id", target);
        }
        if (sizes.get(c) > 1) { // a component of one node has no edges, so no ConnectedSet
          for (Node s : collect(tx.findNodes(SET, "component_id", c))) {
            s.setProperty("component_id", target);
          }
        }
        Node k = kept.get(c);
        if (k != null) {
          doomed.add(k);
        }
      }
      Node k = kept.get(target);
      if (k == null) {
        k = tx.createNode(COMPONENT);
        k.setProperty("id", target);
      }
      k.setProperty("size", total);
    }

    t = lap(1, t);
    // Sets, level by level: edges whose two known ends share their part at that level.
    List<Edge> knownEdges = new ArrayList<>();
    for (Edge e : work) {
      if (known(node(e.src)) && known(node(e.dst))) {
        knownEdges.add(e);
      }
    }
    Set<Long> touched = new HashSet<>(fresh);
    for (int level = 0; level < LEVELS; level++) {
      String key = LEVEL_KEYS[level];
      UnionFind sets = new UnionFind();
      for (Edge e : knownEdges) {
        Node a = node(e.src);
        Node b = node(e.dst);
        // Levels at or past a node's split depth are never read for it (setRow): skip them.
        // (Both ends of an edge in one part at this level have the same depth here.)
        if (level >= Math.max(1, Math.min(split(a).length, LEVELS))) {
          continue;
        }
        if (samePart(split(a), split(b), level)) {
          sets.union(prop(a, key), prop(b, key));
        }
      }
      for (List<Long> members : sets.groups().values()) {
        Map<Long, Long> sizes = new HashMap<>();
        for (long c : members) {
          sizes.put(c, levelSize(level, c));
        }
        long target = absorber(sizes);
        long best = sizes.get(target);
        long total = sizes.values().stream().mapToLong(Long::longValue).sum();
        for (long c : members) {
          if (c == target) {
            continue;
          }
          for (Node n : members(key, c, sizes.get(c))) {
            n.setProperty(key, target);
            touched.add(prop(n, "id"));
          }
          setLevelSize(level, c, 0);
        }
        setLevelSize(level, target, total);
        // A set that crossed theta is refined: every member's connected set is recomputed.
        if (best < theta && total >= theta) {
          for (Node n : collect(tx.findNodes(NODE, key, target))) {
            touched.add(prop(n, "id"));
          }
        }
      }
    }

    t = lap(2, t);
    touchedCount = touched.size();
    // Connected sets of the touched nodes.
    Map<Long, long[]> rows = new HashMap<>(); // set id -> {level, size, component}
    Map<Long, Long> changed = new HashMap<>();
    Set<Long> oldSets = new HashSet<>();
    Set<Long> shrunk = new HashSet<>();
    for (long id : touched) {
      Node n = node(id);
      if (!known(n)) {
        continue;
      }
      long[] row = setRow(n, theta);
      rows.put(row[3], row);
      long current = prop(n, "set_id");
      if (current != row[3]) {
        n.setProperty("set_id", row[3]);
        changed.put(id, row[3]);
        oldSets.add(current);
        // Left for a deeper level while its old set lives on (refinement): the old set shrank.
        for (int k = 0; k < row[0]; k++) {
          if (setKey(k, prop(n, LEVEL_KEYS[k])) == current) {
            shrunk.add(current);
          }
        }
      }
    }
    Set<Long> gone = new HashSet<>();
    t = lap(3, t);
    if (!changed.isEmpty()) {
      // The stored edges of nodes that changed set get their dependencies re-read.
      // A fresh node's stored edges are all in `work` already (incident(fresh) above).
      Set<Long> reread = new HashSet<>(changed.keySet());
      reread.removeAll(fresh);
      for (long old : oldSets) {
        if (!shrunk.contains(old)) {
          try (ResourceIterator<Node> members = tx.findNodes(NODE, "set_id", old)) {
            if (!members.hasNext()) {
              gone.add(old); // merged into another set
            }
          }
          continue;
        }
        List<Node> members = collect(tx.findNodes(NODE, "set_id", old));
        if (members.isEmpty()) {
          gone.add(old);
          continue;
        }
        // Refinement moved some members to a deeper level: the set shrank, so its dependencies
        // are recomputed from all of its remaining members' edges (the atomic compaction).
        Node s = tx.findNode(SET, "id", old);
        if (s != null) {
          try (ResourceIterable<Relationship> rels = s.getRelationships(SET_DEP)) {
            for (Relationship r : rels) {
              r.delete();
            }
          }
        }
        for (Node m : members) {
          reread.add(prop(m, "id"));
        }
        long[] row = setRow(members.get(0), theta);
        rows.put(row[3], row);
      }
      rereadCount = reread.size();
      for (Edge e : incident(reread)) {
        if (!work.contains(e) && known(node(e.src)) && known(node(e.dst))) {
          work.add(e);
          knownEdges.add(e);
        }
      }
    }
    t = lap(4, t);
    Map<Long, Set<Long>> deps = new HashMap<>();
    Set<Long> ends = new HashSet<>();
    for (Edge e : knownEdges) {
      Node a = node(e.src);
      Node b = node(e.dst);
      long sa = prop(a, "set_id");
      long sb = prop(b, "set_id");
      if (sa != sb) {
        deps.computeIfAbsent(sa, s -> new HashSet<>()).add(sb);
        for (Node end : new Node[] {a, b}) {
          long s = prop(end, "set_id");
          ends.add(s);
          if (!rows.containsKey(s)) {
            long[] row = setRow(end, theta);
            rows.put(row[3], row);
          }
        }
      }
    }
    // Only sets of more than one node or with dependencies get a ConnectedSet node.
    Map<Long, Node> setNodes = new HashMap<>();
    for (long[] row : rows.values()) {
      if (row[1] <= 1 && !ends.contains(row[3])) {
        continue;
      }
      Node s = tx.findNode(SET, "id", row[3]);
      if (s == null) {
        s = tx.createNode(SET);
        s.setProperty("id", row[3]);
      }
      s.setProperty("level", row[0]);
      s.setProperty("size", row[1]);
      s.setProperty("component_id", row[2]);
      setNodes.put(row[3], s);
    }
    for (Map.Entry<Long, Set<Long>> dep : deps.entrySet()) {
      Node a = setNodes.get(dep.getKey());
      for (long dst : dep.getValue()) {
        Node b = setNodes.get(dst);
        if (!connected(a, b, SET_DEP)) {
          a.createRelationshipTo(b, SET_DEP);
        }
      }
    }
    // A set id none of whose nodes still carries it is gone, with its dependencies.
    for (long old : gone) {
      Node s = tx.findNode(SET, "id", old);
      if (s != null) {
        try (ResourceIterable<Relationship> rels = s.getRelationships()) {
          for (Relationship r : rels) {
            r.delete();
          }
        }
        doomed.add(s);
      }
    }
    // Deleted last: every index seek in a transaction merges the ids of the nodes the
    // transaction deleted so far (Neo4j's tx state), so seeks after deletions cost O(deleted).
    for (Node n : doomed) {
      n.delete();
    }
    for (Node n : doomedLevelSets.values()) {
      n.delete();
    }
    lap(5, t);
    return merges;
  }

  /** The group that absorbs the others in a union by size: the largest, ties to the larger id. */
  private static long absorber(Map<Long, Long> sizes) {
    long target = -1;
    long best = -1;
    for (Map.Entry<Long, Long> e : sizes.entrySet()) {
      long c = e.getKey();
      long size = e.getValue();
      if (size > best || (size == best && c > target)) {
        best = size;
        target = c;
      }
    }
    return target;
  }

  /** {level, size, component, set id} of the node's connected set. */
  private long[] setRow(Node n, long theta) {
    int levels = Math.max(1, Math.min(split(n).length, LEVELS));
    int level = levels - 1;
    for (int k = 0; k < levels; k++) {
      if (levelSize(k, prop(n, LEVEL_KEYS[k])) < theta) {
        level = k;
        break;
      }
    }
    long id = prop(n, LEVEL_KEYS[level]);
    return new long[] {level, levelSize(level, id), prop(n, "component_id"), setKey(level, id)};
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

  private static List<Node> collect(ResourceIterator<Node> nodes) {
    List<Node> out = new ArrayList<>();
    try (nodes) {
      nodes.forEachRemaining(out::add);
    }
    return out;
  }

  /** Union-find over ids; groups() lists each group of two or more. */
  static final class UnionFind {
    private final Map<Long, Long> parent = new HashMap<>();

    long find(long x) {
      long root = x;
      Long p;
      while ((p = parent.get(root)) != null && p != root) {
        root = p;
      }
      parent.putIfAbsent(x, x);
      long y = x;
      while (y != root) {
        long next = parent.get(y);
        parent.put(y, root);
        y = next;
      }
      return root;
    }

    void union(long a, long b) {
      if (a == b) {
        return;
      }
      long ra = find(a);
      long rb = find(b);
      if (ra != rb) {
        parent.put(ra, rb);
      }
    }

    Map<Long, List<Long>> groups() {
      Map<Long, List<Long>> out = new HashMap<>();
      for (long x : new ArrayList<>(parent.keySet())) {
        out.computeIfAbsent(find(x), r -> new ArrayList<>()).add(x);
      }
      out.values().removeIf(g -> g.size() < 2);
      return out;
    }
  }
}
