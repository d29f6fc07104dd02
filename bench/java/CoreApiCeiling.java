import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Label;
import org.neo4j.graphdb.Node;
import org.neo4j.graphdb.Relationship;
import org.neo4j.graphdb.RelationshipType;
import org.neo4j.graphdb.Transaction;

/**
 * The engine's own ceiling for storing lineage here: an embedded Neo4j (no Bolt, no Cypher in the
 * writes, no id maintenance) writing the flushes of bench/neo4j_ceiling.py with the core API, one
 * transaction per flush, on the real store's schema (its constraints and indexes, run first). Each
 * node and member edge gets the properties the ingest procedure gives it (FlushWriter.fill and
 * setMemberProperties), an edge end not stored yet becomes a placeholder ({@code pending_run})
 * that its node fills later. No check for an edge sent twice, no component or set ids. An upper
 * bound for any writer inside the server, our procedure included.
 *
 * <p>Run by {@code python -m bench.neo4j_ceiling} (variant {@code core-api}) as {@code java -cp
 * <neo4j jars> bench/java/CoreApiCeiling.java HOME FLUSHES [CONF]}, FLUSHES as written by its
 * {@code FlushFile}; prints one JSON line: the records it created, the store's counts after, and
 * the seconds of each flush's transaction (reading the file is not timed).
 */
public final class CoreApiCeiling {
  private static final Label NODE = Label.label("Node");
  private static final RelationshipType DERIVES = RelationshipType.withName("DERIVES");
  private static final String PENDING = "pending_run";
  private static final String[] LABELS = {
    "Node", "Component", "LevelSet", "ConnectedSet", "MemberKey", "Run", "IngestLock"
  };
  private static final String[] TYPES = {"DERIVES", "SET_DEP"};

  record NodeBlock(
      String run,
      String op,
      String label,
      String relation,
      boolean shared,
      String[] labels,
      String[] values,
      String[] split,
      String[] attributeNames,
      String[][] attributeValues,
      Set<Integer>[] nulls,
      long[] ids) {}

  record EdgeBlock(String run, long[] src, long[] dst) {}

  record MemberBlock(
      String run, String key, long[] members, long[] groups, long[] pairs, String[][] values,
      Set<Integer>[] nulls) {}

  record Flush(List<NodeBlock> blocks, List<EdgeBlock> edges, List<MemberBlock> members) {}

  private long nodesCreated;
  private long relationshipsCreated;

  public static void main(String[] args) throws IOException {
    Path home = Path.of(args[0]);
    DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(home);
    if (args.length > 2) {
      builder.loadPropertiesFromFile(Path.of(args[2]));
    }
    DatabaseManagementService dbms = builder.build();
    try (DataInputStream in =
        new DataInputStream(new BufferedInputStream(Files.newInputStream(Path.of(args[1])), 1 << 20))) {
      GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
      for (String statement : texts(in)) {
        db.executeTransactionally(statement);
      }
      try (Transaction tx = db.beginTx()) {
        tx.schema().awaitIndexesOnline(5, TimeUnit.MINUTES);
      }
      CoreApiCeiling writer = new CoreApiCeiling();
      List<Double> seconds = new ArrayList<>();
      double total = 0;
      while (in.readInt() == 1) {
        Flush flush = readFlush(in);
        long t0 = System.nanoTime();
        try (Transaction tx = db.beginTx()) {
          writer.write(tx, flush);
          tx.commit();
        }
        double s = (System.nanoTime() - t0) / 1e9;
        seconds.add(s);
        total += s;
      }
      Map<String, Long> stored = counts(db);
      StringBuilder json = new StringBuilder("{\"write_s\": ").append(String.format("%.3f", total));
      json.append(", \"created\": {\"nodes\": ").append(writer.nodesCreated);
      json.append(", \"relationships\": ").append(writer.relationshipsCreated).append("}");
      json.append(", \"stored\": {");
      String sep = "";
      for (Map.Entry<String, Long> e : stored.entrySet()) {
        json.append(sep).append('"').append(e.getKey()).append("\": ").append(e.getValue());
        sep = ", ";
      }
      json.append("}, \"flush_s\": [");
      sep = "";
      for (double s : seconds) {
        json.append(sep).append(String.format("%.4f", s));
        sep = ", ";
      }
      System.out.println(json.append("]}"));
    } finally {
      dbms.shutdown();
    }
  }

  /** The same counts as neo4j_ceiling.graph_counts. */
  private static Map<String, Long> counts(GraphDatabaseService db) {
    Map<String, String> queries = new LinkedHashMap<>();
    queries.put("nodes", "MATCH (n) RETURN count(n) AS c");
    queries.put("relationships", "MATCH ()-[r]->() RETURN count(r) AS c");
    for (String label : LABELS) {
      queries.put(label, "MATCH (n:" + label + ") RETURN count(n) AS c");
    }
    for (String type : TYPES) {
      queries.put(type, "MATCH ()-[r:" + type + "]->() RETURN count(r) AS c");
    }
    queries.put("pending", "MATCH (n:Node) WHERE n.pending_run IS NOT NULL RETURN count(n) AS c");
    Map<String, Long> out = new LinkedHashMap<>();
    queries.forEach(
        (name, query) ->
            out.put(name, db.executeTransactionally(query, Map.of(), r -> (Long) r.next().get("c"))));
    return out;
  }

  // ---- Writing: FlushWriter's upsert, without its id maintenance and edge dedup ----------------

  private final Map<Long, Node> cache = new HashMap<>(); // this transaction's nodes
  private final Set<Long> created = new HashSet<>(); // ids whose node this transaction created

  private void write(Transaction tx, Flush flush) {
    cache.clear();
    created.clear();
    for (NodeBlock b : flush.blocks()) {
      for (int i = 0; i < b.ids().length; i++) {
        long id = b.ids()[i];
        Node n = node(tx, id);
        if (!created.contains(id)) {
          if (n.hasProperty("op")) {
            continue; // stored before: a duplicate
          }
          n.removeProperty(PENDING); // a placeholder an earlier flush's edge made
        }
        fill(n, b, i);
      }
    }
    for (MemberBlock m : flush.members()) {
      for (int k = 0; k < m.members().length; k++) {
        Relationship r = edge(tx, m.members()[k], m.groups()[k], m.run());
        String[] values = new String[m.values().length];
        List<Long> nulls = new ArrayList<>();
        for (int c = 0; c < values.length; c++) {
          values[c] = m.values()[c][k];
          if (m.nulls()[c].contains(k)) {
            nulls.add((long) c);
          }
        }
        r.setProperty("member_key", m.key());
        r.setProperty("member_values", values);
        if (!nulls.isEmpty()) {
          r.setProperty("member_nulls", nulls.stream().mapToLong(Long::longValue).toArray());
        }
        r.setProperty("pair", m.pairs()[k]);
      }
    }
    for (EdgeBlock e : flush.edges()) {
      for (int i = 0; i < e.src().length; i++) {
        edge(tx, e.src()[i], e.dst()[i], e.run());
      }
    }
  }

  private static void fill(Node n, NodeBlock b, int i) {
    n.setProperty("run_id", b.run());
    n.setProperty("op", b.op());
    n.setProperty("label", b.labels().length > 0 ? b.labels()[i] : b.label());
    if (!b.relation().isEmpty()) {
      n.setProperty("relation", b.relation());
    }
    if (b.values().length > 0) {
      n.setProperty("value", b.values()[i]);
    }
    if (b.shared()) {
      n.setProperty("shared", true);
    }
    n.setProperty("split", b.split());
    for (int a = 0; a < b.attributeNames().length; a++) {
      if (!b.nulls()[a].contains(i)) {
        n.setProperty("a_" + b.attributeNames()[a], b.attributeValues()[a][i]);
      }
    }
  }

  private Relationship edge(Transaction tx, long src, long dst, String run) {
    Node a = end(tx, src, run);
    Node b = end(tx, dst, run);
    relationshipsCreated++;
    return a.createRelationshipTo(b, DERIVES);
  }

  /** An edge's end: a placeholder created here is marked pending for the edge's run. */
  private Node end(Transaction tx, long id, String run) {
    boolean before = cache.containsKey(id);
    Node n = node(tx, id);
    if (!before && created.contains(id)) {
      n.setProperty(PENDING, run);
    }
    return n;
  }

  private Node node(Transaction tx, long id) {
    Node n = cache.get(id);
    if (n == null) {
      n = tx.findNode(NODE, "id", id);
      if (n == null) {
        n = tx.createNode(NODE);
        n.setProperty("id", id);
        created.add(id);
        nodesCreated++;
      }
      cache.put(id, n);
    }
    return n;
  }

  // ---- Reading the flush file (bench/neo4j_ceiling.py, FlushFile) ---------------------------

  private static Flush readFlush(DataInputStream in) throws IOException {
    List<NodeBlock> blocks = new ArrayList<>();
    for (int b = in.readInt(); b > 0; b--) {
      String run = in.readUTF();
      String op = in.readUTF();
      String label = in.readUTF();
      String relation = in.readUTF();
      boolean shared = in.readByte() != 0;
      String[] labels = texts(in);
      String[] values = texts(in);
      String[] split = texts(in);
      String[] names = texts(in);
      String[][] attributeValues = new String[names.length][];
      @SuppressWarnings("unchecked")
      Set<Integer>[] nulls = new Set[names.length];
      for (int a = 0; a < names.length; a++) {
        attributeValues[a] = texts(in);
        nulls[a] = ints(in);
      }
      blocks.add(
          new NodeBlock(
              run, op, label, relation, shared, labels, values, split, names, attributeValues,
              nulls, longs(in)));
    }
    List<EdgeBlock> edges = new ArrayList<>();
    for (int e = in.readInt(); e > 0; e--) {
      edges.add(new EdgeBlock(in.readUTF(), longs(in), longs(in)));
    }
    List<MemberBlock> members = new ArrayList<>();
    for (int m = in.readInt(); m > 0; m--) {
      String run = in.readUTF();
      String key = in.readUTF();
      long[] memberIds = longs(in);
      long[] groups = longs(in);
      long[] pairs = longs(in);
      int aggregates = in.readInt();
      String[][] values = new String[aggregates][];
      @SuppressWarnings("unchecked")
      Set<Integer>[] nulls = new Set[aggregates];
      for (int c = 0; c < aggregates; c++) {
        values[c] = texts(in);
        nulls[c] = ints(in);
      }
      members.add(new MemberBlock(run, key, memberIds, groups, pairs, values, nulls));
    }
    return new Flush(blocks, edges, members);
  }

  private static String[] texts(DataInputStream in) throws IOException {
    String[] out = new String[in.readInt()];
    for (int i = 0; i < out.length; i++) {
      out[i] = in.readUTF();
    }
    return out;
  }

  private static long[] longs(DataInputStream in) throws IOException {
    long[] out = new long[in.readInt()];
    for (int i = 0; i < out.length; i++) {
      out[i] = in.readLong();
    }
    return out;
  }

  private static Set<Integer> ints(DataInputStream in) throws IOException {
    Set<Integer> out = new HashSet<>();
    for (int i = in.readInt(); i > 0; i--) {
      out.add(in.readInt());
    }
    return out;
  }
}
