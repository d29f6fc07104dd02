import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.ResourceIterator;
import org.neo4j.graphdb.Transaction;
import org.neo4j.io.ByteUnit;

/**
 * The bare engine's time to write the very records a run stored: the lineage records
 * ({@code :Node} nodes, {@code DERIVES} relationships and the {@code PARTNER} relationships of
 * join rows folded into member edges, with every property they hold) of a
 * stopped store are written again, with the core API, into an empty embedded database that has
 * the real store's schema (sparkprov/schema.cypher), in transactions of {@code BATCH} records:
 * first the nodes, then the relationships, each relationship finding its ends by the unique
 * {@code id} index as any writer must. Reading the source is not timed; only the target's
 * transactions are. No placeholder, no id work, no check for an edge sent twice: the least any
 * writer of these records does, so the ratio to it is an upper bound of ingest's overhead.
 *
 * <p>Run by {@code bench/time_to_queryable.py} as {@code java -cp <neo4j jars>
 * bench/java/StoreReplay.java SOURCE_HOME TARGET_HOME CONF SCHEMA BATCH}; prints one JSON line.
 */
public final class StoreReplay {
  private static final Label NODE = Label.label("Node");
  private static final RelationshipType DERIVES = RelationshipType.withName("DERIVES");
  private static final RelationshipType PARTNER = RelationshipType.withName("PARTNER");

  record Copied(Map<String, Object> props) {}

  record Edge(long src, long dst, RelationshipType type, Map<String, Object> props) {}

  public static void main(String[] args) throws IOException {
    Path conf = Path.of(args[2]);
    int batch = Integer.parseInt(args[4]);
    DatabaseManagementService source =
        new DatabaseManagementServiceBuilder(Path.of(args[0]))
            .loadPropertiesFromFile(conf)
            .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.gibiBytes(1))
            .build();
    DatabaseManagementService target =
        new DatabaseManagementServiceBuilder(Path.of(args[1])).loadPropertiesFromFile(conf).build();
    try {
      GraphDatabaseService from = source.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
      GraphDatabaseService to = target.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
      for (String statement : statements(Path.of(args[3]))) {
        to.executeTransactionally(statement);
      }
      try (Transaction tx = to.beginTx()) {
        tx.schema().awaitIndexesOnline(10, TimeUnit.MINUTES);
      }
      System.out.println(copy(from, to, batch));
    } finally {
      target.shutdown();
      source.shutdown();
    }
    System.exit(0); // a connector the configuration turns on would keep the JVM alive
  }

  /** The schema file's statements, comments left out (each ends with a semicolon). */
  private static List<String> statements(Path schema) throws IOException {
    StringBuilder text = new StringBuilder();
    for (String line : Files.readAllLines(schema)) {
      if (!line.strip().startsWith("//")) {
        text.append(line).append('\n');
      }
    }
    List<String> out = new ArrayList<>();
    for (String statement : text.toString().split(";")) {
      if (!statement.isBlank()) {
        out.add(statement.strip());
      }
    }
    return out;
  }

  private static String copy(GraphDatabaseService from, GraphDatabaseService to, int batch) {
    double nodeSeconds = 0;
    double edgeSeconds = 0;
    long nodes = 0;
    long edges = 0;
    int transactions = 0;
    try (Transaction read = from.beginTx()) {
      List<Copied> pending = new ArrayList<>(batch);
      try (ResourceIterator<Node> all = read.findNodes(NODE)) {
        while (all.hasNext()) {
          pending.add(new Copied(all.next().getAllProperties()));
          if (pending.size() == batch) {
            nodeSeconds += writeNodes(to, pending);
            nodes += pending.size();
            transactions++;
            pending.clear();
          }
        }
      }
      if (!pending.isEmpty()) {
        nodeSeconds += writeNodes(to, pending);
        nodes += pending.size();
        transactions++;
      }
      List<Edge> rels = new ArrayList<>(batch);
      for (Relationship r : read.getAllRelationships()) {
        if (!r.isType(DERIVES) && !r.isType(PARTNER)) {
          continue;
        }
        long src = ((Number) r.getStartNode().getProperty("id")).longValue();
        long dst = ((Number) r.getEndNode().getProperty("id")).longValue();
        rels.add(new Edge(src, dst, r.getType(), r.getAllProperties()));
        if (rels.size() == batch) {
          edgeSeconds += writeEdges(to, rels);
          edges += rels.size();
          transactions++;
          rels.clear();
        }
      }
      if (!rels.isEmpty()) {
        edgeSeconds += writeEdges(to, rels);
        edges += rels.size();
        transactions++;
      }
    }
    return String.format(
        "{\"write_s\": %.3f, \"node_write_s\": %.3f, \"edge_write_s\": %.3f, \"nodes\": %d,"
            + " \"relationships\": %d, \"transactions\": %d}",
        nodeSeconds + edgeSeconds, nodeSeconds, edgeSeconds, nodes, edges, transactions);
  }

  private static double writeNodes(GraphDatabaseService to, List<Copied> nodes) {
    long t0 = System.nanoTime();
    try (Transaction tx = to.beginTx()) {
      for (Copied c : nodes) {
        Node n = tx.createNode(NODE);
        c.props().forEach(n::setProperty);
      }
      tx.commit();
    }
    return (System.nanoTime() - t0) / 1e9;
  }

  private static double writeEdges(GraphDatabaseService to, List<Edge> edges) {
    long t0 = System.nanoTime();
    try (Transaction tx = to.beginTx()) {
      for (Edge e : edges) {
        Node src = tx.findNode(NODE, "id", e.src());
        Node dst = tx.findNode(NODE, "id", e.dst());
        Relationship r = src.createRelationshipTo(dst, e.type());
        e.props().forEach(r::setProperty);
      }
      tx.commit();
    }
    return (System.nanoTime() - t0) / 1e9;
  }
}
