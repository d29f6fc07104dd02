package io.sparkprov.plugin.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * The derived ids are sparkprov/derived.py's: the expected values below were computed by it
 * ({@code salt_of(*parts)} as a signed 64-bit int, {@code derive}).
 */
class DerivedIdsTest {
  @Test
  void saltsArePythonsSaltOf() {
    assertEquals(-7010619786069678358L, DerivedIds.salt("group#0", "member"));
    assertEquals(2255377948281031204L, DerivedIds.salt("group#0", 0, "tensor"));
    assertEquals(3790325550380851480L, DerivedIds.salt("g#0", 1, "aggregate"));
    assertEquals(-265129319031867184L, DerivedIds.salt("people/avg#0", 0, "value"));
  }

  @Test
  void quotesAndEscapesFollowPythonsRepr() {
    assertEquals("(\"it's\", 2, 'value')", DerivedIds.pythonRepr("it's", 2, "value"));
    assertEquals(4276417433271088547L, DerivedIds.salt("it's", 2, "value"));
    assertEquals(-1904595316250136923L, DerivedIds.salt("a\"b'c\\\n\u0001é\u2028", 0, "tensor"));
  }

  @Test
  void deriveIsPythonsAndUnderiveInvertsIt() {
    long tensor = DerivedIds.salt("g#0", 0, "tensor");
    assertEquals(-7444790305219244999L, DerivedIds.derive(12345L, tensor));
    long salt = DerivedIds.salt("g#0", "member");
    assertEquals(2954933299988010938L, DerivedIds.derive(-7L, salt));
    for (long id : new long[] {0L, 1L, -1L, Long.MAX_VALUE, Long.MIN_VALUE, 123456789012345L}) {
      assertEquals(id, DerivedIds.underive(DerivedIds.derive(id, salt), salt));
    }
  }

  @Test
  void blake2bOfLongMessagesSpansBlocks() {
    // hashlib.blake2b(b"x" * n, digest_size=8).hexdigest()
    assertEquals("12b539c1cad94615", hex(Blake2b.digest8("x".repeat(300).getBytes())));
    assertEquals("901ce374e8e12402", hex(Blake2b.digest8("x".repeat(128).getBytes())));
  }

  private static String hex(byte[] digest) {
    StringBuilder out = new StringBuilder();
    for (byte b : digest) {
      out.append(String.format("%02x", b));
    }
    return out.toString();
  }
}
