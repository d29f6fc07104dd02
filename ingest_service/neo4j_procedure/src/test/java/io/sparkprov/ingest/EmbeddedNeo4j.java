package io.sparkprov.ingest;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.kernel.api.procedure.GlobalProcedures;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * An in-process Neo4j (the same 5.26 as the stack) in a temporary folder, with {@code
 * sparkprov.write} registered and the schema ingest creates (ingest_service/store.py, _SCHEMA), so
 * the procedure's seeks run on the same constraints and indexes as in production. One instance
 * serves every test class of the run ({@link #shared}): starting Neo4j is most of the suite's time.
 */
final class EmbeddedNeo4j implements AutoCloseable {
  private static EmbeddedNeo4j shared;

  /** The run's instance, emptied; shut down when the test JVM exits. */
  static synchronized EmbeddedNeo4j shared() throws Exception {
    if (shared == null) {
      Path home = Files.createTempDirectory("sparkprov-procedure-test");
      shared = new EmbeddedNeo4j(home);
      Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "neo4j-test-shutdown"));
    }
    shared.clear();
    return shared;
  }

  private static final List<String> SCHEMA =
      List.of(
          "CREATE CONSTRAINT sp_node_id IF NOT EXISTS FOR (n:Node) REQUIRE n.id IS UNIQUE",
          "CREATE CONSTRAINT sp_component_id IF NOT EXISTS FOR (c:Component) REQUIRE c.id IS UNIQUE",
          "CREATE CONSTRAINT sp_level_set_key IF NOT EXISTS FOR (s:LevelSet) REQUIRE s.key IS UNIQUE",
          "CREATE CONSTRAINT sp_set_id IF NOT EXISTS FOR (s:ConnectedSet) REQUIRE s.id IS UNIQUE",
          "CREATE INDEX sp_set_component IF NOT EXISTS FOR (s:ConnectedSet) ON (s.component_id)",
          "CREATE INDEX sp_node_pending IF NOT EXISTS FOR (n:Node) ON (n.pending_run)",
          "CREATE CONSTRAINT sp_member_key IF NOT EXISTS FOR (k:MemberKey) REQUIRE k.key IS UNIQUE");

  private static final String WRITE =
      "CALL sparkprov.write($blocks, $edges, $theta)"
          + " YIELD run, nodes, edges, merges, conflict_blocks, conflict_ids"
          + " RETURN run, nodes, edges, merges, conflict_blocks, conflict_ids";

  private static final String WRITE_MEMBERS =
      "CALL sparkprov.write($blocks, $edges, $theta, $members)"
          + " YIELD run, nodes, edges, merges, conflict_blocks, conflict_ids"
          + " RETURN run, nodes, edges, merges, conflict_blocks, conflict_ids";

  private final DatabaseManagementService dbms;
  final GraphDatabaseService db;

  EmbeddedNeo4j(Path home) throws Exception {
    dbms =
        new DatabaseManagementServiceBuilder(home)
            .setConfig(GraphDatabaseSettings.pagecache_memory, 32L * 1024 * 1024)
            .build();
    db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
    GlobalProcedures procedures =
        ((GraphDatabaseAPI) db).getDependencyResolver().resolveDependency(GlobalProcedures.class);
    procedures.registerProcedure(Ingest.class);
    procedures.registerProcedure(Ids.class);
    procedures.registerProcedure(Traces.class);
    procedures.registerProcedure(Deletions.class);
    procedures.registerProcedure(Subgraphs.class);
    procedures.registerFunction(Ids.class);
    for (String statement : SCHEMA) {
      db.executeTransactionally(statement);
    }
    db.executeTransactionally("CALL db.awaitIndexes(60)");
  }

  /** One call in its own transaction, as one flush of ingest; its rows. */
  List<Map<String, Object>> write(List<?> blocks, List<?> edges, long theta) {
    return db.executeTransactionally(
        WRITE,
        Map.of("blocks", blocks, "edges", edges, "theta", theta),
        result -> {
          List<Map<String, Object>> rows = new ArrayList<>();
          result.forEachRemaining(rows::add);
          return rows;
        });
  }

  /** One call with member blocks too (the four-argument form). */
  List<Map<String, Object>> write(List<?> blocks, List<?> edges, long theta, List<?> members) {
    return db.executeTransactionally(
        WRITE_MEMBERS,
        Map.of("blocks", blocks, "edges", edges, "theta", theta, "members", members),
        result -> {
          List<Map<String, Object>> rows = new ArrayList<>();
          result.forEachRemaining(rows::add);
          return rows;
        });
  }

  /** One call that leaves its ids to the indexer (ingest's flush: defer_ids). */
  List<Map<String, Object>> writeDeferred(List<?> blocks, List<?> edges, long theta) {
    return query(
        "CALL sparkprov.write($blocks, $edges, $theta, [], true)"
            + " YIELD run, nodes, edges, merges, conflict_blocks, conflict_ids"
            + " RETURN run, nodes, edges, merges, conflict_blocks, conflict_ids",
        Map.of("blocks", blocks, "edges", edges, "theta", theta));
  }

  /** One call of the indexer, in its own transaction: its row. */
  Map<String, Object> index(long maxEdges) {
    return index(maxEdges, 0);
  }

  /** As {@link #index(long)}, yielding to writes of the last {@code quietMillis}. */
  Map<String, Object> index(long maxEdges, long quietMillis) {
    return query(
            "CALL sparkprov.index($max, $quiet) YIELD items, edges, merges, remaining,"
                + " indexed_runs RETURN items, edges, merges, remaining, indexed_runs",
            Map.of("max", maxEdges, "quiet", quietMillis))
        .get(0);
  }

  /** The rows of a read query. */
  List<Map<String, Object>> query(String cypher, Map<String, Object> params) {
    return db.executeTransactionally(
        cypher,
        params,
        result -> {
          List<Map<String, Object>> rows = new ArrayList<>();
          result.forEachRemaining(rows::add);
          return rows;
        });
  }

  /** The single value of a query that returns one row with one column. */
  Object one(String cypher, Map<String, Object> params) {
    List<Map<String, Object>> rows = query(cypher, params);
    if (rows.size() != 1 || rows.get(0).size() != 1) {
      throw new AssertionError("expected one value from " + cypher + ", got " + rows);
    }
    return rows.get(0).values().iterator().next();
  }

  void clear() {
    db.executeTransactionally("MATCH (n) DETACH DELETE n");
  }

  @Override
  public void close() {
    dbms.shutdown();
  }
}
