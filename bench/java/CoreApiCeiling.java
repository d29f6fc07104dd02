import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.Transaction;

/**
 * The engine's own ceiling for storing lineage here: an embedded Neo4j (no Bolt, no Cypher, no
 * id maintenance) creating the pipeline-shaped graph of bench/neo4j_ceiling.py with the core API,
 * one transaction per {@code batch} records, the unique id constraint kept. An upper bound for
 * any writer inside the server, our procedure included.
 *
 * <p>Run by {@code python -m bench.neo4j_ceiling} (variant {@code core-api}) as {@code java -cp
 * <neo4j jars> bench/java/CoreApiCeiling.java HOME ROWS DIM BATCH CONF}; prints one JSON line.
 */
public final class CoreApiCeiling {
  private static final Label NODE = Label.label("Node");
  private static final RelationshipType DERIVES = RelationshipType.withName("DERIVES");
  private static final int GROUPS = 37;

  private final GraphDatabaseService db;
  private final int batch;
  private Transaction tx;
  private int inTx;
  private long records;
  private final Map<Long, Node> fresh = new HashMap<>(); // this transaction's nodes

  private CoreApiCeiling(GraphDatabaseService db, int batch) {
    this.db = db;
    this.batch = batch;
  }

  public static void main(String[] args) {
    Path home = Path.of(args[0]);
    int rows = Integer.parseInt(args[1]);
    int dim = Integer.parseInt(args[2]);
    int batch = Integer.parseInt(args[3]);
    DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(home);
    if (args.length > 4) {
      builder.loadPropertiesFromFile(Path.of(args[4]));
    }
    DatabaseManagementService dbms = builder.build();
    try {
      GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
      try (Transaction tx = db.beginTx()) {
        tx.schema().constraintFor(NODE).assertPropertyIsUnique("id").withName("sp_node_id").create();
        tx.commit();
      }
      try (Transaction tx = db.beginTx()) {
        tx.schema().awaitIndexesOnline(5, TimeUnit.MINUTES);
      }
      CoreApiCeiling writer = new CoreApiCeiling(db, batch);
      long t0 = System.nanoTime();
      writer.pipeline(rows, dim);
      double seconds = (System.nanoTime() - t0) / 1e9;
      System.out.printf(
          "{\"records\": %d, \"write_s\": %.3f, \"records_per_s\": %.1f}%n",
          writer.records, seconds, writer.records / seconds);
    } finally {
      dbms.shutdown();
    }
  }

  private void pipeline(int rows, int dim) {
    SplittableRandom rng = new SplittableRandom(7);
    long[] customers = new long[dim];
    for (int i = 0; i < dim; i++) {
      customers[i] = rng.nextLong();
      node(customers[i], "TOKEN", "Customers", "Customers");
    }
    long[] groups = new long[GROUPS];
    for (int g = 0; g < GROUPS; g++) {
      groups[g] = rng.nextLong();
    }
    for (int i = 0; i < rows; i++) {
      long order = rng.nextLong();
      node(order, "TOKEN", "Orders", "Orders");
      if (rng.nextDouble() >= 0.8) {
        continue;
      }
      long joined = rng.nextLong();
      node(joined, "TIMES", "·", "");
      edge(order, joined);
      edge(customers[rng.nextInt(dim)], joined);
      edge(joined, groups[rng.nextInt(GROUPS)]);
    }
    for (long g : groups) {
      node(g, "DELTA", "δ", ""); // arrived as a placeholder already: filled, not created
    }
    commit();
  }

  private void node(long id, String op, String label, String relation) {
    Node n = find(id);
    if (n == null) {
      n = tx().createNode(NODE);
      n.setProperty("id", id);
      fresh.put(id, n);
      records++;
    }
    n.setProperty("run_id", "ceiling");
    n.setProperty("op", op);
    n.setProperty("label", label);
    if (!relation.isEmpty()) {
      n.setProperty("relation", relation);
    }
    count();
  }

  private void edge(long src, long dst) {
    Node a = endOf(src);
    Node b = endOf(dst);
    a.createRelationshipTo(b, DERIVES);
    records++;
    count();
  }

  private Node endOf(long id) {
    Node n = find(id);
    if (n == null) { // a placeholder, as ingest makes for an end not seen yet
      n = tx().createNode(NODE);
      n.setProperty("id", id);
      fresh.put(id, n);
      records++;
    }
    return n;
  }

  private Node find(long id) {
    Node n = fresh.get(id);
    return n != null ? n : tx().findNode(NODE, "id", id);
  }

  private Transaction tx() {
    if (tx == null) {
      tx = db.beginTx();
    }
    return tx;
  }

  private void count() {
    if (++inTx >= batch) {
      commit();
    }
  }

  private void commit() {
    if (tx != null) {
      tx.commit();
      tx.close();
      tx = null;
    }
    inTx = 0;
    fresh.clear();
  }
}
