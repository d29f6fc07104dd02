package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.roaringbitmap.longlong.Roaring64NavigableMap;

class CountsTest {
  private static Object[] rows(String tap, long... positions) {
    return rows(tap, List.of(), positions);
  }

  private static Object[] rows(String tap, List<String> attributes, long... positions) {
    return Counts.rowsReport(tap, Roaring64NavigableMap.bitmapOf(positions), attributes);
  }

  private static long[] sentWith(List<Object[]> reports, String tap, String... attributes) {
    Map<String, Map<String, Roaring64NavigableMap>> sent = new HashMap<>();
    Counts.readSent(reports, sent, Counts.MAX_SENT_BYTES);
    return Counts.sentWith(sent.getOrDefault(tap, Map.of()), List.of(attributes)).toArray();
  }

  @Test
  void aTapWhosePositionsOutgrowTheBoundCountsNoRowAsSent() {
    Map<String, Map<String, Roaring64NavigableMap>> sent = new HashMap<>();
    long[] many = new long[10_000];
    for (int i = 0; i < many.length; i++) {
      many[i] = 7L * i; // no runs: an array of positions
    }
    List<Object[]> reports = List.of(
        rows("source:T#1", List.of("a"), many), rows("source:U#2", List.of("a"), 1, 2));
    Counts.readSent(reports, sent, 4_096);
    assertArrayEquals(new long[] {}, Counts.sentWith(sent.get("source:T#1"), List.of()).toArray());
    assertArrayEquals(new long[] {1, 2},
        Counts.sentWith(sent.get("source:U#2"), List.of("a")).toArray());
    Counts.readSent(List.<Object[]>of(rows("source:T#1", List.of("a"), 3)), sent, 4_096); // given up
    assertArrayEquals(new long[] {}, Counts.sentWith(sent.get("source:T#1"), List.of()).toArray());
  }

  @Test
  void aRowCountsAsSentWithTheValuesEveryJobSentItWith() {
    List<Object[]> reports = List.of(
        rows("source:T#1", List.of("a", "b"), 1, 2, 3), // a job kept a and b of rows 1-3
        rows("source:T#1", List.of("a", "c"), 2, 3, 4), // another a and c of rows 2-4
        rows("source:U#2", List.of("a"), 9));
    assertArrayEquals(new long[] {1, 2, 3, 4}, sentWith(reports, "source:T#1"));
    assertArrayEquals(new long[] {1, 2, 3, 4}, sentWith(reports, "source:T#1", "a"));
    assertArrayEquals(new long[] {2, 3}, sentWith(reports, "source:T#1", "b", "c"));
    assertArrayEquals(new long[] {1, 2, 3}, sentWith(reports, "source:T#1", "a", "b"));
    assertArrayEquals(new long[] {}, sentWith(reports, "source:T#1", "a", "d"));
    assertArrayEquals(new long[] {}, sentWith(reports, "source:V#3"));
    // Counted once however it was sent: the union of the positions.
    assertArrayEquals(new long[] {4, 0}, Counts.merged(reports).get("source:T#1\u0000rows"));
  }

  @Test
  void aSourceTapCountsTheUnionOfThePositionsItsTasksSent() {
    long far = 5L << 33 | 7; // file 5, row 7: above 32 bits
    Map<String, long[]> merged = Counts.merged(List.of(
        rows("source:T#1", 0, 1, 2, 3), // one job read every row of the split
        rows("source:T#1", 1, 3, far), // another ran a filter first: a subset, and one more
        rows("source:U#2", 1)));
    assertArrayEquals(new long[] {5, 0}, merged.get("source:T#1\u0000rows"));
    assertArrayEquals(new long[] {1, 0}, merged.get("source:U#2\u0000rows"));
  }

  @Test
  void otherTapsKeepTheLargerCountPerTaskRows() {
    Map<String, long[]> merged = Counts.merged(List.of(
        new Object[] {"join#3", 10L, 4L, 8L},
        new Object[] {"join#3", 10L, 4L, 8L}, // the same rows again (a retry, a second job)
        new Object[] {"join#3", 20L, 1L, 2L},
        rows("source:T#1", 9)));
    assertEquals(3, merged.size());
    assertArrayEquals(new long[] {4, 8}, merged.get("join#3\u000010"));
    assertArrayEquals(new long[] {1, 2}, merged.get("join#3\u000020"));
  }
}
