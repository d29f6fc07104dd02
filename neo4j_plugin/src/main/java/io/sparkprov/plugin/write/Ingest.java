package io.sparkprov.plugin.write;

import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.neo4j.graphdb.Transaction;
import org.neo4j.logging.Log;
import org.neo4j.procedure.Context;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Name;
import org.neo4j.procedure.Procedure;

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
 */
public final class Ingest {
  @Context public Transaction tx;
  @Context public Log log;

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
          + " set ids, or with defer_ids leave them to sparkprov.index")
  public Stream<Written> write(
      @Name("blocks") List<Map<String, Object>> blocks,
      @Name("edges") List<Map<String, Object>> edgeBlocks,
      @Name("theta") long theta,
      @Name(value = "members", defaultValue = "[]") List<Map<String, Object>> memberBlocks,
      @Name(value = "defer_ids", defaultValue = "false") boolean deferIds) {
    return new FlushWriter(tx, log)
        .write(
            NodeBlock.parseAll(blocks),
            EdgeBlock.parseAll(edgeBlocks),
            MemberBlock.parseAll(memberBlocks),
            theta,
            deferIds);
  }
}
