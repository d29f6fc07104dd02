package io.sparkprov.plugin.write;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Transaction;
import org.neo4j.logging.Log;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;
import org.neo4j.procedure.TerminationGuard;

/**
 * {@code CALL sparkprov.write(blocks, edges, theta, members)}: one flush of the ingest service,
 * written inside the caller's transaction with the core API instead of row-by-row Cypher.
 *
 * <p>Nodes are upserted by id (a node first seen as an edge end is a placeholder without
 * {@code op} until its own record arrives), edges are created once, and the ids of
 * ../shared/MODEL.md section 5 are kept exact: the component id (union by size over
 * {@code :Component} sizes), the per-level set ids {@code s0..s2} (union by size over
 * {@code :LevelSet} sizes, among edges whose known ends share their split at that level), the
 * connected set {@code set_id} (the first level whose set is below theta: CSProv's Algorithm 3,
 * independent of arrival order) and the set dependencies {@code (:ConnectedSet)-[:SET_DEP]->}.
 * Python's {@code recompute} (tests/reference/sets.py) is the from-scratch definition they must
 * equal. Yields one row per run: the (logical) nodes and edges this call created, the component
 * merges, and the nodes of its blocks that conflict with a stored version (same id, other content).
 *
 * <p>{@code blocks}, {@code edges} and {@code members} follow the contract {@link NodeBlock} /
 * {@link EdgeBlock} / {@link MemberBlock} (Python: {@code sparkprov.blocks}); a malformed one fails
 * the call with a message naming the block and the field. {@code members} is optional (default
 * empty, so three-argument calls keep working): each member is one DERIVES edge carrying its
 * aggregated values, counted in the row as the logical TENSOR and VALUE nodes and the edges it
 * stands for.
 *
 * <p>With {@code defer_ids} the ids are left to {@code sparkprov.index} (the ids package's {@code
 * Indexing}), which ingest's indexer calls.
 *
 * <p>With {@code tx_records} above 0 the call is cut into {@link Slice}s of that many records,
 * each written and committed in a transaction of its own (not the caller's), which also adds the
 * nodes and edges it created to its runs' {@code :Run} counts ({@link RunCounts}): what is
 * committed is counted, so a call that fails after some slices and is sent again counts each
 * record once. The caller then must not add the returned counts again.
 */
public final class Ingest {
  @Context public Transaction tx;
  @Context public Log log;
  @Context public GraphDatabaseService db;
  @Context public TerminationGuard guard;

  /**
   * One output row. {@code conflict_blocks}/{@code conflict_ids} pair up: node {@code
   * conflict_ids[k]} of block {@code conflict_blocks[k]} (its position in {@code blocks}) was
   * already stored with another op, label, relation or run; the stored version is kept.
   */
  public static final class Written {
    public String run;
    public long nodes;
    public long edges;
    public long merges;
    public List<Long> conflict_blocks;
    public List<Long> conflict_ids;

    /** This row and a later one of the same run, as one. */
    Written plus(Written later) {
      List<Long> blocks = new ArrayList<>(conflict_blocks);
      blocks.addAll(later.conflict_blocks);
      List<Long> ids = new ArrayList<>(conflict_ids);
      ids.addAll(later.conflict_ids);
      return new Written(
          run, nodes + later.nodes, edges + later.edges, merges + later.merges, blocks, ids);
    }

    public Written(
        String run,
        long nodes,
        long edges,
        long merges,
        List<Long> conflictBlocks,
        List<Long> conflictIds) {
      this.run = run;
      this.nodes = nodes;
      this.edges = edges;
      this.merges = merges;
      this.conflict_blocks = conflictBlocks;
      this.conflict_ids = conflictIds;
    }
  }

  @Procedure(name = "sparkprov.write", mode = Mode.WRITE)
  @Description(
      "Upsert one flush of lineage node blocks, edge blocks and member blocks; keep component and"
          + " set ids, or with defer_ids leave them to sparkprov.index; with tx_records > 0, in"
          + " transactions of that many records, each adding its counts to its runs")
  public Stream<Written> write(
      @Name("blocks") List<Map<String, Object>> blocks,
      @Name("edges") List<Map<String, Object>> edgeBlocks,
      @Name("theta") long theta,
      @Name(value = "members", defaultValue = "[]") List<Map<String, Object>> memberBlocks,
      @Name(value = "defer_ids", defaultValue = "false") boolean deferIds,
      @Name(value = "tx_records", defaultValue = "0") long txRecords) {
    List<NodeBlock> nodes = NodeBlock.parseAll(blocks);
    List<EdgeBlock> edges = EdgeBlock.parseAll(edgeBlocks);
    List<MemberBlock> members = MemberBlock.parseAll(memberBlocks);
    FlushWriter.Call call = new FlushWriter.Call();
    if (txRecords <= 0) {
      return new FlushWriter(tx, log, call)
          .write(Slice.whole(nodes, members, edges), theta, deferIds)
          .stream();
    }
    int size = (int) Math.min(txRecords, Integer.MAX_VALUE);
    Map<String, Written> total = new LinkedHashMap<>();
    for (Slice slice : Slice.cut(nodes, members, edges, size)) {
      guard.check(); // the caller's transaction ended (a timeout, a shutdown): no more slices
      try (Transaction inner = db.beginTx()) {
        List<Written> rows = new FlushWriter(inner, log, call).write(slice, theta, deferIds);
        RunCounts.add(inner, rows);
        inner.commit();
        rows.forEach(row -> total.merge(row.run, row, Written::plus));
      }
    }
    return total.values().stream();
  }
}
