package io.sparkprov.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The embedded database runs sparkprov/schema.cypher, ingest's one schema: every constraint and
 * index the file creates is there, none it drops is.
 */
class SchemaTest {
  private static final Pattern NAMED =
      Pattern.compile("^(CREATE (?:CONSTRAINT|INDEX)|DROP INDEX) (\\w+)");

  @Test
  void theEmbeddedDatabaseHasTheSchemaIngestCreates() throws Exception {
    Set<String> created = new TreeSet<>();
    Set<String> dropped = new TreeSet<>();
    for (String statement : EmbeddedNeo4j.schema()) {
      Matcher m = NAMED.matcher(statement);
      if (m.find()) {
        (m.group(1).startsWith("DROP") ? dropped : created).add(m.group(2));
      }
    }
    assertTrue(created.containsAll(List.of("sp_node_id", "sp_member_pair")), created.toString());
    Set<String> present = new TreeSet<>();
    EmbeddedNeo4j neo4j = EmbeddedNeo4j.shared();
    for (String show : List.of("SHOW CONSTRAINTS YIELD name", "SHOW INDEXES YIELD name")) {
      neo4j.query(show, Map.of()).forEach(row -> present.add((String) row.get("name")));
    }
    assertTrue(present.containsAll(created), "missing: " + minus(created, present));
    assertEquals(Set.of(), intersection(dropped, present));
  }

  private static Set<String> minus(Set<String> a, Set<String> b) {
    Set<String> out = new TreeSet<>(a);
    out.removeAll(b);
    return out;
  }

  private static Set<String> intersection(Set<String> a, Set<String> b) {
    Set<String> out = new TreeSet<>(a);
    out.retainAll(b);
    return out;
  }
}
