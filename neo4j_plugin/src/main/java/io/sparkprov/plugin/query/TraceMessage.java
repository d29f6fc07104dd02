package io.sparkprov.plugin.query;

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
  /** query.proto's Strategy numbers. */
  private static final Map<String, Integer> STRATEGIES =
      Map.of("AUTO", 0, "RECURSIVE", 1, "COMPONENT", 2, "CONNECTED_SET", 3);
  /** lineage.proto's Op numbers (0: a placeholder's empty op). */
  private static final Map<String, Integer> OPS =
      Map.ofEntries(
          Map.entry("TOKEN", 1),
          Map.entry("PLUS", 2),
          Map.entry("TIMES", 3),
          Map.entry("DELTA", 4),
          Map.entry("TENSOR", 5),
          Map.entry("AGGREGATE", 6),
          Map.entry("BLACK_BOX", 7),
          Map.entry("MODULE", 8),
          Map.entry("VALUE", 9),
          Map.entry("EXCLUDED", 10));

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
      out.message(1, node(n, part.reset(), entry));
    }
    for (long[] e : edges) {
      part.reset().decimal(1, e[0]).decimal(2, e[1]);
      out.message(2, part);
    }
    out.bool(3, truncated);
    part.reset()
        .varint(1, STRATEGIES.getOrDefault(stats.strategy(), 0))
        .varint(2, stats.levels())
        .varint(3, 1)
        .varint(4, stats.edgesFetched())
        .varint(5, stats.setsVisited())
        .varint(7, stats.reached())
        .varint(8, edges.size())
        .bool(9, stats.idsPending());
    out.message(4, part);
    return out.toByteArray();
  }

  private static ProtoWriter node(NodeView n, ProtoWriter out, ProtoWriter entry) {
    out.decimal(1, n.id())
        .string(2, n.runId())
        .varint(3, OPS.getOrDefault(n.op(), 0))
        .string(4, n.label())
        .string(5, n.relation());
    Map<String, String> attributes = n.attributes() instanceof TreeMap<String, String> sorted
        ? sorted
        : new TreeMap<>(n.attributes());
    for (Map.Entry<String, String> a : attributes.entrySet()) {
      out.message(6, entry.reset().string(1, a.getKey()).string(2, a.getValue()));
    }
    return out.string(7, n.value())
        .decimalOrNone(8, n.component())
        .decimalOrNone(9, n.set());
  }
}
