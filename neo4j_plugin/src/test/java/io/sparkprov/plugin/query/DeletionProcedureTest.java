package io.sparkprov.plugin.query;

import static io.sparkprov.plugin.query.TraceProcedureTest.AGGREGATE;
import static io.sparkprov.plugin.query.TraceProcedureTest.T1;
import static io.sparkprov.plugin.query.TraceProcedureTest.T2;
import static io.sparkprov.plugin.query.TraceProcedureTest.V1;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code sparkprov.propagateDeletion} on {@link TraceProcedureTest}'s graph: a TENSOR goes with
 * its member (joint use), an AGGREGATE and its group row only with all their inputs, and a
 * surviving aggregate comes back with its surviving inputs' values.
 */
class DeletionProcedureTest {
  private static final String DELETE =
      "CALL sparkprov.propagateDeletion($ids, $limit)"
          + " YIELD missing, truncated, removed, aggregates RETURN *";

  private static EmbeddedNeo4j neo4j;

  @BeforeEach
  void writeGraph() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    TraceProcedureTest.writeGraph(neo4j);
  }

  @Test
  void aMembersTensorGoesAndItsAggregateIsRecomputed() {
    Map<String, Object> row = delete(List.of(1L), 100);
    assertEquals(List.of(1L, T1), row.get("removed"));
    Map<String, Object> recomputed =
        Map.of("id", AGGREGATE, "label", "aggregate", "value", "", "values", List.of("20"));
    assertEquals(List.of(recomputed), row.get("aggregates"));
    row = delete(List.of(V1), 100);
    assertEquals(List.of(V1, T1), row.get("removed"));
  }

  @Test
  void allMembersTakeTheAggregateAndTheGroupRowButNotItsOtherChild() {
    Map<String, Object> row = delete(List.of(1L, 2L), 100);
    assertEquals(List.of(1L, 2L, T1, T2, AGGREGATE, 70L), row.get("removed"));
    assertEquals(List.of(), row.get("aggregates"));
    assertEquals(List.of(3L, 90L), delete(List.of(3L, 90L), 100).get("removed"));
  }

  @Test
  void aLargeClosureOrAnUnknownIdAnswersNothing() {
    Map<String, Object> row = delete(List.of(1L), 4); // closure: 1, 70, T1, AGGREGATE, 90
    assertTrue((Boolean) row.get("truncated"));
    assertEquals(List.of(), row.get("removed"));
    assertFalse((Boolean) delete(List.of(1L), 5).get("truncated"));
    row = delete(List.of(1L, 999L), 100);
    assertEquals(List.of(999L), row.get("missing"));
    assertEquals(List.of(), row.get("removed"));
  }

  private static Map<String, Object> delete(List<Long> ids, long limit) {
    List<Map<String, Object>> rows = neo4j.query(DELETE, Map.of("ids", ids, "limit", limit));
    assertEquals(1, rows.size());
    return rows.get(0);
  }
}
