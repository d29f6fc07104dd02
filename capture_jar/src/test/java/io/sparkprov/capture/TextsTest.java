package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Texts against sparkprov.limits.truncate: the cases both suites read (truncation-cases.json). */
class TextsTest {
  @Test
  void truncatesAsPythonDoesByteForByte() throws IOException {
    try (InputStream in = TextsTest.class.getResourceAsStream("/truncation-cases.json")) {
      JsonNode cases = new ObjectMapper().readTree(in).get("cases");
      assertTrue(cases.size() >= 5);
      for (JsonNode c : cases) {
        String value = c.get("value").asText();
        int limit = c.get("limit").asInt();
        String expected = c.get("expected").asText();
        assertEquals(expected, Texts.truncate(value, limit), c.get("name").asText());
        byte[] bytes = Texts.truncate(value.getBytes(StandardCharsets.UTF_8), limit);
        assertEquals(expected, new String(bytes, StandardCharsets.UTF_8), c.get("name").asText());
        assertTrue(bytes.length <= limit, c.get("name").asText());
      }
    }
  }

  @Test
  void aTextThatFitsIsTheSameObject() {
    byte[] short_ = "abc".getBytes(StandardCharsets.UTF_8);
    assertSame(short_, Texts.truncate(short_, 64));
    String text = "abc";
    assertSame(text, Texts.truncate(text, 64));
  }

  @Test
  void aLargeValueKeepsItsSizeInTheMark() {
    String kept = Texts.truncate("v".repeat(100_000), 65_536);
    assertEquals(65_536, kept.getBytes(StandardCharsets.UTF_8).length);
    assertTrue(kept.endsWith("…[truncated: 100000 bytes]"), kept.substring(kept.length() - 40));
  }
}
