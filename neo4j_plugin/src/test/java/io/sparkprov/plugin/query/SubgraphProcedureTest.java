package io.sparkprov.plugin.query;

import static io.sparkprov.plugin.query.TraceProcedureTest.AGGREGATE;
import static io.sparkprov.plugin.query.TraceProcedureTest.T1;
import static io.sparkprov.plugin.query.TraceProcedureTest.T2;
import static io.sparkprov.plugin.query.TraceProcedureTest.V1;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.EmbeddedNeo4j;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code sparkprov.subgraph} on {@link TraceProcedureTest}'s graph: a member's Subgraph holds its
 * descendants and their siblings (the other member's TENSOR), not their other parents.
 */
class SubgraphProcedureTest {
  private static final String SUBGRAPH =
      "CALL sparkprov.subgraph($id, $limit, $max)"
          + " YIELD missing, tooLarge, ids, nodes, sources, targets, truncated, reached"
          + " RETURN *";

  private static EmbeddedNeo4j neo4j;

  @BeforeEach
  void writeGraph() throws Exception {
    neo4j = EmbeddedNeo4j.shared();
    TraceProcedureTest.writeGraph(neo4j);
  }

  @Test
  void aMembersSubgraphHoldsTheSiblingsOfItsDescendants() {
    Map<String, Object> row = subgraph(1L, 100, 100);
    assertEquals(Set.of(1L, 70L, T1, AGGREGATE, 90L, T2), Set.copyOf(ids(row)));
    assertEquals(1L, ids(row).get(0));
    assertEquals(T2, ids(row).get(ids(row).size() - 1)); // siblings come last
    assertEquals(
        Set.of(
            List.of(1L, 70L), List.of(1L, T1), List.of(T1, AGGREGATE), List.of(AGGREGATE, 70L),
            List.of(70L, 90L), List.of(T2, AGGREGATE)),
        edges(row));
    assertFalse((Boolean) row.get("truncated"));
    assertEquals(6, ((List<?>) row.get("nodes")).size());
  }

  @Test
  void limitsAndUnknownIds() {
    Map<String, Object> row = subgraph(1L, 2, 100);
    assertTrue((Boolean) row.get("truncated"));
    assertEquals(2, ids(row).size());
    assertEquals(3L, row.get("reached"));
    assertEquals("the descendants", subgraph(1L, 100, 3).get("tooLarge"));
    assertEquals("the ancestry", subgraph(90L, 100, 3).get("tooLarge"));
    assertEquals(List.of(999L), subgraph(999L, 100, 100).get("missing"));
    assertEquals(Set.of(V1, T1, AGGREGATE, 70L, 90L, T2), Set.copyOf(ids(subgraph(V1, 100, 100))));
  }

  private static Map<String, Object> subgraph(long id, long limit, long max) {
    List<Map<String, Object>> rows =
        neo4j.query(SUBGRAPH, Map.of("id", id, "limit", limit, "max", max));
    assertEquals(1, rows.size());
    return rows.get(0);
  }

  @SuppressWarnings("unchecked")
  private static List<Long> ids(Map<String, Object> row) {
    return (List<Long>) row.get("ids");
  }

  @SuppressWarnings("unchecked")
  private static Set<List<Long>> edges(Map<String, Object> row) {
    List<Long> src = (List<Long>) row.get("sources");
    List<Long> dst = (List<Long>) row.get("targets");
    List<List<Long>> out = new ArrayList<>();
    for (int k = 0; k < src.size(); k++) {
      out.add(List.of(src.get(k), dst.get(k)));
    }
    return Set.copyOf(out);
  }
}
