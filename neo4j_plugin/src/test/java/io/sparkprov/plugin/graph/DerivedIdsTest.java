package io.sparkprov.plugin.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkprov.shared.Salts;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The derived ids are sparkprov/derived.py's: the vectors of derived-ids.json, which the Python
 * suite (tests/unit/test_derived_ids.py) and the capture jar's EmissionTest read too.
 */
class DerivedIdsTest {
  static JsonNode vectors() throws Exception {
    try (InputStream in = DerivedIdsTest.class.getResourceAsStream("/derived-ids.json")) {
      return new ObjectMapper().readTree(in);
    }
  }

  private static Object[] parts(JsonNode parts) {
    List<Object> out = new ArrayList<>();
    for (JsonNode part : parts) {
      out.add(part.isTextual() ? part.textValue() : (Object) part.longValue());
    }
    return out.toArray();
  }

  @Test
  void saltsAreTheVectors() throws Exception {
    JsonNode salts = vectors().get("salts");
    assertTrue(salts.size() > 30);
    for (JsonNode c : salts) {
      Object[] parts = parts(c.get("parts"));
      String name = c.get("parts").toString();
      assertArrayEquals(
          c.get("encoding").textValue().getBytes(StandardCharsets.UTF_8),
          Salts.encode(parts),
          name);
      long salt = DerivedIds.salt(parts);
      assertEquals(c.get("salt").longValue(), salt, name);
      assertEquals(c.get("hex").textValue(), String.format("%016x", salt), name);
    }
  }

  @Test
  void anIntColumnIsALongColumn() {
    // MemberEdge passes the column as an int; the vectors are read as longs.
    assertEquals(DerivedIds.salt("g#0", 12L, "value"), DerivedIds.salt("g#0", 12, "value"));
    assertNotEquals(DerivedIds.salt("g#0", 12, "value"), DerivedIds.salt("g#0", "12", "value"));
  }

  @Test
  void aSaltPartIsAStringOrAnInteger() {
    assertThrows(IllegalArgumentException.class, () -> DerivedIds.salt("g#0", 1.0, "value"));
    assertThrows(IllegalArgumentException.class, () -> DerivedIds.salt("g#0", true, "value"));
    assertThrows(IllegalArgumentException.class, () -> DerivedIds.salt("lone \ud800", "member"));
  }

  @Test
  void deriveIsTheVectorsAndUnderiveInvertsIt() throws Exception {
    for (JsonNode c : vectors().get("derive")) {
      long id = c.get("id").longValue();
      long salt = c.get("salt").longValue();
      assertEquals(c.get("derived").longValue(), DerivedIds.derive(id, salt), c.toString());
      assertEquals(id, DerivedIds.underive(DerivedIds.derive(id, salt), salt), c.toString());
    }
  }

  @Test
  void blake2bOfLongMessagesSpansBlocks() {
    // hashlib.blake2b(b"x" * n, digest_size=8).hexdigest()
    assertEquals("12b539c1cad94615", hex(Salts.digest8("x".repeat(300).getBytes())));
    assertEquals("901ce374e8e12402", hex(Salts.digest8("x".repeat(128).getBytes())));
  }

  private static String hex(byte[] digest) {
    StringBuilder out = new StringBuilder();
    for (byte b : digest) {
      out.append(String.format("%02x", b));
    }
    return out.toString();
  }
}
