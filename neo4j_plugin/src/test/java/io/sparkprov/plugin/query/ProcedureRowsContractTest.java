package io.sparkprov.plugin.query;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkprov.plugin.ids.Indexing;
import io.sparkprov.plugin.ids.RefinementTooLarge;
import io.sparkprov.plugin.write.Ingest;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.neo4j.procedure.Procedure;

/**
 * The procedures' result rows against procedure-rows.json, the example rows the Python suite
 * checks its TypedDicts (sparkprov/procedures.py) and decoders against: every public field of a
 * procedure's output class is a key of its example row with a value of the field's kind, and no
 * key is missing a field. The maps nested in rows (a node view, a touched aggregate) are checked
 * the same way against the code that builds them.
 */
class ProcedureRowsContractTest {
  private static final List<Class<?>> PROCEDURES =
      List.of(Ingest.class, Indexing.class, Traces.class, Subgraphs.class, Deletions.class);

  private static JsonNode fixture() throws Exception {
    try (InputStream in =
        ProcedureRowsContractTest.class.getResourceAsStream("/procedure-rows.json")) {
      assertNotNull(in, "procedure-rows.json is on the test classpath");
      return new ObjectMapper().readTree(in);
    }
  }

  @Test
  void theIndexCallsRefusalIsTheOneIngestRecognises() throws Exception {
    assertEquals(
        fixture().get("errors").get("index_call_too_large").asText(), RefinementTooLarge.MARK);
  }

  @Test
  void everyProcedureRowHasTheFieldsOfItsExample() throws Exception {
    JsonNode procedures = fixture().get("procedures");
    Map<String, Class<?>> outputs = outputClasses();
    assertEquals(new TreeSet<>(outputs.keySet()), names(procedures));
    for (Map.Entry<String, Class<?>> e : outputs.entrySet()) {
      JsonNode example = procedures.get(e.getKey());
      Map<String, Field> fields = publicFields(e.getValue());
      assertEquals(names(example), new TreeSet<>(fields.keySet()), e.getKey());
      fields.forEach(
          (name, field) ->
              assertTrue(
                  sameKind(field.getGenericType(), example.get(name)),
                  e.getKey() + "." + name + " is " + field.getGenericType() + ", example "
                      + example.get(name)));
    }
  }

  @Test
  void nestedMapsHaveTheKeysOfTheirExamples() throws Exception {
    JsonNode maps = fixture().get("maps");
    NodeView node =
        new NodeView(12, "run-1", "TIMES", "·", "Orders", Map.of("city", "Oslo"), "", 7L, null);
    assertEquals(names(maps.get("node")), new TreeSet<>(node.asMap().keySet()));
    Map<String, Object> view = Map.of("label", "SUM", "value", "10");
    Map<String, Object> aggregate = Deletions.touchedRow(9, view, List.of("4", "6"));
    assertEquals(names(maps.get("aggregate")), new TreeSet<>(aggregate.keySet()));
  }

  /** Procedure name -> the class of the rows its Stream yields. */
  private static Map<String, Class<?>> outputClasses() {
    Map<String, Class<?>> out = new TreeMap<>();
    for (Class<?> c : PROCEDURES) {
      for (Method m : c.getMethods()) {
        Procedure p = m.getAnnotation(Procedure.class);
        if (p != null) {
          Type row = ((ParameterizedType) m.getGenericReturnType()).getActualTypeArguments()[0];
          out.put(p.name(), (Class<?>) row);
        }
      }
    }
    return out;
  }

  private static Map<String, Field> publicFields(Class<?> c) {
    Map<String, Field> out = new TreeMap<>();
    for (Field f : c.getFields()) {
      if (!Modifier.isStatic(f.getModifiers())) {
        out.put(f.getName(), f);
      }
    }
    return out;
  }

  private static TreeSet<String> names(JsonNode object) {
    TreeSet<String> out = new TreeSet<>();
    object.fieldNames().forEachRemaining(out::add);
    return out;
  }

  /** Whether an example value is of the field's kind (null stands for any reference type). */
  private static boolean sameKind(Type type, JsonNode value) {
    if (value.isNull()) {
      return !(type instanceof Class<?> c && c.isPrimitive());
    }
    if (type == long.class || type == Long.class) {
      return value.isIntegralNumber();
    }
    if (type == boolean.class || type == Boolean.class) {
      return value.isBoolean();
    }
    if (type == String.class) {
      return value.isTextual();
    }
    if (type instanceof ParameterizedType p && p.getRawType() == List.class) {
      Type element = p.getActualTypeArguments()[0];
      for (JsonNode v : value) {
        boolean map = element instanceof ParameterizedType e && e.getRawType() == Map.class;
        if (!(map ? v.isTextual() : sameKind(element, v))) {
          return false; // a nested map is named by its key in `maps`
        }
      }
      return value.isArray();
    }
    return false;
  }
}
