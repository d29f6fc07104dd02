package io.sparkprov.plugin.write;

import static io.sparkprov.plugin.graph.Nodes.connected;
import static io.sparkprov.plugin.graph.Nodes.known;
import static io.sparkprov.plugin.graph.Schema.AGGREGATES;
import static io.sparkprov.plugin.graph.Schema.DERIVES;
import static io.sparkprov.plugin.graph.Schema.KEY;
import static io.sparkprov.plugin.graph.Schema.MEMBER_KEY;
import static io.sparkprov.plugin.graph.Schema.MEMBER_KEY_PROPERTY;
import static io.sparkprov.plugin.graph.Schema.MEMBER_NULLS;
import static io.sparkprov.plugin.graph.Schema.MEMBER_VALUES;
import static io.sparkprov.plugin.graph.Schema.NODE;
import static io.sparkprov.plugin.graph.Schema.PAIR;
import static io.sparkprov.plugin.graph.Schema.PARTNER;
import static io.sparkprov.plugin.graph.Schema.PARTNER_PROPERTY;
import static io.sparkprov.plugin.graph.Schema.TIMES;
import static io.sparkprov.plugin.graph.Schema.PENDING;

import io.sparkprov.plugin.graph.Edge;
import io.sparkprov.plugin.ids.IdMaintenance;
import io.sparkprov.plugin.ids.IdWork;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.Transaction;
import org.neo4j.logging.Log;

/**
 * The work of one {@code sparkprov.write} call (see {@link Ingest}): upsert the blocks' nodes,
 * edges and member edges, then keep the component and set ids exact by reference ({@link
 * IdMaintenance}).
 */
final class FlushWriter {
  private static final long SLOW_MS = 2000;

  /** The phases of one call, timed and logged when a call is slow. */
  private enum Phase {
    UPSERT,
    COMPONENTS
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

  /**
   * What the slices of one call (each a transaction, {@link Slice}) share: the ids whose node
   * the call created (as a placeholder or to fill it at once) and the edges it wrote. Once a
   * slice commits, its nodes are other writers' too: only a node created in the same
   * transaction ({@link #createdHere}) proves an edge at it new.
   */
  static final class Call {
    final Set<Long> created = new HashSet<>();
    final Set<Edge> edges = new HashSet<>();
    // The PARTNER relationships it wrote (folded members' right parents to their groups), and
    // the members it folded (TIMES id -> group).
    final Set<Edge> partners = new HashSet<>();
    final Set<Edge> folded = new HashSet<>();
    // TIMES nodes stored by a node block after their row was folded (another job of the run
    // aggregated the join): the node and the edges into it were counted with the fold.
    final Set<Long> countedFolded = new HashSet<>();
  }

  private final Map<Long, Node> cache = new HashMap<>();
  // Ids looked up and not stored (probe), unless this writer made them since (then in cache).
  private final Set<Long> absent = new HashSet<>();
  // Ids whose node this transaction created: no other writer sees them before it commits.
  private final Set<Long> createdHere = new HashSet<>();
  private final Call call;
  // Per run: the nodes of its blocks that conflict with their stored version.
  private final Map<String, List<Conflict>> conflicts = new HashMap<>();

  /** A writer of one slice of {@code call}, in {@code tx}. */
  FlushWriter(Transaction tx, Log log, Call call) {
    this.tx = tx;
    this.log = log;
    this.call = call;
  }

  /**
   * The upsert, then the ids: kept in this transaction, or with {@code deferIds} left to the
   * indexer ({@code sparkprov.index}): the call records what it created and filled ({@link
   * IdWork}) and returns no merges.
   */
  List<Ingest.Written> write(Slice slice, long theta, boolean deferIds) {
    long started = System.nanoTime();
    if (deferIds) {
      IdWork.enter(tx); // shared with other writers, exclusive of the indexer
    }
    Map<String, RunCounts> perRun = new LinkedHashMap<>();
    Set<Long> fresh = new HashSet<>();
    lockInIdOrder(slice.blocks(), slice.edges(), slice.members());
    for (int b = 0; b < slice.blocks().size(); b++) {
      writeBlock(slice.positions().get(b), slice.blocks().get(b), perRun, fresh);
    }
    Created created = writeEdges(slice.members(), slice.edges(), perRun, fresh);
    Set<Edge> edges = created.edges();
    registerMemberKeys(slice.members());
    lap(Phase.UPSERT, started);
    long merges = 0;
    if (deferIds) {
      List<Long> filled = filled(fresh);
      IdWork.record(
          tx, edges, created.relationships(), filled, internalIds(filled), perRun.keySet(), theta);
    } else {
      merges = maintainIds(edges, fresh, theta);
    }
    logIfSlow(started, fresh.size(), edges.size());
    return results(perRun, merges);
  }

  /**
   * Finds (or creates) every node the call touches in ascending id order before writing any:
   * a lookup takes the unique index's entry lock of the id, so writers in parallel take those
   * locks in one order and never wait for each other in a cycle (a deadlock, which Neo4j would
   * end by failing one of them).
   */
  private void lockInIdOrder(
      List<NodeBlock> blocks, List<EdgeBlock> edgeBlocks, List<MemberBlock> memberBlocks) {
    // id -> whether a missing node is created (else only looked up: a folded TIMES id).
    TreeMap<Long, Boolean> ids = new TreeMap<>();
    for (NodeBlock block : blocks) {
      for (long id : block.ids()) {
        ids.put(id, true);
      }
    }
    for (EdgeBlock block : edgeBlocks) {
      for (int i = 0; i < block.size(); i++) {
        ids.put(block.src()[i], true);
        ids.put(block.dst()[i], true);
      }
    }
    for (MemberBlock block : memberBlocks) {
      for (int k = 0; k < block.size(); k++) {
        // A folded member's TIMES node is not stored (unless it must be: writeUnfolded), but
        // whether another job stored it is asked (writeFolded counts its row once).
        ids.put(block.folded() ? block.lefts()[k] : block.members()[k], true);
        ids.put(block.groups()[k], true);
        if (block.folded()) {
          ids.put(block.partners()[k], true);
          ids.putIfAbsent(block.members()[k], false);
        }
      }
    }
    for (Map.Entry<Long, Boolean> id : ids.entrySet()) {
      if (id.getValue()) {
        node(id.getKey());
      } else {
        probe(id.getKey());
      }
    }
    lockShared(blocks, edgeBlocks, memberBlocks);
  }

  /**
   * Write-locks, in ascending id order, what another writer may write at once, before it is
   * read. The source of every edge that may have been stored by another writer (neither end
   * created in this transaction): two writers of the same edge then look one after the other,
   * the second after the first committed, and never both create it. A folded member's left
   * parent (unless new here): the folds of one joined row into any group are then counted one
   * after another. A placeholder a block fills (made by an earlier edge, committed): two
   * writers of its block then fill it one after the other, and only the first counts it.
   */
  private void lockShared(
      List<NodeBlock> blocks, List<EdgeBlock> edgeBlocks, List<MemberBlock> memberBlocks) {
    TreeSet<Long> locks = new TreeSet<>();
    for (NodeBlock block : blocks) {
      for (long id : block.ids()) {
        if (!createdHere.contains(id) && !cache.get(id).hasProperty("op")) {
          locks.add(id);
        }
      }
    }
    for (EdgeBlock block : edgeBlocks) {
      for (int i = 0; i < block.size(); i++) {
        addIfShared(locks, block.src()[i], block.dst()[i]);
      }
    }
    for (MemberBlock block : memberBlocks) {
      for (int k = 0; k < block.size(); k++) {
        long group = block.groups()[k];
        if (!block.folded()) {
          addIfShared(locks, block.members()[k], group);
          continue;
        }
        long times = block.members()[k];
        if (!createdHere.contains(block.lefts()[k])) {
          locks.add(block.lefts()[k]); // its folds (storedFold) and member edge (storedEdge)
        }
        addIfShared(locks, block.partners()[k], group);
        addIfShared(locks, block.partners()[k], times);
        if (stored(times) != null) {
          addIfShared(locks, times, group); // stored unfolded (writeUnfolded)
        }
      }
    }
    for (long id : locks) {
      tx.acquireWriteLock(cache.get(id));
    }
  }

  /** Adds {@code src} when an edge {@code src -> dst} may be stored by another writer. */
  private void addIfShared(Set<Long> sources, long src, long dst) {
    if (mayBeStored(src, dst)) {
      sources.add(src);
    }
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
          "sparkprov.write took %d ms: %d fresh nodes, %d edges; ms: upsert %d, ids %d",
          totalMs, freshNodes, edges, ms(Phase.UPSERT), ms(Phase.COMPONENTS));
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
        } else {
          addMissingAttributes(n, block, i);
        }
        continue;
      }
      fresh.add(id);
      fill(n, block, i, label, splitPath);
      if (foldable(block) && folded(id)) {
        call.countedFolded.add(id); // counted with its fold, as the edges into it
      } else if (!block.shared()) {
        counts.nodes++;
      }
    }
  }

  /**
   * A node stored before, sent again with attributes it lacks, gets them; those it has keep
   * their stored values. Two actions of a run may keep different columns of the same source
   * row (the values policy "read": the columns each query reads), so a source row keeps the
   * union of what its run read; an at-least-once duplicate adds nothing.
   */
  private static void addMissingAttributes(Node n, NodeBlock block, int i) {
    for (int a = 0; a < block.attributeNames().size(); a++) {
      String key = "a_" + block.attributeNames().get(a);
      if (!block.isNull(a, i) && !n.hasProperty(key)) {
        n.setProperty(key, block.attributeValues().get(a).get(i));
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
    if (!call.created.contains(block.ids()[i])) {
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
    // Born alone at each level its split path has: a birth id that is the node's own is not
    // written (Forest.birth reads a missing one as the node's id), only a merge writes one.
    for (int a = 0; a < block.attributeNames().size(); a++) {
      if (!block.isNull(a, i)) {
        n.setProperty("a_" + block.attributeNames().get(a), block.attributeValues().get(a).get(i));
      }
    }
  }

  /**
   * Creates each edge once (per call and in the store), member edges first (a pair sent both
   * ways in one call keeps the member's values); returns the edges this call created (an edge
   * sent again changes no id). Member edges join ids as any other edge.
   */
  private Created writeEdges(
      List<MemberBlock> memberBlocks, List<EdgeBlock> blocks, Map<String, RunCounts> perRun,
      Set<Long> fresh) {
    Set<Edge> edges = call.edges;
    Created created = new Created(new LinkedHashSet<>(), new ArrayList<>());
    for (MemberBlock block : memberBlocks) {
      if (block.folded()) {
        writeFolded(block, created, perRun, fresh);
      } else {
        writeMembers(block, edges, created, perRun);
      }
    }
    for (EdgeBlock block : blocks) {
      RunCounts counts = perRun.computeIfAbsent(block.run(), r -> new RunCounts());
      for (int i = 0; i < block.size(); i++) {
        Edge e = new Edge(block.src()[i], block.dst()[i]);
        if (edges.add(e)) {
          Relationship r = createEdge(e, block.run());
          if (r != null) {
            if (!call.countedFolded.contains(e.dst())) {
              counts.edges++;
            }
            created.add(e, r);
          }
        }
      }
    }
    return created;
  }

  /** The edges a call created and their relationships' internal ids, in one order. */
  private record Created(Set<Edge> edges, List<Long> ids) {
    void add(Edge e, Relationship r) {
      edges.add(e);
      ids.add(r.getId());
    }

    long[] relationships() {
      return ids.stream().mapToLong(Long::longValue).toArray();
    }
  }

  /** The edge, created with its ends (placeholders where missing); null if stored before. */
  private Relationship createEdge(Edge e, String run) {
    return createEdge(e, run, DERIVES);
  }

  /** A relationship of {@code type}, created with its ends; null if stored before. */
  private Relationship createEdge(Edge e, String run, RelationshipType type) {
    Node a = endOfEdge(e.src(), run);
    Node b = endOfEdge(e.dst(), run);
    // An end this transaction created has no stored edge (and `edges` dedupes the call's own),
    // so only an edge between two nodes others see needs the look (under lockShared's lock).
    if (mayBeStored(e) && connected(a, b, type)) {
      return null;
    }
    return a.createRelationshipTo(b, type);
  }

  /**
   * Creates the member edges of one block that are not stored yet, each counted as the logical
   * nodes and edges it stands for: per value, a TENSOR and a VALUE node and the edges member to
   * TENSOR, VALUE to TENSOR and TENSOR to AGGREGATE; plus the edge member to group itself.
   */
  private void writeMembers(
      MemberBlock block, Set<Edge> edges, Created created, Map<String, RunCounts> perRun) {
    RunCounts counts = perRun.computeIfAbsent(block.run(), r -> new RunCounts());
    for (int k = 0; k < block.size(); k++) {
      Edge e = new Edge(block.members()[k], block.groups()[k]);
      if (!edges.add(e)) {
        continue;
      }
      Relationship r = createEdge(e, block.run());
      if (r != null) {
        setMemberProperties(r, block, k);
        long present = block.present(k);
        counts.nodes += 2 * present;
        counts.edges += 1 + 3 * present;
        created.add(e, r);
      }
    }
  }

  /**
   * Writes the members of a block whose members are a join's rows (docs/graph-schema.md, "A
   * join's rows folded into their member edges"): each as one member edge from its left parent
   * that carries its TIMES id and its right parent, and its right parent's {@code PARTNER}
   * relationship to the group; counted as the TIMES node, its edges and the member it stands for,
   * the TIMES node and its edges only where the store has neither (a join's row stored once,
   * whatever the jobs that send it). A member already stored (its TIMES id
   * on a member edge into its group) is skipped. A row that is a member of several groups (two
   * aggregations over one join) has a folded member edge into each. Where the left parent
   * already has an edge into the group, the member is stored unfolded ({@link #writeUnfolded}).
   */
  private void writeFolded(
      MemberBlock block, Created created, Map<String, RunCounts> perRun, Set<Long> fresh) {
    RunCounts counts = perRun.computeIfAbsent(block.run(), r -> new RunCounts());
    for (int k = 0; k < block.size(); k++) {
      long times = block.members()[k];
      if (!call.folded.add(new Edge(times, block.groups()[k]))) {
        continue;
      }
      Fold fold = storedFold(times, block.groups()[k]);
      if (fold == Fold.HERE) {
        continue;
      }
      // The row's TIMES node and edges are counted once (the capture agent counts them once,
      // under the join's key: Emission.joinNodeCount): not if folded into another group or
      // stored as a node (by the join's capture point in another job, or unfolded).
      boolean counted = fold == Fold.ELSEWHERE || storedNode(times);
      long left = block.lefts()[k];
      long right = block.partners()[k];
      Edge member = new Edge(left, block.groups()[k]);
      if (call.edges.contains(member) || storedEdge(member)) {
        writeUnfolded(block, k, created, counts, fresh, counted);
        continue;
      }
      call.edges.add(member);
      Relationship r = endOfEdge(left, block.run())
          .createRelationshipTo(endOfEdge(block.groups()[k], block.run()), DERIVES);
      setMemberProperties(r, block, k);
      r.setProperty(TIMES, times);
      r.setProperty(PARTNER_PROPERTY, right);
      created.add(member, r);
      if (right != left) {
        partner(new Edge(right, block.groups()[k]), block.run(), created);
      }
      countFolded(counts, block, k, counted);
    }
  }

  /** Where a joined row is stored folded: nowhere, into other groups only, into this one. */
  private enum Fold { NONE, ELSEWHERE, HERE }

  /** Where member edges carrying this TIMES id are stored ({@link Fold}). */
  private Fold storedFold(long times, long group) {
    Fold fold = Fold.NONE;
    try (var rels = tx.findRelationships(DERIVES, TIMES, times)) {
      while (rels.hasNext()) {
        if (((Number) rels.next().getEndNode().getProperty("id")).longValue() == group) {
          return Fold.HERE;
        }
        fold = Fold.ELSEWHERE;
      }
    }
    return fold;
  }

  /** Whether a member edge carrying this TIMES id is stored (the row folded, into any group). */
  private boolean folded(long times) {
    try (var rels = tx.findRelationships(DERIVES, TIMES, times)) {
      return rels.hasNext();
    }
  }

  /** Whether a node with this id is stored with its content (not a placeholder). */
  private boolean storedNode(long id) {
    Node n = stored(id);
    return n != null && n.hasProperty("op");
  }

  /** Whether a node block's rows may also be folded ones: TIMES rows with nothing the pairs do
   * not say (no relation, no values; capture_agent.frame.materialize_with_origin). */
  private static boolean foldable(NodeBlock block) {
    return "TIMES".equals(block.op())
        && (block.relation() == null || block.relation().isEmpty())
        && block.attributeNames().isEmpty();
  }

  /** Whether a DERIVES edge between two stored nodes exists (none if an end is new here). */
  private boolean storedEdge(Edge e) {
    if (!mayBeStored(e)) {
      return false;
    }
    Node a = stored(e.src());
    Node b = stored(e.dst());
    return a != null && b != null && connected(a, b, DERIVES);
  }

  /** Whether another writer may have stored this edge: neither end is new in this transaction. */
  private boolean mayBeStored(Edge e) {
    return mayBeStored(e.src(), e.dst());
  }

  private boolean mayBeStored(long src, long dst) {
    return !createdHere.contains(src) && !createdHere.contains(dst);
  }

  /** The right parent's PARTNER relationship to the group, once per pair of nodes. */
  private void partner(Edge e, String run, Created created) {
    if (!call.partners.add(e)) {
      return;
    }
    Relationship r = createEdge(e, run, PARTNER);
    if (r != null) {
      created.add(e, r);
    }
  }

  /**
   * A folded block's member {@code k} stored as its join's capture point and a member tap store
   * it: its TIMES node (the block's split path), the edges from its left and right parents and
   * its member edge; counted once, when its member edge is created.
   */
  private void writeUnfolded(
      MemberBlock block, int k, Created created, RunCounts counts, Set<Long> fresh,
      boolean counted) {
    long times = block.members()[k];
    Node t = node(times);
    if (!t.hasProperty("op")) {
      if (!call.created.contains(times)) {
        t.removeProperty(PENDING);
        fresh.add(times);
      }
      t.setProperty("run_id", block.run());
      t.setProperty("op", "TIMES");
      t.setProperty("label", "·");
      t.setProperty("split", block.split().toArray(new String[0]));
    }
    long left = block.lefts()[k];
    long right = block.partners()[k];
    List<Edge> parents = left == right
        ? List.of(new Edge(left, times))
        : List.of(new Edge(left, times), new Edge(right, times));
    for (Edge e : parents) {
      if (call.edges.add(e)) {
        Relationship r = createEdge(e, block.run());
        if (r != null) {
          created.add(e, r);
        }
      }
    }
    Edge member = new Edge(times, block.groups()[k]);
    if (!call.edges.add(member)) {
      return;
    }
    Relationship r = createEdge(member, block.run());
    if (r != null) {
      setMemberProperties(r, block, k);
      created.add(member, r);
      countFolded(counts, block, k, counted);
    }
  }

  /**
   * A folded member's logical records: its member edge and values, and its TIMES node and the
   * edges from its parents unless the row was {@code counted} before ({@link #writeFolded}).
   */
  private static void countFolded(RunCounts counts, MemberBlock block, int k, boolean counted) {
    long present = block.present(k);
    boolean self = block.lefts()[k] == block.partners()[k];
    counts.nodes += 2 * present + (counted ? 0 : 1);
    counts.edges += 1 + 3 * present + (counted ? 0 : self ? 1 : 2);
  }

  private static void setMemberProperties(Relationship r, MemberBlock block, int k) {
    r.setProperty(MEMBER_KEY_PROPERTY, block.groupKey());
    r.setProperty(MEMBER_VALUES, block.valuesOf(k));
    long[] nulls = block.nullColumnsOf(k);
    if (nulls.length > 0) {
      r.setProperty(MEMBER_NULLS, nulls);
    }
    r.setProperty(PAIR, block.pairs()[k]);
  }

  /**
   * Makes sure each group key of the call has its {@code :MemberKey} with the largest number of
   * aggregated columns any block of the key had, so that the query service can list the keys
   * (and columns) it derives TENSOR and VALUE nodes for. Keys name a capture point within its
   * run ("group#3"), so runs share them with different numbers of columns: keeping the first
   * run's number would hide the derived nodes of the later runs' extra columns.
   */
  private void registerMemberKeys(List<MemberBlock> blocks) {
    Map<String, Integer> columns = new HashMap<>();
    for (MemberBlock block : blocks) {
      columns.merge(block.groupKey(), block.aggregates(), Math::max);
    }
    for (Map.Entry<String, Integer> entry : columns.entrySet()) {
      Node key = tx.findNode(MEMBER_KEY, KEY, entry.getKey());
      if (key == null) {
        key = tx.createNode(MEMBER_KEY);
        key.setProperty(KEY, entry.getKey());
        key.setProperty(AGGREGATES, (long) entry.getValue());
      } else if (((Number) key.getProperty(AGGREGATES, 0L)).intValue() < entry.getValue()) {
        key.setProperty(AGGREGATES, (long) entry.getValue());
      }
    }
  }

  /**
   * An edge's end: a placeholder this call created (no block of the call filled it; blocks are
   * written first) is marked pending for the run of the first edge that met it.
   */
  private Node endOfEdge(long id, String run) {
    Node n = node(id);
    if (call.created.contains(id) && !known(n) && !n.hasProperty(PENDING)) {
      n.setProperty(PENDING, run);
    }
    return n;
  }

  /** The stored node with this id, or null (never creates one; an id probed absent and not
   * made since is not looked up again). */
  private Node stored(long id) {
    Node n = cache.get(id);
    return n != null || absent.contains(id) ? n : tx.findNode(NODE, "id", id);
  }

  /** Looks up a node that is not created if missing (in id order: {@link #lockInIdOrder}). */
  private void probe(long id) {
    if (!cache.containsKey(id)) {
      Node n = tx.findNode(NODE, "id", id);
      if (n != null) {
        cache.put(id, n);
      } else {
        absent.add(id);
      }
    }
  }

  /** The node with this id, created as a placeholder (its own component and sets) if missing. */
  private Node node(long id) {
    Node n = cache.get(id);
    if (n == null) {
      n = tx.findNode(NODE, "id", id);
      if (n == null) {
        call.created.add(id);
        createdHere.add(id);
        n = tx.createNode(NODE);
        n.setProperty("id", id); // born alone: its component id is its own (Forest.birth)
      }
      cache.put(id, n);
    }
    return n;
  }

  // ---- Ids ----------------------------------------------------------------------------------

  /** Keeps every id exact after the upsert; returns the number of components merged away. */
  private long maintainIds(Set<Edge> edges, Set<Long> fresh, long theta) {
    long t = System.nanoTime();
    long merges = IdMaintenance.keep(tx, this::stored, theta, edges, filled(fresh));
    lap(Phase.COMPONENTS, t);
    return merges;
  }

  /** The internal ids of these stored nodes. */
  private long[] internalIds(List<Long> ids) {
    return ids.stream().mapToLong(id -> stored(id).getId()).toArray();
  }

  /** The placeholders this call filled: fresh nodes it did not create (an earlier call did). */
  private List<Long> filled(Set<Long> fresh) {
    List<Long> out = new ArrayList<>();
    for (long id : fresh) {
      if (!call.created.contains(id)) {
        out.add(id);
      }
    }
    return out;
  }
}
