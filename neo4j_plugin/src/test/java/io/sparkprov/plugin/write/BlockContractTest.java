package io.sparkprov.plugin.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkprov.plugin.EmbeddedNeo4j;
import java.io.InputStream;
import java.util.ArrayList;
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
  void theExampleMemberBlockParsesIntoTheRecord() throws Exception {
    List<MemberBlock> members = MemberBlock.parseAll(list(payload(), "members"));

    assertEquals(1, members.size());
    MemberBlock block = members.get(0);
    assertEquals("run-contract", block.run());
    assertEquals("people/avg#0", block.groupKey());
    assertArrayEquals(new long[] {101L, -4611686018427387904L, 102L}, block.members());
    assertArrayEquals(new long[] {105L, 105L, 106L}, block.groups());
    assertArrayEquals(new long[] {3391054369527413464L, -1220631648899974467L, -4704900290486946168L}, block.pairs());
    assertEquals(2, block.aggregates());
    assertEquals(3, block.size());
    assertTrue(block.isNull(0, 1));
    assertFalse(block.isNull(1, 1));
    assertArrayEquals(new String[] {"", "Mark"}, block.valuesOf(1));
    assertArrayEquals(new String[] {"41", "Ann"}, block.valuesOf(2));
    assertArrayEquals(new long[] {0L}, block.nullColumnsOf(1));
    assertArrayEquals(new long[] {}, block.nullColumnsOf(0));
    assertEquals(1, block.present(1));
    assertEquals(2, block.present(0));
  }

  @Test
  void theExamplePayloadWithMembersIsStoredAsItSays() throws Exception {
    Map<String, Object> payload = payload();
    EmbeddedNeo4j neo4j = EmbeddedNeo4j.shared();
    List<Map<String, Object>> rows =
        neo4j.write(
            list(payload, "blocks"),
            list(payload, "edges"),
            ((Number) payload.get("theta")).longValue(),
            list(payload, "members"));

    // 3 nodes and 2 edges, plus the members' logical ones: 5 values present (2 + 1 + 2), each a
    // TENSOR and a VALUE node and 3 edges, and one edge per member.
    assertEquals(3L + 2 * 5, rows.get(0).get("nodes"));
    assertEquals(2L + 3 + 3 * 5, rows.get(0).get("edges"));
    Map<String, Object> mark =
        neo4j
            .query(
                "MATCH (:Node {id: $id})-[r:DERIVES]->(:Node {id: 105}) RETURN r.member_key AS key,"
                    + " r.member_values AS values, r.member_nulls AS nulls, r.pair AS pair",
                Map.of("id", -4611686018427387904L))
            .get(0);
    assertEquals("people/avg#0", mark.get("key"));
    assertArrayEquals(new String[] {"", "Mark"}, (String[]) mark.get("values"));
    assertArrayEquals(new long[] {0L}, (long[]) mark.get("nulls"));
    assertEquals(-1220631648899974467L, mark.get("pair"));
    assertEquals(
        2L, neo4j.one("MATCH (k:MemberKey {key: 'people/avg#0'}) RETURN k.aggregates", Map.of()));
  }

  private static Map<String, Object> validMemberBlock() throws Exception {
    return new HashMap<>(list(payload(), "members").get(0));
  }

  /** The error parsing this as member block 2 of a call. */
  private static String memberError(Map<String, Object> block) {
    return assertThrows(IllegalArgumentException.class, () -> MemberBlock.parse(block, 2))
        .getMessage();
  }

  @Test
  void aMalformedMemberBlockIsNamed() throws Exception {
    Map<String, Object> block = validMemberBlock();
    block.remove("pairs");
    assertEquals("member block 2: field 'pairs' is missing", memberError(block));
    block = validMemberBlock();
    block.put("group_key", "");
    assertEquals("member block 2: field 'group_key' is empty", memberError(block));
    block = validMemberBlock();
    block.put("aggregates", "2");
    assertEquals(
        "member block 2: field 'aggregates' must be an integer, got String", memberError(block));
    block = validMemberBlock();
    block.put("members", List.of(101L, "x", 102L));
    assertEquals(
        "member block 2: field 'members[1]' must be an integer, got String", memberError(block));
    block = validMemberBlock();
    block.put("values", List.of(List.of("30", "", "41"), List.of("Steve", 7L, "Ann")));
    assertEquals(
        "member block 2: field 'values[1][1]' must be a string, got Long", memberError(block));
  }

  @Test
  void raggedOrOutOfRangeMemberColumnsAreNamed() throws Exception {
    Map<String, Object> block = validMemberBlock();
    block.put("groups", List.of(105L, 105L));
    assertEquals("member block 2: field 'groups' has 2 ids for 3 members", memberError(block));
    block = validMemberBlock();
    block.put("pairs", List.of(201L, 202L, 203L, 204L));
    assertEquals("member block 2: field 'pairs' has 4 ids for 3 members", memberError(block));
    block = validMemberBlock();
    block.put("values", List.of(List.of("30", "", "41")));
    assertEquals(
        "member block 2: field 'values' has 1 columns for 2 aggregates", memberError(block));
    block = validMemberBlock();
    block.put("values", List.of(List.of("30", "", "41"), List.of("Steve", "Mark")));
    assertEquals(
        "member block 2: field 'values[1]' has 2 values for 3 members", memberError(block));
    block = validMemberBlock();
    block.put("null_rows", List.of(List.of(1L), List.of(), List.of()));
    assertEquals(
        "member block 2: field 'null_rows' has 3 columns for 2 aggregates", memberError(block));
    block = validMemberBlock();
    block.put("null_rows", List.of(List.of(1L), List.of(0L, 3L)));
    assertEquals(
        "member block 2: field 'null_rows[1][1]' is 3, out of range for 3 members",
        memberError(block));
    block = validMemberBlock();
    block.put("null_rows", List.of(List.of(-1L), List.of()));
    assertEquals(
        "member block 2: field 'null_rows[0][0]' is -1, out of range for 3 members",
        memberError(block));
  }

  @Test
  void theAggregateCountIsBounded() throws Exception {
    Map<String, Object> block = validMemberBlock();
    block.put("aggregates", -1L);
    assertEquals(
        "member block 2: field 'aggregates' is -1, must be 0 to 64", memberError(block));
    block.put("aggregates", 65L);
    assertEquals(
        "member block 2: field 'aggregates' is 65, must be 0 to 64", memberError(block));
    // 64 columns fit: the last one's null bit too.
    List<List<String>> values = new ArrayList<>();
    List<List<Long>> nulls = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      values.add(List.of("v", "w", "x"));
      nulls.add(i == 63 ? List.of(2L) : List.of());
    }
    block.put("aggregates", 64L);
    block.put("values", values);
    block.put("null_rows", nulls);
    MemberBlock wide = MemberBlock.parse(block, 2);
    assertTrue(wide.isNull(63, 2));
    assertEquals(63, wide.present(2));
    assertArrayEquals(new long[] {63L}, wide.nullColumnsOf(2));
    // No aggregated column at all is allowed too.
    block.put("aggregates", 0L);
    block.put("values", List.of());
    block.put("null_rows", List.of());
    assertEquals(0, MemberBlock.parse(block, 2).present(0));
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
