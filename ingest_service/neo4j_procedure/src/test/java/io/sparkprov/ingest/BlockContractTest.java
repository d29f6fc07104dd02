package io.sparkprov.ingest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The block contract against its example payload (write-payload.json, which the Python suite
 * reads too: tests/unit/test_blocks.py), and the errors of malformed blocks.
 */
class BlockContractTest {
  @SuppressWarnings("unchecked")
  static Map<String, Object> payload() throws Exception {
    try (InputStream in = BlockContractTest.class.getResourceAsStream("/write-payload.json")) {
      return new ObjectMapper().readValue(in, new TypeReference<Map<String, Object>>() {});
    }
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> list(Map<String, Object> payload, String key) {
    return (List<Map<String, Object>>) payload.get(key);
  }

  @Test
  void theExamplePayloadParsesIntoTheRecords() throws Exception {
    Map<String, Object> payload = payload();

    List<NodeBlock> blocks = NodeBlock.parseAll(list(payload, "blocks"));
    List<EdgeBlock> edges = EdgeBlock.parseAll(list(payload, "edges"));

    assertEquals(2, blocks.size());
    NodeBlock tokens = blocks.get(0);
    assertEquals("run-contract", tokens.run());
    assertEquals("TOKEN", tokens.op());
    assertArrayEquals(new long[] {101L, -4611686018427387904L}, tokens.ids());
    assertEquals("Person1#0.1", tokens.labelOf(1));
    assertEquals("Person1", tokens.relation());
    assertEquals(List.of("people"), tokens.split());
    assertEquals(List.of("Name", "Age"), tokens.attributeNames());
    assertEquals(List.of("30", ""), tokens.attributeValues().get(1));
    assertTrue(tokens.isNull(1, 1));
    assertFalse(tokens.isNull(1, 0));
    assertFalse(tokens.shared());
    NodeBlock avg = blocks.get(1);
    assertNull(avg.relation());
    assertEquals("AVG", avg.labelOf(0));
    assertEquals(List.of("35.0"), avg.values());
    assertEquals(List.of(), avg.nullRows());
    assertEquals(1, edges.size());
    assertArrayEquals(new long[] {103L, 103L}, edges.get(0).dst());
  }

  @Test
  void theExamplePayloadIsStoredAsItSays() throws Exception {
    Map<String, Object> payload = payload();
    EmbeddedNeo4j neo4j = EmbeddedNeo4j.shared();
    List<Map<String, Object>> rows =
        neo4j.write(
            list(payload, "blocks"),
            list(payload, "edges"),
            ((Number) payload.get("theta")).longValue());

    assertEquals(3L, rows.get(0).get("nodes"));
    assertEquals(2L, rows.get(0).get("edges"));
    Map<String, Object> mark =
        neo4j
            .query(
                "MATCH (n:Node {id: $id}) RETURN n.label AS label, n.a_Name AS name,"
                    + " n.a_Age AS age, n.relation AS relation, n.split AS split",
                Map.of("id", -4611686018427387904L))
            .get(0);
    assertEquals("Person1#0.1", mark.get("label"));
    assertEquals("Mark", mark.get("name"));
    assertNull(mark.get("age")); // a null row: not stored
    assertEquals("Person1", mark.get("relation"));
    assertArrayEquals(new String[] {"people"}, (String[]) mark.get("split"));
    assertEquals(
        "35.0", neo4j.one("MATCH (n:Node {id: 103}) RETURN n.value", Map.of()));
    assertEquals(
        false,
        neo4j.one("MATCH (n:Node {id: 103}) RETURN n.relation IS NOT NULL", Map.of()));
  }

  private static Map<String, Object> validBlock() throws Exception {
    return new HashMap<>(list(payload(), "blocks").get(0));
  }

  /** The error parsing this as block 1 of a call. */
  private static String error(Map<String, Object> block) {
    return assertThrows(IllegalArgumentException.class, () -> NodeBlock.parse(block, 1))
        .getMessage();
  }

  @Test
  void aMissingFieldIsNamed() throws Exception {
    Map<String, Object> block = validBlock();
    block.remove("split");
    assertEquals("node block 1: field 'split' is missing", error(block));
  }

  @Test
  void aFieldOfTheWrongTypeIsNamed() throws Exception {
    Map<String, Object> block = validBlock();
    block.put("shared", "false");
    assertEquals("node block 1: field 'shared' must be a boolean, got String", error(block));
    block = validBlock();
    block.put("ids", List.of(1L, "2"));
    assertEquals("node block 1: field 'ids[1]' must be an integer, got String", error(block));
    block = validBlock();
    block.put("attribute_values", List.of(List.of("a", "b"), List.of("c", 3L)));
    assertEquals(
        "node block 1: field 'attribute_values[1][1]' must be a string, got Long", error(block));
  }

  @Test
  void raggedColumnsAreNamed() throws Exception {
    Map<String, Object> block = validBlock();
    block.put("labels", List.of("only one"));
    assertEquals(
        "node block 1: field 'labels' has 1 entries for 2 ids (must be 0 or 2)", error(block));
    block = validBlock();
    block.put("attribute_values", List.of(List.of("Steve", "Mark"), List.of("30")));
    assertEquals(
        "node block 1: field 'attribute_values[1]' has 1 values for 2 ids", error(block));
    Map<String, Object> edges = new HashMap<>(list(payload(), "edges").get(0));
    edges.put("dst", List.of(103L));
    assertEquals(
        "edge block 0: field 'dst' has 1 ids for 2 in src",
        assertThrows(IllegalArgumentException.class, () -> EdgeBlock.parse(edges, 0))
            .getMessage());
  }

  @Test
  void theRelationMayBeNullButNotAnotherType() throws Exception {
    Map<String, Object> block = validBlock();
    block.put("relation", null);
    assertNull(NodeBlock.parse(block, 0).relation());
    block.put("relation", 7L);
    assertEquals("node block 1: field 'relation' must be a string, got Long", error(block));
    assertEquals(Set.of(), NodeBlock.parse(validBlock(), 0).nullRows().get(0));
  }
}
