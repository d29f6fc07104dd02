package io.sparkprov.plugin.query;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.protobuf.CodedOutputStream;
import io.sparkprov.v1.Edge;
import io.sparkprov.v1.Node;
import io.sparkprov.v1.Op;
import io.sparkprov.v1.Strategy;
import io.sparkprov.v1.TraceResponse;
import io.sparkprov.v1.TraceStats;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The trace message is defined once, in proto/sparkprov/v1/query.proto: {@link TraceMessage}'s
 * hand encoder must write exactly the bytes the classes protoc generates from it write for the
 * same trace (deterministic serialization: map entries by key). Random traces: ids of every sign,
 * empty and multi-byte texts, empty attribute values, unknown ops, nodes without ids.
 */
class TraceContractTest {
  private static final String[] TEXTS = {"", "a", "Cars", "é", "名前", "x y", "0", "-"};

  @Test
  void theHandEncoderWritesTheGeneratedClassesBytes() throws IOException {
    Random random = new Random(20261127);
    List<String> ops = new ArrayList<>(TraceMessage.OPS.keySet());
    ops.add(""); // a placeholder's
    ops.add("NOT_AN_OP");
    List<String> strategies = new ArrayList<>(TraceMessage.STRATEGIES.keySet());
    for (int round = 0; round < 300; round++) {
      List<NodeView> nodes = new ArrayList<>();
      for (int i = random.nextInt(5); i > 0; i--) {
        nodes.add(node(random, ops.get(random.nextInt(ops.size()))));
      }
      List<long[]> edges = new ArrayList<>();
      for (int i = random.nextInt(5); i > 0; i--) {
        edges.add(new long[] {id(random), id(random)});
      }
      boolean truncated = random.nextBoolean();
      TraceMessage.Stats stats = new TraceMessage.Stats(
          strategies.get(random.nextInt(strategies.size())),
          count(random, Integer.MAX_VALUE),
          count(random, Long.MAX_VALUE),
          count(random, Integer.MAX_VALUE),
          count(random, Long.MAX_VALUE),
          random.nextBoolean());

      byte[] hand = TraceMessage.encode(nodes, edges, truncated, stats);
      TraceResponse generated = generated(nodes, edges, truncated, stats);

      assertArrayEquals(deterministic(generated), hand, "round " + round);
      assertEquals(generated, TraceResponse.parseFrom(hand), "round " + round);
    }
  }

  @Test
  void opAndStrategyNamesAreTheProtos() {
    Map<String, Integer> ops = new HashMap<>();
    for (Op op : Op.values()) {
      if (op != Op.UNRECOGNIZED && op != Op.OP_UNSPECIFIED) {
        ops.put(op.name().substring("OP_".length()), op.getNumber());
      }
    }
    assertEquals(ops, TraceMessage.OPS);
    Map<String, Integer> strategies = new HashMap<>();
    for (Strategy s : Strategy.values()) {
      if (s != Strategy.UNRECOGNIZED) {
        strategies.put(s.name().substring("STRATEGY_".length()), s.getNumber());
      }
    }
    assertEquals(strategies, TraceMessage.STRATEGIES);
  }

  // ---- The same trace through the generated classes --------------------------------------------

  private static TraceResponse generated(
      List<NodeView> nodes, List<long[]> edges, boolean truncated, TraceMessage.Stats stats) {
    TraceResponse.Builder out = TraceResponse.newBuilder();
    for (NodeView n : nodes) {
      Node.Builder node = Node.newBuilder()
          .setId(Long.toString(n.id()))
          .setRunId(n.runId())
          .setOp(op(n.op()))
          .setLabel(n.label())
          .setRelation(n.relation())
          .putAllAttributes(n.attributes())
          .setValue(n.value());
      if (n.component() != null) {
        node.setComponentId(Long.toString(n.component()));
      }
      if (n.set() != null) {
        node.setSetId(Long.toString(n.set()));
      }
      out.addNodes(node);
    }
    for (long[] e : edges) {
      out.addEdges(Edge.newBuilder().setSrc(Long.toString(e[0])).setDst(Long.toString(e[1])));
    }
    return out.setTruncated(truncated)
        .setStats(TraceStats.newBuilder()
            .setStrategy(Strategy.valueOf("STRATEGY_" + stats.strategy()))
            .setLevels((int) stats.levels())
            .setQueries(1)
            .setEdgesFetched(stats.edgesFetched())
            .setSetsVisited((int) stats.setsVisited())
            .setNodesReached(stats.reached())
            .setEdgesReturned(edges.size())
            .setIdsPending(stats.idsPending()))
        .build();
  }

  private static Op op(String name) {
    for (Op op : Op.values()) {
      if (op != Op.UNRECOGNIZED && op.name().equals("OP_" + name)) {
        return op;
      }
    }
    return Op.OP_UNSPECIFIED;
  }

  private static byte[] deterministic(TraceResponse message) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    out.useDeterministicSerialization();
    message.writeTo(out);
    out.flush();
    return bytes.toByteArray();
  }

  // ---- Random traces -------------------------------------------------------------------------

  private static NodeView node(Random random, String op) {
    Map<String, String> attributes = new HashMap<>();
    for (int i = random.nextInt(4); i > 0; i--) {
      attributes.put(text(random) + i, text(random));
    }
    return new NodeView(
        id(random), text(random), op, text(random), text(random), attributes, text(random),
        random.nextBoolean() ? null : id(random), random.nextBoolean() ? null : id(random));
  }

  private static long id(Random random) {
    return switch (random.nextInt(4)) {
      case 0 -> 0;
      case 1 -> random.nextInt(100) - 50;
      default -> random.nextLong();
    };
  }

  private static long count(Random random, long max) {
    return random.nextInt(3) == 0 ? 0 : Math.floorMod(random.nextLong(), max);
  }

  private static String text(Random random) {
    return TEXTS[random.nextInt(TEXTS.length)];
  }
}
