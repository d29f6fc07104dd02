package io.sparkprov.plugin.ids;

import static org.junit.jupiter.api.Assertions.fail;

import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.IntPredicate;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A seeded randomized property test of the ids {@code sparkprov.write} keeps by reference
 * (docs/graph-schema.md, "Component and set ids"; ../shared/MODEL.md section 5): after every
 * flush of a random lineage graph, the plugin's components, connected sets, {@code :Component}
 * and {@code :ConnectedSet} records, {@code SET_DEP} and the member procedures must equal a
 * from-scratch recomputation written here ({@link Model}, after tests/reference/sets.py's
 * {@code recompute}: Algorithm 3), compared as partitions since ids are arbitrary.
 *
 * <p>The graph has the shape ingest sees: relations whose split paths of one to three names share
 * prefixes (and one without a split), two large clusters built in the first flushes and joined
 * later, two medium groups that cross theta when joined, random edges, edges that arrive before
 * their ends (placeholders), nodes and edges re-sent (at-least-once), and a few ends whose records
 * never arrive. Theta is small (5 to 20) so that sets are refined past it often.
 */
class IdsPropertyTest {

  // ---- The workflow: relations and their split paths ------------------------------------------

  /** A relation of the workflow: its rows' op and split path. */
  record Relation(String name, String op, List<String> split) {
    int depth() {
      return Math.max(1, Math.min(split.size(), 3));
    }

    String path() {
      return split.isEmpty() ? "-" : String.join("/", split);
    }
  }

  static final Relation A = new Relation("A", "TOKEN", List.of("a"));
  static final Relation AX = new Relation("AX", "PLUS", List.of("a", "x"));
  static final Relation AXP = new Relation("AXP", "TIMES", List.of("a", "x", "p"));
  static final Relation AXQ = new Relation("AXQ", "PLUS", List.of("a", "x", "q"));
  static final Relation AY = new Relation("AY", "TOKEN", List.of("a", "y"));
  static final Relation B = new Relation("B", "TOKEN", List.of("b"));
  static final Relation BZ = new Relation("BZ", "PLUS", List.of("b", "z"));
  static final Relation BZR = new Relation("BZR", "TIMES", List.of("b", "z", "r"));
  static final Relation U = new Relation("U", "TOKEN", List.of()); // no split: one level
  static final List<Relation> ALL = List.of(A, AX, AXP, AXQ, AY, B, BZ, BZR, U);
  // The large clusters: mostly a/x and a/x/p, so level-1 sets hold nodes of depth 2 and 3.
  static final List<Relation> A_FAMILY = List.of(A, AX, AX, AXP, AXP, AXQ, AY);
  static final List<Relation> B_FAMILY = List.of(B, BZ, BZ, BZR, BZR);

  /** Whether two split paths share their part at this level (their first level+1 names). */
  static boolean samePart(List<String> a, List<String> b, int level) {
    return a.subList(0, Math.min(a.size(), level + 1))
        .equals(b.subList(0, Math.min(b.size(), level + 1)));
  }

  // ---- A scenario: the graph and the flushes that deliver it ----------------------------------

  record Edge(int src, int dst) {}

  /** One flush: node records (indices) and edges, as sent (duplicates included). */
  record Flush(List<Integer> nodes, List<Edge> edges) {}

  static final class Scenario {
    final long theta;
    final String run;
    final List<Long> ids = new ArrayList<>();
    final List<Relation> relations = new ArrayList<>();
    final Map<Long, Integer> indexOf = new HashMap<>();
    final List<Flush> flushes = new ArrayList<>();

    Scenario(long seed) {
      Random r = new Random(mix(seed)); // java.util.Random's first draws of close seeds are close
      this.theta = 5 + r.nextInt(16);
      this.run = "run-" + seed;
      int flushCount = 12 + r.nextInt(5);
      List<List<Integer>> nodeAt = new ArrayList<>();
      List<List<Edge>> edgeAt = new ArrayList<>();
      for (int f = 0; f < flushCount; f++) {
        nodeAt.add(new ArrayList<>());
        edgeAt.add(new ArrayList<>());
      }

      // Two large clusters of the a-family (the same parts: joining them merges large level
      // sets), delivered in flushes 0-2, nodes and edges in any order (placeholders).
      int big = 35 + r.nextInt(20);
      List<Integer> clusterA = cluster(r, big, A_FAMILY, edgeAt, 0, 3, nodeAt);
      List<Integer> clusterB = cluster(r, big + r.nextInt(10), A_FAMILY, edgeAt, 0, 3, nodeAt);
      // Two medium b-family groups, each below theta at level 0, joined later: past theta.
      int medium = (int) theta / 2 + 1;
      List<Integer> mediumA = cluster(r, medium, B_FAMILY, edgeAt, 1, 5, nodeAt);
      List<Integer> mediumB = cluster(r, medium, B_FAMILY, edgeAt, 1, 5, nodeAt);

      // The rest: random relations, some never sent (dangling ends) or sent only at the end.
      int rest = 60 + r.nextInt(60);
      List<Integer> others = new ArrayList<>();
      for (int i = 0; i < rest; i++) {
        int n = newNode(r, ALL.get(r.nextInt(ALL.size())));
        others.add(n);
        double p = r.nextDouble();
        if (p < 0.04) {
          continue; // never sent: stays a placeholder if an edge names it
        }
        nodeAt.get(p < 0.10 ? flushCount - 1 : r.nextInt(flushCount)).add(n);
      }
      // Random edges among the rest only, so that the clusters stay apart until joined.
      int randomEdges = others.size() * 3 / 2 + r.nextInt(others.size() / 2 + 1);
      for (int e = 0; e < randomEdges; e++) {
        int a = others.get(r.nextInt(others.size()));
        double p = r.nextDouble();
        int b;
        if (p < 0.5) {
          b = pickFrom(r, others, x -> relations.get(x) == relations.get(a));
        } else if (p < 0.75) {
          b = pickFrom(r, others,
              x -> samePart(relations.get(x).split(), relations.get(a).split(), 0));
        } else {
          b = others.get(r.nextInt(others.size()));
        }
        if (a != b) {
          edgeAt.get(r.nextInt(flushCount)).add(oriented(a, b));
        }
      }

      // Joins: the large clusters through a few same-relation pairs (all levels merge), then
      // again later; the medium groups once; a large cluster and an a-node of the rest.
      int joinFlush = 4 + r.nextInt(flushCount - 6);
      for (int j = 0; j < 3; j++) {
        int a = clusterA.get(r.nextInt(clusterA.size()));
        int b = pickFrom(r, clusterB, x -> relations.get(x) == relations.get(a));
        edgeAt.get(j == 2 ? flushCount - 2 : joinFlush).add(oriented(a, b));
      }
      int ma = mediumA.get(r.nextInt(mediumA.size()));
      int mb = pickFrom(r, mediumB, x -> relations.get(x) == relations.get(ma));
      edgeAt.get(3 + r.nextInt(flushCount - 4)).add(oriented(ma, mb));
      int o = pickFrom(r, others, x -> samePart(relations.get(x).split(), List.of("a"), 0));
      edgeAt.get(3 + r.nextInt(flushCount - 3)).add(oriented(clusterB.get(0), o));

      // Re-sends (at-least-once): each flush repeats some records and edges sent before, and
      // some edges twice within the flush.
      List<Integer> sentNodes = new ArrayList<>();
      List<Edge> sentEdges = new ArrayList<>();
      for (int f = 0; f < flushCount; f++) {
        List<Integer> nodes = new ArrayList<>(nodeAt.get(f));
        List<Edge> edges = new ArrayList<>(edgeAt.get(f));
        if (f > 0) {
          for (int k = 0; k < sentNodes.size() / 10; k++) {
            nodes.add(sentNodes.get(r.nextInt(sentNodes.size())));
          }
          for (int k = 0; k < sentEdges.size() / 10; k++) {
            edges.add(sentEdges.get(r.nextInt(sentEdges.size())));
          }
        }
        for (int k = 0, n = edges.size(); k < n / 20; k++) {
          edges.add(edges.get(r.nextInt(n)));
        }
        Collections.shuffle(nodes, r);
        Collections.shuffle(edges, r);
        sentNodes.addAll(nodeAt.get(f));
        sentEdges.addAll(edgeAt.get(f));
        flushes.add(new Flush(nodes, edges));
      }
    }

    /** splitmix64's finalizer. */
    private static long mix(long z) {
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      return z ^ (z >>> 31);
    }

    private int newNode(Random r, Relation relation) {
      long id;
      do {
        // Mostly small ids (readable messages), some anywhere in 64 bits (negative included).
        id = r.nextInt(4) == 0 ? r.nextLong() : 1 + r.nextInt(1_000_000);
      } while (indexOf.containsKey(id));
      indexOf.put(id, ids.size());
      ids.add(id);
      relations.add(relation);
      return ids.size() - 1;
    }

    /**
     * A connected group of {@code size} nodes of these relations: a random tree preferring
     * edges within a part, nodes and edges spread over flushes [from, to).
     */
    private List<Integer> cluster(
        Random r, int size, List<Relation> family, List<List<Edge>> edgeAt, int from,
        int to, List<List<Integer>> nodeAt) {
      List<Integer> members = new ArrayList<>();
      for (int i = 0; i < size; i++) {
        int n = newNode(r, family.get(r.nextInt(family.size())));
        if (!members.isEmpty()) {
          int level = r.nextInt(3);
          int other =
              pickFrom(r, members, x -> samePart(relations.get(x).split(), relations.get(n).split(), level));
          edgeAt.get(from + r.nextInt(to - from)).add(oriented(other, n));
        }
        members.add(n);
        nodeAt.get(from + r.nextInt(to - from)).add(n);
      }
      // A few extra edges inside the cluster (not a tree any more).
      for (int k = 0; k < size / 4; k++) {
        int a = members.get(r.nextInt(size));
        int b = members.get(r.nextInt(size));
        if (a != b) {
          edgeAt.get(from + r.nextInt(to - from)).add(oriented(a, b));
        }
      }
      return members;
    }

    /** A random node of {@code from} satisfying the test if one of 20 tries does, else any. */
    private static int pickFrom(
        Random r, List<Integer> from, IntPredicate test) {
      for (int t = 0; t < 20; t++) {
        int x = from.get(r.nextInt(from.size()));
        if (test.test(x)) {
          return x;
        }
      }
      return from.get(r.nextInt(from.size()));
    }

    /** Lineage is acyclic: edges go from the lower index to the higher. */
    private static Edge oriented(int a, int b) {
      return new Edge(Math.min(a, b), Math.max(a, b));
    }

    String describe(long id) {
      Integer i = indexOf.get(id);
      return i == null
          ? "unknown id " + id
          : "node #" + i + " (id " + id + ", " + relations.get(i).name() + " "
              + relations.get(i).path() + ")";
    }

    /** The call's arguments for one flush: one node block per relation, two edge blocks. */
    List<Map<String, Object>> blocks(Flush flush) {
      Map<Relation, List<Long>> byRelation = new LinkedHashMap<>();
      for (int n : flush.nodes()) {
        byRelation.computeIfAbsent(relations.get(n), k -> new ArrayList<>()).add(ids.get(n));
      }
      List<Map<String, Object>> out = new ArrayList<>();
      byRelation.forEach(
          (rel, blockIds) -> {
            Map<String, Object> block = new HashMap<>();
            block.put("run", run);
            block.put("op", rel.op());
            block.put("ids", blockIds);
            block.put("label", rel.op().toLowerCase());
            block.put("labels", List.of());
            block.put("relation", rel.name());
            block.put("values", List.of());
            block.put("shared", false);
            block.put("split", rel.split());
            block.put("attribute_names", List.of());
            block.put("attribute_values", List.of());
            block.put("null_rows", List.of());
            out.add(block);
          });
      return out;
    }

    List<Map<String, Object>> edgeBlocks(Flush flush) {
      List<Map<String, Object>> out = new ArrayList<>();
      int half = flush.edges().size() / 2;
      for (List<Edge> part :
          List.of(flush.edges().subList(0, half), flush.edges().subList(half, flush.edges().size()))) {
        List<Long> src = new ArrayList<>();
        List<Long> dst = new ArrayList<>();
        for (Edge e : part) {
          src.add(ids.get(e.src()));
          dst.add(ids.get(e.dst()));
        }
        out.add(Map.of("run", run, "src", src, "dst", dst));
      }
      return out;
    }
  }

  // ---- The model: ids from scratch (tests/reference/sets.py, recompute) ------------------------

  /** A plain union-find over node ids, with sizes (the test's own, independent of the plugin's). */
  static final class Groups {
    private final Map<Long, Long> parent = new HashMap<>();

    void add(long x) {
      parent.putIfAbsent(x, x);
    }

    long find(long x) {
      long r = x;
      while (parent.get(r) != r) {
        r = parent.get(r);
      }
      return r;
    }

    void union(long a, long b) {
      long ra = find(a);
      long rb = find(b);
      if (ra != rb) {
        parent.put(ra, rb);
      }
    }

    /** Group label (its root) of every element. */
    Map<Long, Long> labels() {
      Map<Long, Long> out = new HashMap<>();
      for (long x : parent.keySet()) {
        out.put(x, find(x));
      }
      return out;
    }
  }

  /** The expected set of a node: the level that made it, and its level set's root there. */
  record SetLabel(int level, long root) {}

  static final class Model {
    final Scenario s;
    final Set<Long> known = new HashSet<>(); // nodes whose record arrived
    final Set<Long> stored = new TreeSet<>(); // known nodes and edge ends
    final Set<List<Long>> edges = new LinkedHashSet<>(); // (src id, dst id)

    // Derived by recompute():
    Map<Long, Long> component;
    Map<Long, Integer> componentSize;
    Map<Long, SetLabel> set; // known nodes only
    Map<SetLabel, Set<Long>> setMembers;
    Map<SetLabel, Long> levelSetSize;
    Set<List<SetLabel>> deps;

    Model(Scenario s) {
      this.s = s;
    }

    /** The component merges one flush must report: pre-flush components its edges join. */
    long mergesOf(Flush flush) {
      Groups g = new Groups();
      for (Edge e : flush.edges()) {
        long a = preComponent(s.ids.get(e.src()));
        long b = preComponent(s.ids.get(e.dst()));
        g.add(a);
        g.add(b);
        g.union(a, b);
      }
      Map<Long, Long> labels = g.labels();
      return labels.size() - new HashSet<>(labels.values()).size();
    }

    private long preComponent(long id) {
      // Before recompute() of this flush: the component label, or the node itself if new.
      return component != null && component.containsKey(id) ? component.get(id) : id;
    }

    void apply(Flush flush) {
      for (int n : flush.nodes()) {
        known.add(s.ids.get(n));
        stored.add(s.ids.get(n));
      }
      for (Edge e : flush.edges()) {
        long a = s.ids.get(e.src());
        long b = s.ids.get(e.dst());
        edges.add(List.of(a, b));
        stored.add(a);
        stored.add(b);
      }
      recompute();
    }

    Relation relation(long id) {
      return s.relations.get(s.indexOf.get(id));
    }

    private void recompute() {
      // Components: weakly connected over all edges, placeholders included.
      Groups comps = new Groups();
      stored.forEach(comps::add);
      for (List<Long> e : edges) {
        comps.union(e.get(0), e.get(1));
      }
      component = comps.labels();
      componentSize = new HashMap<>();
      component.values().forEach(c -> componentSize.merge(c, 1, Integer::sum));

      // Level-k sets: components of the known edges whose ends share their level-k part, for
      // the levels below the node's depth.
      List<Map<Long, Long>> levelOf = new ArrayList<>();
      levelSetSize = new HashMap<>();
      for (int k = 0; k < 3; k++) {
        Groups g = new Groups();
        for (long n : known) {
          if (k < relation(n).depth()) {
            g.add(n);
          }
        }
        for (List<Long> e : edges) {
          long a = e.get(0);
          long b = e.get(1);
          if (known.contains(a) && known.contains(b)
              && k < relation(a).depth() && k < relation(b).depth()
              && samePart(relation(a).split(), relation(b).split(), k)) {
            g.union(a, b);
          }
        }
        Map<Long, Long> labels = g.labels();
        levelOf.add(labels);
        for (long root : labels.values()) {
          levelSetSize.merge(new SetLabel(k, root), 1L, Long::sum);
        }
      }

      // A node's connected set: the first level whose set is below theta, else the deepest.
      set = new HashMap<>();
      setMembers = new HashMap<>();
      for (long n : known) {
        int depth = relation(n).depth();
        SetLabel chosen = null;
        for (int k = 0; k < depth && chosen == null; k++) {
          SetLabel l = new SetLabel(k, levelOf.get(k).get(n));
          if (levelSetSize.get(l) < s.theta || k == depth - 1) {
            chosen = l;
          }
        }
        set.put(n, chosen);
        setMembers.computeIfAbsent(chosen, x -> new TreeSet<>()).add(n);
      }

      // Set dependencies: every known edge whose ends lie in different sets.
      deps = new HashSet<>();
      for (List<Long> e : edges) {
        SetLabel a = set.get(e.get(0));
        SetLabel b = set.get(e.get(1));
        if (a != null && b != null && !a.equals(b)) {
          deps.add(List.of(a, b));
        }
      }
    }

    /** Whether the set has a record: its level set has more than one node. */
    boolean kept(SetLabel l) {
      return levelSetSize.get(l) > 1;
    }

    /** Stored as SET_DEP: the dependencies between two sets with records. */
    boolean stored(List<SetLabel> d) {
      return kept(d.get(0)) && kept(d.get(1));
    }
  }

  // ---- The test ---------------------------------------------------------------------------------

  private EmbeddedNeo4j neo4j;
  private Scenario scenario;
  private String where;

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1L, 2L, 3L, 17L, 42L, 20260611L})
  void idsAreExactAfterEveryFlush(long seed) throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    scenario = new Scenario(seed);
    Model model = new Model(scenario);
    for (int f = 0; f < scenario.flushes.size(); f++) {
      Flush flush = scenario.flushes.get(f);
      where =
          "seed " + seed + ", theta " + scenario.theta + ", flush " + f + " of "
              + scenario.flushes.size() + " (" + flush.nodes().size() + " records, "
              + flush.edges().size() + " edges)";
      long merges = model.mergesOf(flush);
      List<Map<String, Object>> rows =
          neo4j.write(scenario.blocks(flush), scenario.edgeBlocks(flush), scenario.theta);
      model.apply(flush);
      checkCallRows(rows, flush, merges);
      checkIds(model);
    }
  }

  /**
   * The same scenarios written as ingest writes them, ids left to the indexer: between flushes
   * the indexer runs a random number of times with a random bound (none, part of the queue, all
   * of it), so it indexes several writes at once, one write in several calls never, and writes
   * whose placeholders later writes fill while those wait. Whenever the queue is empty, every id
   * equals the from-scratch recomputation over all flushes so far.
   */
  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1L, 2L, 3L, 17L, 42L, 20260611L})
  void idsKeptBehindTheDataAreExactOnceIndexed(long seed) throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    scenario = new Scenario(seed);
    Model model = new Model(scenario);
    Random r = new Random(seed * 31 + 7);
    long totalMerges = 0;
    long expectedMerges = 0;
    for (int f = 0; f < scenario.flushes.size(); f++) {
      Flush flush = scenario.flushes.get(f);
      where = "deferred, seed " + seed + ", theta " + scenario.theta + ", flush " + f + " of "
          + scenario.flushes.size();
      expectedMerges += model.mergesOf(flush);
      List<Map<String, Object>> rows =
          neo4j.writeDeferred(scenario.blocks(flush), scenario.edgeBlocks(flush), scenario.theta);
      model.apply(flush);
      for (Map<String, Object> row : rows) {
        check(asLong(row.get("merges")) == 0, "a deferred write merged components: " + row);
      }
      int calls = r.nextInt(3);
      for (int c = 0; c < calls; c++) {
        totalMerges += asLong(neo4j.index(1 + r.nextInt(40)).get("merges"));
      }
      if (r.nextInt(3) == 0 || f == scenario.flushes.size() - 1) {
        totalMerges += drain();
        check(totalMerges == expectedMerges,
            "merges: expected " + expectedMerges + " in all, the indexer made " + totalMerges);
        checkIds(model);
      }
    }
  }

  /**
   * Both scenarios again with every per-call cache of the id code holding two entries
   * ({@link Memo}): a value dropped and read again is the same, so the ids are too.
   */
  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1L, 42L, 20260611L})
  void idsAreExactWithCachesThatForget(long seed) throws Exception {
    int cap = Memo.newCap;
    Memo.newCap = 2;
    try {
      idsAreExactAfterEveryFlush(seed);
      idsKeptBehindTheDataAreExactOnceIndexed(seed);
    } finally {
      Memo.newCap = cap;
    }
  }

  /** Indexes until no write is left; the components merged. */
  private long drain() {
    long merges = 0;
    for (int guard = 0; guard < 10_000; guard++) {
      Map<String, Object> row = neo4j.index(25);
      merges += asLong(row.get("merges"));
      if (asLong(row.get("remaining")) == 0) {
        check(query("MATCH (w:IdWork) RETURN count(w) AS n", Map.of()).get(0).get("n")
            .equals(0L), "id work left after the indexer said none remains");
        return merges;
      }
    }
    throw new AssertionError(where + ": the indexer never emptied its queue");
  }

  private void check(boolean ok, String what) {
    if (!ok) {
      fail(where + ": " + what);
    }
  }

  private void checkCallRows(List<Map<String, Object>> rows, Flush flush, long merges) {
    if (flush.nodes().isEmpty() && flush.edges().isEmpty()) {
      return;
    }
    check(rows.size() == 1, "one row for the one run expected, got " + rows);
    Map<String, Object> row = rows.get(0);
    check(List.of().equals(row.get("conflict_ids")),
        "re-sent records are equal, yet conflicts were reported: " + row);
    check(Long.valueOf(merges).equals(row.get("merges")),
        "merges: expected " + merges + " components merged away, got " + row.get("merges"));
  }

  private List<Map<String, Object>> query(String cypher, Map<String, Object> params) {
    try {
      return neo4j.query(cypher, params);
    } catch (RuntimeException e) {
      throw new AssertionError(where + ": query failed: " + cypher, e);
    }
  }

  private static long asLong(Object o) {
    return ((Number) o).longValue();
  }

  private void checkIds(Model m) {
    // Every stored node, its component; the known ones, their set.
    Map<Long, Long> component = new TreeMap<>();
    Map<Long, Long> set = new TreeMap<>();
    Set<Long> knownStored = new TreeSet<>();
    Map<Long, Long> births = new TreeMap<>();
    for (Map<String, Object> r :
        query(
            "MATCH (n:Node) RETURN n.id AS id, n.op IS NOT NULL AS known,"
                + " sparkprov.component(n) AS c, coalesce(n.component_id, n.id) AS birth,"
                + " sparkprov.componentRoot(coalesce(n.component_id, n.id)) AS birthRoot",
            Map.of())) {
      long id = asLong(r.get("id"));
      check(r.get("c") != null, scenario.describe(id) + ": sparkprov.component is null");
      component.put(id, asLong(r.get("c")));
      if ((Boolean) r.get("known")) {
        knownStored.add(id);
      }
      check(r.get("birth") != null, scenario.describe(id) + ": no component_id");
      births.put(id, asLong(r.get("birth")));
      check(asLong(r.get("birthRoot")) == asLong(r.get("c")),
          scenario.describe(id) + ": componentRoot(component_id " + r.get("birth") + ") = "
              + r.get("birthRoot") + " but sparkprov.component(n) = " + r.get("c"));
    }
    check(component.keySet().equals(m.stored),
        "stored nodes differ: missing " + minus(m.stored, component.keySet()) + ", unexpected "
            + minus(component.keySet(), m.stored));
    check(knownStored.equals(m.known),
        "nodes with op differ: missing " + minus(m.known, knownStored) + ", unexpected "
            + minus(knownStored, m.known));
    for (Map<String, Object> r :
        query("MATCH (n:Node) WHERE n.op IS NOT NULL RETURN n.id AS id, sparkprov.set(n) AS s",
            Map.of())) {
      check(r.get("s") != null,
          scenario.describe(asLong(r.get("id"))) + ": sparkprov.set is null");
      set.put(asLong(r.get("id")), asLong(r.get("s")));
    }

    Map<Long, Long> componentTo = samePartition("component", m.component, component);
    Map<SetLabel, Long> setTo = samePartition("connected set", m.set, set);
    checkComponentRecords(m, component, componentTo);
    checkSetRecords(m, component, setTo);
    checkMembers(m, component, births, setTo);
    checkDependencies(m, setTo);
  }

  /**
   * sparkprov.setDependencies of every current set, both ways: exactly the model's dependencies,
   * lone nodes' included (they have no SET_DEP: the procedure reads them from the edges).
   */
  private void checkDependencies(Model m, Map<SetLabel, Long> setTo) {
    Map<Long, Set<Long>> parents = new HashMap<>();
    Map<Long, Set<Long>> children = new HashMap<>();
    for (List<SetLabel> d : m.deps) {
      long a = setTo.get(d.get(0));
      long b = setTo.get(d.get(1));
      parents.computeIfAbsent(b, x -> new TreeSet<>()).add(a);
      children.computeIfAbsent(a, x -> new TreeSet<>()).add(b);
    }
    for (String direction : List.of("BACKWARD", "FORWARD")) {
      Map<Long, Set<Long>> expected = direction.equals("BACKWARD") ? parents : children;
      Map<Long, Set<Long>> got = new HashMap<>();
      for (Map<String, Object> r :
          query(
              "UNWIND $ids AS i CALL sparkprov.setDependencies(i, $d) YIELD set"
                  + " RETURN i AS id, collect(set) AS sets",
              Map.of("ids", new ArrayList<>(setTo.values()), "d", direction))) {
        Set<Long> sets = new TreeSet<>();
        for (Object o : (List<?>) r.get("sets")) {
          sets.add(asLong(o));
        }
        got.put(asLong(r.get("id")), sets);
      }
      for (long id : setTo.values()) {
        Set<Long> want = expected.getOrDefault(id, Set.of());
        Set<Long> have = got.getOrDefault(id, Set.of());
        check(want.equals(have),
            "CALL sparkprov.setDependencies(" + id + ", '" + direction + "'): missing "
                + minus(want, have) + ", unexpected " + minus(have, want));
      }
    }
  }

  /**
   * Whether the plugin's ids group the nodes as the model's labels do (up to renaming); the
   * model label to plugin id mapping. A failure names two nodes that are grouped wrongly.
   */
  private <L> Map<L, Long> samePartition(String what, Map<Long, L> expected, Map<Long, Long> actual) {
    Map<L, Long> forward = new HashMap<>();
    Map<L, Long> firstOf = new HashMap<>();
    Map<Long, L> backward = new HashMap<>();
    Map<Long, Long> firstWith = new HashMap<>();
    for (long n : new TreeSet<>(expected.keySet())) {
      L label = expected.get(n);
      Long id = actual.get(n);
      check(id != null, scenario.describe(n) + ": no " + what + " id");
      Long had = forward.putIfAbsent(label, id);
      if (had != null && !had.equals(id)) {
        long other = firstOf.get(label);
        check(false,
            "wrong " + what + "s: " + scenario.describe(n) + " and " + scenario.describe(other)
                + " should share a " + what + " (" + label + ", " + sizeOf(expected, label) + " nodes"
                + ") but have ids " + id + " and " + had);
      }
      firstOf.putIfAbsent(label, n);
      L was = backward.putIfAbsent(id, label);
      if (was != null && !was.equals(label)) {
        long other = firstWith.get(id);
        check(false,
            "wrong " + what + "s: " + scenario.describe(n) + " (expected " + label + ") and "
                + scenario.describe(other) + " (expected " + was + ") should be in different "
                + what + "s but both have id " + id);
      }
      firstWith.putIfAbsent(id, n);
    }
    return forward;
  }

  private static <L> long sizeOf(Map<Long, L> expected, L label) {
    return expected.values().stream().filter(label::equals).count();
  }

  private void checkComponentRecords(
      Model m, Map<Long, Long> component, Map<Long, Long> componentTo) {
    Map<Long, Map<String, Object>> records = new HashMap<>();
    for (Map<String, Object> r :
        query(
            "MATCH (c:Component) RETURN c.id AS id, c.size AS size, c.parent AS parent,"
                + " sparkprov.componentRoot(c.id) AS root",
            Map.of())) {
      records.put(asLong(r.get("id")), r);
    }
    Set<Long> current = new HashSet<>(component.values());
    for (Map.Entry<Long, Long> e : componentTo.entrySet()) {
      long root = e.getValue();
      int size = m.componentSize.get(e.getKey());
      Map<String, Object> rec = records.get(root);
      if (size > 1) {
        check(rec != null,
            "component " + root + " of " + size + " nodes (e.g. " + scenario.describe(e.getKey())
                + ") has no :Component record");
      }
      if (rec != null) {
        check(rec.get("parent") == null,
            "component " + root + " is current but its record has parent " + rec.get("parent"));
        long stored = rec.get("size") == null ? 1 : asLong(rec.get("size"));
        check(stored == size,
            ":Component {id: " + root + "}.size is " + rec.get("size") + ", the component has "
                + size + " nodes (e.g. " + scenario.describe(e.getKey()) + ")");
      }
    }
    for (Map<String, Object> rec : records.values()) {
      long id = asLong(rec.get("id"));
      long root = asLong(rec.get("root"));
      check(current.contains(root),
          ":Component " + id + " resolves to " + root + ", which is no node's component (stale)");
      if (rec.get("parent") != null) {
        check(rec.get("size") == null,
            ":Component " + id + " was merged (parent " + rec.get("parent") + ") but keeps size "
                + rec.get("size"));
        check(root != id, ":Component " + id + " has a parent but componentRoot is itself");
      } else {
        check(root == id, "root :Component " + id + " resolves to " + root);
      }
    }
  }

  private void checkSetRecords(
      Model m, Map<Long, Long> component, Map<SetLabel, Long> setTo) {
    Map<Long, SetLabel> fromId = new HashMap<>();
    setTo.forEach((label, id) -> fromId.put(id, label));
    Map<Long, Map<String, Object>> records = new HashMap<>();
    for (Map<String, Object> r :
        query(
            "MATCH (s:ConnectedSet) RETURN s.id AS id, s.level AS level, s.size AS size,"
                + " s.component_id AS c, sparkprov.componentRoot(s.component_id) AS root",
            Map.of())) {
      long id = asLong(r.get("id"));
      check(records.put(id, r) == null, "two :ConnectedSet records with id " + id);
    }
    for (Map<String, Object> rec : records.values()) {
      long id = asLong(rec.get("id"));
      SetLabel label = fromId.get(id);
      check(label != null,
          ":ConnectedSet " + id + " (level " + rec.get("level") + ", size " + rec.get("size")
              + ") is no known node's set (stale)");
      Set<Long> members = m.setMembers.get(label);
      long someone = members.iterator().next();
      String which = "set " + id + " of " + scenario.describe(someone) + " (expected level "
          + label.level() + ", " + members.size() + " members, its level set "
          + m.levelSetSize.get(label) + " nodes)";
      check(m.kept(label), which + ": a :ConnectedSet record, yet its level set is one node");
      check(rec.get("level") != null && asLong(rec.get("level")) == label.level(),
          which + ": record level is " + rec.get("level"));
      // size: the level set's size at the set's level, as the plugin and reindex.py store it
      // (IdView.SetOf.size). It is the member count unless the level set also holds deeper
      // nodes refined past theta (a split a beside a/x: the a-node's set is its level-0 set).
      check(rec.get("size") != null && asLong(rec.get("size")) == m.levelSetSize.get(label),
          which + ": record size is " + rec.get("size"));
      check(rec.get("root") != null && asLong(rec.get("root")) == component.get(someone),
          which + ": record component_id " + rec.get("c") + " resolves to " + rec.get("root")
              + ", not its members' component");
    }
    for (Map.Entry<SetLabel, Set<Long>> e : m.setMembers.entrySet()) {
      if (m.kept(e.getKey())) {
        long id = setTo.get(e.getKey());
        check(records.containsKey(id),
            "set " + id + " of " + scenario.describe(e.getValue().iterator().next()) + " ("
                + e.getValue().size() + " members) has no :ConnectedSet record");
      }
    }

    // SET_DEP: exactly the model's dependencies between two sets with records, once each.
    List<Map<String, Object>> rels =
        query("MATCH (a)-[:SET_DEP]->(b) RETURN a.id AS a, b.id AS b,"
            + " a:ConnectedSet AND b:ConnectedSet AS sets", Map.of());
    Set<List<SetLabel>> got = new HashSet<>();
    for (Map<String, Object> r : rels) {
      check((Boolean) r.get("sets"), "a SET_DEP not between two :ConnectedSet: " + r);
      SetLabel a = fromId.get(asLong(r.get("a")));
      SetLabel b = fromId.get(asLong(r.get("b")));
      check(a != null && b != null, "SET_DEP " + r.get("a") + " -> " + r.get("b")
          + " joins a set that is no known node's set (stale)");
      check(got.add(List.of(a, b)), "SET_DEP " + r.get("a") + " -> " + r.get("b") + " twice");
      check(m.deps.contains(List.of(a, b)) && m.stored(List.of(a, b)),
          "SET_DEP " + r.get("a") + " -> " + r.get("b") + " (sets of "
              + scenario.describe(m.setMembers.get(a).iterator().next()) + " and "
              + scenario.describe(m.setMembers.get(b).iterator().next())
              + ") but no known edge goes from the one to the other, or one is a lone node");
    }
    for (List<SetLabel> d : m.deps) {
      if (m.stored(d) && !got.contains(d)) {
        List<Long> edge = someEdge(m, d);
        check(false,
            "missing SET_DEP " + setTo.get(d.get(0)) + " -> " + setTo.get(d.get(1)) + ": edge "
                + scenario.describe(edge.get(0)) + " -> " + scenario.describe(edge.get(1))
                + " crosses sets (levels " + d.get(0).level() + ", " + d.get(1).level() + ")");
      }
    }
  }

  private static List<Long> someEdge(Model m, List<SetLabel> d) {
    for (List<Long> e : m.edges) {
      if (d.get(0).equals(m.set.get(e.get(0))) && d.get(1).equals(m.set.get(e.get(1)))) {
        return e;
      }
    }
    throw new IllegalStateException("no edge for " + d);
  }

  private void checkMembers(
      Model m, Map<Long, Long> component, Map<Long, Long> births, Map<SetLabel, Long> setTo) {
    // componentNodes of every current component and of every birth id (resolved first).
    Set<Long> asked = new TreeSet<>(component.values());
    asked.addAll(births.values());
    Map<Long, Set<Long>> got = members("sparkprov.componentNodes", asked);
    Map<Long, Set<Long>> byComponent = new HashMap<>();
    component.forEach((n, c) -> byComponent.computeIfAbsent(c, x -> new TreeSet<>()).add(n));
    Map<Long, Long> rootOf = new HashMap<>();
    component.values().forEach(c -> rootOf.put(c, c));
    births.forEach((n, b) -> rootOf.put(b, component.get(n))); // checked: componentRoot(b)
    for (long id : asked) {
      long root = rootOf.get(id);
      Set<Long> expected = byComponent.get(root);
      Set<Long> actual = got.getOrDefault(id, Set.of());
      check(actual.equals(expected),
          "CALL sparkprov.componentNodes(" + id + ") (component " + root + ", " + expected.size()
              + " nodes): missing " + describeAll(minus(expected, actual)) + ", unexpected "
              + describeAll(minus(actual, expected)));
    }
    // setNodes of every current set, records or not.
    Map<Long, Set<Long>> gotSets = members("sparkprov.setNodes", new TreeSet<>(setTo.values()));
    for (Map.Entry<SetLabel, Long> e : setTo.entrySet()) {
      Set<Long> expected = m.setMembers.get(e.getKey());
      Set<Long> actual = gotSets.getOrDefault(e.getValue(), Set.of());
      check(actual.equals(expected),
          "CALL sparkprov.setNodes(" + e.getValue() + ") (level " + e.getKey().level() + ", "
              + expected.size() + " members): missing " + describeAll(minus(expected, actual))
              + ", unexpected " + describeAll(minus(actual, expected)));
    }
  }

  private Map<Long, Set<Long>> members(String procedure, Set<Long> ids) {
    Map<Long, Set<Long>> out = new HashMap<>();
    for (Map<String, Object> r :
        query(
            "UNWIND $ids AS i CALL " + procedure + "(i) YIELD node"
                + " RETURN i AS id, collect(node.id) AS members",
            Map.of("ids", new ArrayList<>(ids)))) {
      Set<Long> ms = new TreeSet<>();
      List<?> list = (List<?>) r.get("members");
      for (Object o : list) {
        ms.add(asLong(o));
      }
      check(ms.size() == list.size(),
          "CALL " + procedure + "(" + r.get("id") + ") yields a node twice: " + list);
      out.put(asLong(r.get("id")), ms);
    }
    return out;
  }

  private String describeAll(Set<Long> ids) {
    List<String> out = new ArrayList<>();
    for (long id : ids) {
      if (out.size() == 5) {
        out.add("... (" + ids.size() + " in all)");
        break;
      }
      out.add(scenario.describe(id));
    }
    return out.toString();
  }

  private static Set<Long> minus(Set<Long> a, Set<Long> b) {
    Set<Long> out = new TreeSet<>(a);
    out.removeAll(b);
    return out;
  }
}
