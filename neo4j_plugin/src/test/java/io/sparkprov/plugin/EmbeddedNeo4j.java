package io.sparkprov.plugin;

import io.sparkprov.plugin.ids.Ids;
import io.sparkprov.plugin.ids.Indexing;
import io.sparkprov.plugin.query.Deletions;
import io.sparkprov.plugin.query.Subgraphs;
import io.sparkprov.plugin.query.Traces;
import io.sparkprov.plugin.write.Ingest;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.kernel.api.procedure.GlobalProcedures;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * An in-process Neo4j (the same 5.26 as the stack) in a temporary folder, with the plugin's
 * procedures and functions registered and the schema ingest creates (sparkprov/schema.cypher, run
 * as ingest_service/store.py runs it), so the procedures' seeks run on the same constraints and
 * indexes as in production. One instance serves every test class of the run ({@link #shared}):
 * starting Neo4j is most of the suite's time.
 */
public final class EmbeddedNeo4j implements AutoCloseable {
  private static EmbeddedNeo4j shared;

  /** The run's instance, emptied; shut down when the test JVM exits. */
  public static synchronized EmbeddedNeo4j shared() throws Exception {
    if (shared == null) {
      Path home = Files.createTempDirectory("sparkprov-procedure-test");
      shared = new EmbeddedNeo4j(home);
      Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "neo4j-test-shutdown"));
    }
    shared.clear();
    return shared;
  }

  /** The schema file ingest runs (a test resource: the pom adds ../sparkprov/schema.cypher). */
  private static final String SCHEMA = "/schema.cypher";

  private static final String WRITE =
      "CALL sparkprov.write($blocks, $edges, $theta)"
          + " YIELD run, nodes, edges, merges, conflict_blocks, conflict_ids"
          + " RETURN run, nodes, edges, merges, conflict_blocks, conflict_ids";

  private static final String WRITE_MEMBERS =
      "CALL sparkprov.write($blocks, $edges, $theta, $members)"
          + " YIELD run, nodes, edges, merges, conflict_blocks, conflict_ids"
          + " RETURN run, nodes, edges, merges, conflict_blocks, conflict_ids";

  private final DatabaseManagementService dbms;
  public final GraphDatabaseService db;

  EmbeddedNeo4j(Path home) throws Exception {
    dbms =
        new DatabaseManagementServiceBuilder(home)
            .setConfig(GraphDatabaseSettings.pagecache_memory, 32L * 1024 * 1024)
            .build();
    db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
    GlobalProcedures procedures =
        ((GraphDatabaseAPI) db).getDependencyResolver().resolveDependency(GlobalProcedures.class);
    procedures.registerProcedure(Ingest.class);
    procedures.registerProcedure(Indexing.class);
    procedures.registerProcedure(Ids.class);
    procedures.registerProcedure(Traces.class);
    procedures.registerProcedure(Deletions.class);
    procedures.registerProcedure(Subgraphs.class);
    procedures.registerFunction(Ids.class);
    for (String statement : schema()) {
      db.executeTransactionally(statement);
    }
    db.executeTransactionally("CALL db.awaitIndexes(60)");
  }

  /** One call in its own transaction, as one flush of ingest; its rows. */
  public List<Map<String, Object>> write(List<?> blocks, List<?> edges, long theta) {
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
  public List<Map<String, Object>> write(
      List<?> blocks, List<?> edges, long theta, List<?> members) {
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
  public List<Map<String, Object>> writeDeferred(List<?> blocks, List<?> edges, long theta) {
    return query(
        "CALL sparkprov.write($blocks, $edges, $theta, [], true)"
            + " YIELD run, nodes, edges, merges, conflict_blocks, conflict_ids"
            + " RETURN run, nodes, edges, merges, conflict_blocks, conflict_ids",
        Map.of("blocks", blocks, "edges", edges, "theta", theta));
  }

  /** One call of the indexer, in its own transaction: its row. */
  public Map<String, Object> index(long maxEdges) {
    return index(maxEdges, 0);
  }

  /** As {@link #index(long)}, yielding to writes of the last {@code quietMillis}. */
  public Map<String, Object> index(long maxEdges, long quietMillis) {
    return query(
            "CALL sparkprov.index($max, $quiet) YIELD items, edges, merges, remaining,"
                + " indexed_runs RETURN items, edges, merges, remaining, indexed_runs",
            Map.of("max", maxEdges, "quiet", quietMillis))
        .get(0);
  }

  /** The rows of a read query. */
  public List<Map<String, Object>> query(String cypher, Map<String, Object> params) {
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
  public Object one(String cypher, Map<String, Object> params) {
    List<Map<String, Object>> rows = query(cypher, params);
    if (rows.size() != 1 || rows.get(0).size() != 1) {
      throw new AssertionError("expected one value from " + cypher + ", got " + rows);
    }
    return rows.get(0).values().iterator().next();
  }

  public void clear() {
    db.executeTransactionally("MATCH (n) DETACH DELETE n");
  }

  /**
   * Each stored node's component and connected set, as the partitions of node ids they make (the
   * ids themselves depend on the order of writes): what two ways of keeping ids must agree on.
   * Every node must have both.
   */
  public Map<String, Set<Set<Object>>> idPartitions() {
    Map<String, Set<Set<Object>>> out = new HashMap<>();
    for (String f : List.of("component", "set")) {
      Map<Object, Set<Object>> groups = new HashMap<>();
      for (Map<String, Object> row :
          query("MATCH (n:Node) RETURN n.id AS id, sparkprov." + f + "(n) AS c", Map.of())) {
        if (row.get("c") == null) {
          throw new AssertionError("no " + f + " id for node " + row.get("id"));
        }
        groups.computeIfAbsent(row.get("c"), c -> new TreeSet<>()).add(row.get("id"));
      }
      out.put(f, Set.copyOf(groups.values()));
    }
    return out;
  }

  /**
   * The statements of the schema file, read as sparkprov/schema.py reads them: lines starting
   * with {@code //} are comments, statements end with {@code ;}.
   */
  static List<String> schema() throws IOException {
    String text;
    try (InputStream in = EmbeddedNeo4j.class.getResourceAsStream(SCHEMA)) {
      if (in == null) {
        throw new IOException(SCHEMA + " is not on the test classpath (the pom's testResources)");
      }
      text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    String kept =
        text.lines()
            .filter(line -> !line.strip().startsWith("//"))
            .collect(Collectors.joining("\n"));
    List<String> out = new ArrayList<>();
    for (String statement : kept.split(";")) {
      if (!statement.isBlank()) {
        out.add(statement.strip());
      }
    }
    return out;
  }

  @Override
  public void close() {
    dbms.shutdown();
  }
}
