package io.sparkprov.plugin.write;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.neo4j.graphdb.Transaction;

/**
 * The {@code :Run} counters a write adds to ({@code stored_nodes}, {@code stored_edges}), kept as
 * ingest_service/store.py's {@code _RUN_COUNTS} keeps them for a write in the caller's
 * transaction: a run not seen before gets its {@code :Run} with zero counts first.
 */
final class RunCounts {
  private static final String ADD =
      """
      UNWIND $rows AS r
      MERGE (run:Run {run_id: r.run})
        ON CREATE SET run.stored_nodes = 0, run.stored_edges = 0, run.complete = false,
                      run.created_unix_ms = timestamp()
      SET run.stored_nodes = run.stored_nodes + r.nodes,
          run.stored_edges = run.stored_edges + r.edges
      """;

  private RunCounts() {}

  /** Adds the rows' counts to their runs, in run order (as every writer takes the runs' locks). */
  static void add(Transaction tx, List<Ingest.Written> rows) {
    List<Map<String, Object>> params = new ArrayList<>();
    rows.stream()
        .filter(w -> w.nodes > 0 || w.edges > 0)
        .sorted(Comparator.comparing(w -> w.run))
        .forEach(w -> params.add(Map.of("run", w.run, "nodes", w.nodes, "edges", w.edges)));
    if (!params.isEmpty()) {
      tx.execute(ADD, Map.of("rows", params)).close();
    }
  }
}
