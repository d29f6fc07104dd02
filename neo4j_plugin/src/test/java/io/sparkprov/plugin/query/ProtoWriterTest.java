package io.sparkprov.plugin.query;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The wire bytes of the trace message, against bytes that Python's generated query_pb2 writes for
 * the same message ({@code TraceResponse.SerializeToString(deterministic=True)}, hex below): the
 * contract is query.proto, and both sides must write it the same.
 */
class ProtoWriterTest {
  @Test
  void varintsAndTextAsProtobufWritesThem() {
    byte[] got = new ProtoWriter().varint(1, 300).string(2, "é").bool(3, false).toByteArray();
    assertArrayEquals(HexFormat.of().parseHex("08ac02" + "1202c3a9"), got);
  }

  @Test
  void negativeIdsAreTenByteVarintsOfTheirDecimalText() {
    byte[] got = new ProtoWriter().varint(1, -1).toByteArray();
    assertArrayEquals(HexFormat.of().parseHex("08ffffffffffffffffff01"), got);
  }

  @Test
  void decimalWritesWhatTheDecimalTextWrites() {
    for (long v : new long[] {0, 7, -5, 10, -10, 1234567890123L, Long.MAX_VALUE, Long.MIN_VALUE}) {
      byte[] got = new ProtoWriter().decimal(3, v).toByteArray();
      assertArrayEquals(new ProtoWriter().string(3, Long.toString(v)).toByteArray(), got);
    }
    assertArrayEquals(new byte[0], new ProtoWriter().decimalOrNone(3, null).toByteArray());
  }

  /**
   * TraceResponse(nodes=[Node(id="-5", run_id="r", op=OP_TOKEN, label="L", relation="R",
   * attributes={"b": "2", "a": "1"}, component_id="7", set_id="8"), Node(id="6", op=OP_PLUS,
   * value="v")], edges=[Edge(src="-5", dst="6")], stats=TraceStats(strategy=STRATEGY_RECURSIVE,
   * levels=1, queries=1, edges_fetched=1, nodes_reached=2, edges_returned=1)).
   */
  @Test
  void aTraceAsPythonWritesIt() {
    NodeView a = new NodeView(-5, "r", "TOKEN", "L", "R", Map.of("b", "2", "a", "1"), "", 7L, 8L);
    NodeView b = new NodeView(6, "", "PLUS", "", "", Map.of(), "v", null, null);
    byte[] got =
        TraceMessage.encode(
            List.of(a, b),
            List.of(new long[] {-5, 6}),
            false,
            new TraceMessage.Stats("RECURSIVE", 1, 1, 0, 2, false));
    String python =
        "0a250a022d35120172180122014c2a0152"
            + "32060a0161120131" // attributes, sorted by key
            + "32060a0162120132"
            + "420137" + "4a0138" // component_id, set_id
            + "0a080a013618023a0176" // the second node
            + "12070a022d35120136" // the edge
            + "220c080110011801200138024001"; // the stats
    assertArrayEquals(HexFormat.of().parseHex(python), got);
  }
}
