package io.sparkprov.plugin.ids;

import java.util.List;
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
 * {@code CALL sparkprov.index(max_edges, quiet_ms)}: the ids behind the data ({@link IdIndexer}),
 * kept for the writes that left them ({@code sparkprov.write} with {@code defer_ids}). Ingest's
 * indexer (ingest_service/indexer.py) calls it in a loop.
 */
public final class Indexing {
  @Context public Transaction tx;
  @Context public GraphDatabaseService db;
  @Context public TerminationGuard guard;
  @Context public Log log;

  /** A call slower than this is logged with what it read and wrote. */
  static final long SLOW_MS = 5000;

  /** One row of {@code sparkprov.index}: see {@link IdIndexer.Result}. */
  public static final class Indexed {
    public long items;
    public long edges;
    public long merges;
    public long remaining;
    public List<String> indexed_runs;

    Indexed(IdIndexer.Result r) {
      this.items = r.items();
      this.edges = r.edges();
      this.merges = r.merges();
      this.remaining = r.remaining();
      this.indexed_runs = r.indexed();
    }
  }

  @Procedure(name = "sparkprov.index", mode = Mode.WRITE)
  @Description(
      "Keep the component and set ids of deferred writes, oldest first, about max_edges edges"
          + " per call (none while a write recorded work within quiet_ms); yields what was"
          + " indexed and how many writes remain")
  public Stream<Indexed> index(
      @Name(value = "max_edges", defaultValue = "50000") long maxEdges,
      @Name(value = "quiet_ms", defaultValue = "0") long quietMillis) {
    long started = System.nanoTime();
    IdIndexer.Result r = IdIndexer.index(tx, Backlog.of(db), maxEdges, quietMillis, guard::check);
    long ms = (System.nanoTime() - started) / 1_000_000;
    if (ms >= SLOW_MS || log.isDebugEnabled()) {
      IdMaintenance.Applied w = r.work();
      log.info(
          "sparkprov.index took %d ms: %d writes, %d edges; %d sets refined, %d nodes re-read"
              + " with %d relationships, %d set dependencies, %d writes left",
          ms, r.items(), r.edges(), w.refined(), w.reread(), w.incident(), w.deps(),
          r.remaining());
    }
    return Stream.of(new Indexed(r));
  }
}
