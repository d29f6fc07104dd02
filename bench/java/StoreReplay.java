import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
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
 * <p>With {@code WARM} over 0, the JVM is warmed first as a server that served a run before: up
 * to {@code WARM} of the records (the first half nodes, then relationships between them) are
 * written, untimed, into a scratch database at {@code WARM_HOME} that is then dropped.
 *
 * <p>Run by {@code bench/time_to_queryable.py} as {@code java -cp <neo4j jars>
 * bench/java/StoreReplay.java SOURCE_HOME TARGET_HOME CONF SCHEMA BATCH [WARM WARM_HOME]};
 * prints one JSON line.
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
    long warm = args.length > 5 ? Long.parseLong(args[5]) : 0;
    DatabaseManagementService source =
        new DatabaseManagementServiceBuilder(Path.of(args[0]))
            .loadPropertiesFromFile(conf)
            .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.gibiBytes(1))
            .build();
    try {
      GraphDatabaseService from = source.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
      if (warm > 0) {
        Path scratch = Path.of(args[6]);
        replay(from, scratch, conf, Path.of(args[3]), batch, warm / 2);
        deleteTree(scratch);
      }
      System.out.println(replay(from, Path.of(args[1]), conf, Path.of(args[3]), batch, -1));
    } finally {
      source.shutdown();
    }
    System.exit(0); // a connector the configuration turns on would keep the JVM alive
  }

  /** Copies into a new database at {@code home}: all records, or {@code limit} of each kind. */
  private static String replay(
      GraphDatabaseService from, Path home, Path conf, Path schema, int batch, long limit)
      throws IOException {
    DatabaseManagementService target =
        new DatabaseManagementServiceBuilder(home).loadPropertiesFromFile(conf).build();
    try {
      GraphDatabaseService to = target.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
      for (String statement : statements(schema)) {
        to.executeTransactionally(statement);
      }
      try (Transaction tx = to.beginTx()) {
        tx.schema().awaitIndexesOnline(10, TimeUnit.MINUTES);
      }
      return copy(from, to, batch, limit);
    } finally {
      target.shutdown();
    }
  }

  private static void deleteTree(Path root) throws IOException {
    try (var paths = Files.walk(root)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
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

  /** Every record, or with {@code limit >= 0} that many nodes and the relationships among them. */
  private static String copy(
      GraphDatabaseService from, GraphDatabaseService to, int batch, long limit) {
    long most = limit < 0 ? Long.MAX_VALUE : limit;
    double nodeSeconds = 0;
    double edgeSeconds = 0;
    long nodes = 0;
    long edges = 0;
    int transactions = 0;
    try (Transaction read = from.beginTx()) {
      List<Copied> pending = new ArrayList<>(batch);
      try (ResourceIterator<Node> all = read.findNodes(NODE)) {
        while (all.hasNext() && nodes + pending.size() < most) {
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
        if (edges + rels.size() >= most) {
          break;
        }
        if (!r.isType(DERIVES) && !r.isType(PARTNER)) {
          continue;
        }
        long src = ((Number) r.getStartNode().getProperty("id")).longValue();
        long dst = ((Number) r.getEndNode().getProperty("id")).longValue();
        rels.add(new Edge(src, dst, r.getType(), r.getAllProperties()));
        if (rels.size() == batch) {
          edgeSeconds += writeEdges(to, rels, limit >= 0);
          edges += rels.size();
          transactions++;
          rels.clear();
        }
      }
      if (!rels.isEmpty()) {
        edgeSeconds += writeEdges(to, rels, limit >= 0);
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

  private static double writeEdges(GraphDatabaseService to, List<Edge> edges, boolean prefix) {
    long t0 = System.nanoTime();
    try (Transaction tx = to.beginTx()) {
      for (Edge e : edges) {
        Node src = tx.findNode(NODE, "id", e.src());
        Node dst = tx.findNode(NODE, "id", e.dst());
        if (src == null || dst == null) {
          if (!prefix) {
            throw new IllegalStateException("no node for an end of " + e);
          }
          continue; // a warm-up's prefix: an end not copied
        }
        Relationship r = src.createRelationshipTo(dst, e.type());
        e.props().forEach(r::setProperty);
      }
      tx.commit();
    }
    return (System.nanoTime() - t0) / 1e9;
  }
}
