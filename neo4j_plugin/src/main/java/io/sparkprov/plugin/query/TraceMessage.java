package io.sparkprov.plugin.query;

import io.sparkprov.v1.Edge;
import io.sparkprov.v1.Node;
import io.sparkprov.v1.Op;
import io.sparkprov.v1.Strategy;
import io.sparkprov.v1.TraceResponse;
import io.sparkprov.v1.TraceStats;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A trace as the bytes of the {@code TraceResponse} message of proto/sparkprov/v1/query.proto, so
 * the query service hands them to gRPC as they are instead of rebuilding every node in Python.
 * It fills what query_service/adapter.py's trace_response does, but for {@code stats.millis}: the
 * service appends that itself (a second {@code stats} field merges into the first, as protobuf
 * parsers merge repeated embedded messages). test_trace_procedure.py checks both give the same
 * message.
 */
final class TraceMessage {
  // The numbers of query.proto, from the classes protoc generates from it (the pom): constants
  // that javac copies here, so the jar needs neither those classes nor protobuf-java.
  // TraceContractTest writes random traces both ways and compares the bytes.
  private static final int TRACE_NODES = TraceResponse.NODES_FIELD_NUMBER;
  private static final int TRACE_EDGES = TraceResponse.EDGES_FIELD_NUMBER;
  private static final int TRACE_TRUNCATED = TraceResponse.TRUNCATED_FIELD_NUMBER;
  private static final int TRACE_STATS = TraceResponse.STATS_FIELD_NUMBER;
  private static final int NODE_ID = Node.ID_FIELD_NUMBER;
  private static final int NODE_RUN_ID = Node.RUN_ID_FIELD_NUMBER;
  private static final int NODE_OP = Node.OP_FIELD_NUMBER;
  private static final int NODE_LABEL = Node.LABEL_FIELD_NUMBER;
  private static final int NODE_RELATION = Node.RELATION_FIELD_NUMBER;
  private static final int NODE_ATTRIBUTES = Node.ATTRIBUTES_FIELD_NUMBER;
  private static final int NODE_VALUE = Node.VALUE_FIELD_NUMBER;
  private static final int NODE_COMPONENT_ID = Node.COMPONENT_ID_FIELD_NUMBER;
  private static final int NODE_SET_ID = Node.SET_ID_FIELD_NUMBER;
  // A map entry's key and value: fixed by protobuf's encoding of maps, not by query.proto.
  private static final int ENTRY_KEY = 1;
  private static final int ENTRY_VALUE = 2;
  private static final int EDGE_SRC = Edge.SRC_FIELD_NUMBER;
  private static final int EDGE_DST = Edge.DST_FIELD_NUMBER;
  private static final int STATS_STRATEGY = TraceStats.STRATEGY_FIELD_NUMBER;
  private static final int STATS_LEVELS = TraceStats.LEVELS_FIELD_NUMBER;
  private static final int STATS_QUERIES = TraceStats.QUERIES_FIELD_NUMBER;
  private static final int STATS_EDGES_FETCHED = TraceStats.EDGES_FETCHED_FIELD_NUMBER;
  private static final int STATS_SETS_VISITED = TraceStats.SETS_VISITED_FIELD_NUMBER;
  private static final int STATS_NODES_REACHED = TraceStats.NODES_REACHED_FIELD_NUMBER;
  private static final int STATS_EDGES_RETURNED = TraceStats.EDGES_RETURNED_FIELD_NUMBER;
  private static final int STATS_IDS_PENDING = TraceStats.IDS_PENDING_FIELD_NUMBER;

  /** query.proto's Strategy numbers by the names the procedure takes (without the prefix). */
  static final Map<String, Integer> STRATEGIES =
      Map.of(
          "AUTO", Strategy.STRATEGY_AUTO_VALUE,
          "RECURSIVE", Strategy.STRATEGY_RECURSIVE_VALUE,
          "COMPONENT", Strategy.STRATEGY_COMPONENT_VALUE,
          "CONNECTED_SET", Strategy.STRATEGY_CONNECTED_SET_VALUE);
  /** lineage.proto's Op numbers by the names nodes store (a placeholder's empty op: 0). */
  static final Map<String, Integer> OPS =
      Map.ofEntries(
          Map.entry("TOKEN", Op.OP_TOKEN_VALUE),
          Map.entry("PLUS", Op.OP_PLUS_VALUE),
          Map.entry("TIMES", Op.OP_TIMES_VALUE),
          Map.entry("DELTA", Op.OP_DELTA_VALUE),
          Map.entry("TENSOR", Op.OP_TENSOR_VALUE),
          Map.entry("AGGREGATE", Op.OP_AGGREGATE_VALUE),
          Map.entry("BLACK_BOX", Op.OP_BLACK_BOX_VALUE),
          Map.entry("MODULE", Op.OP_MODULE_VALUE),
          Map.entry("VALUE", Op.OP_VALUE_VALUE),
          Map.entry("EXCLUDED", Op.OP_EXCLUDED_VALUE));

  /** The TraceStats fields the procedure knows. */
  record Stats(
      String strategy,
      long levels,
      long edgesFetched,
      long setsVisited,
      long reached,
      boolean idsPending) {}

  private TraceMessage() {}

  static byte[] encode(
      List<NodeView> nodes, List<long[]> edges, boolean truncated, Stats stats) {
    ProtoWriter out = new ProtoWriter();
    ProtoWriter part = new ProtoWriter();
    ProtoWriter entry = new ProtoWriter();
    for (NodeView n : nodes) {
      out.message(TRACE_NODES, node(n, part.reset(), entry));
    }
    for (long[] e : edges) {
      part.reset().decimal(EDGE_SRC, e[0]).decimal(EDGE_DST, e[1]);
      out.message(TRACE_EDGES, part);
    }
    out.bool(TRACE_TRUNCATED, truncated);
    part.reset()
        .varint(STATS_STRATEGY, STRATEGIES.getOrDefault(stats.strategy(), 0))
        .varint(STATS_LEVELS, stats.levels())
        .varint(STATS_QUERIES, 1)
        .varint(STATS_EDGES_FETCHED, stats.edgesFetched())
        .varint(STATS_SETS_VISITED, stats.setsVisited())
        .varint(STATS_NODES_REACHED, stats.reached())
        .varint(STATS_EDGES_RETURNED, edges.size())
        .bool(STATS_IDS_PENDING, stats.idsPending());
    out.message(TRACE_STATS, part);
    return out.toByteArray();
  }

  private static ProtoWriter node(NodeView n, ProtoWriter out, ProtoWriter entry) {
    out.decimal(NODE_ID, n.id())
        .string(NODE_RUN_ID, n.runId())
        .varint(NODE_OP, OPS.getOrDefault(n.op(), 0))
        .string(NODE_LABEL, n.label())
        .string(NODE_RELATION, n.relation());
    Map<String, String> attributes = n.attributes() instanceof TreeMap<String, String> sorted
        ? sorted
        : new TreeMap<>(n.attributes());
    for (Map.Entry<String, String> a : attributes.entrySet()) {
      // Protobuf writes a map entry's key and value even when empty.
      entry.reset().text(ENTRY_KEY, a.getKey()).text(ENTRY_VALUE, a.getValue());
      out.message(NODE_ATTRIBUTES, entry);
    }
    return out.string(NODE_VALUE, n.value())
        .decimalOrNone(NODE_COMPONENT_ID, n.component())
        .decimalOrNone(NODE_SET_ID, n.set());
  }
}
