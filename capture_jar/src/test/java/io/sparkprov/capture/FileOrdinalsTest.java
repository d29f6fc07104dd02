package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/**
 * Positions of file rows: the spellings of a path, the bounds, the kept file. Both evaluation
 * paths inside Spark are checked by tests/unit/test_source_positions.py (Spark's runtime is not
 * on this module's test classpath).
 */
class FileOrdinalsTest {
  private static final List<String> FILES = List.of(
      "file:///data/orders/part-0.parquet", "file:///data/orders/part-1.parquet",
      "file:///data/orders/k%3Dv/part%202.parquet", "hdfs://nn:8020/data/part-3.parquet");

  private static long bits(FileOrdinals p, String path) {
    return p.applyAsLong(UTF8String.fromString(path));
  }

  @Test
  void theFilesOrdinalAboveTheRowIndexWhicheverWayThePathIsSpelled() {
    FileOrdinals p = new FileOrdinals(FILES);
    assertEquals(7L, FileOrdinals.position(bits(p, "file:/data/orders/part-0.parquet"), 7));
    assertEquals((1L << 33) | 5,
        FileOrdinals.position(bits(p, "file:///data/orders/part-1.parquet"), 5));
    assertEquals(2L << 33, bits(p, "file:/data/orders/k%3Dv/part%202.parquet"));
    assertEquals(3L << 33, bits(p, "hdfs://nn:8020/data/part-3.parquet"));
    assertEquals(1L << 33, p.applyAsLong("file:/data/orders/part-1.parquet"));
  }

  @Test
  void aFileNotListedOrARowPastTheBitsFailsNamingIt() {
    FileOrdinals p = new FileOrdinals(FILES);
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> bits(p, "file:/elsewhere/part-9.parquet"));
    assertTrue(e.getMessage().contains("file:/elsewhere/part-9.parquet"), e.getMessage());
    assertThrows(IllegalStateException.class, () -> FileOrdinals.position(0, 1L << 33));
    assertThrows(IllegalStateException.class, () -> FileOrdinals.position(0, -1));
    assertEquals((1L << 33) - 1, FileOrdinals.position(0, (1L << 33) - 1));
  }

  @Test
  void theLastFileKeptIsACopyNotTheScansBuffer() {
    FileOrdinals p = new FileOrdinals(FILES);
    byte[] bytes = "file:/data/orders/part-1.parquet".getBytes(StandardCharsets.UTF_8);
    UTF8String view = UTF8String.fromBytes(bytes);
    assertEquals(1L << 33, p.applyAsLong(view));
    byte[] other = "file:/data/orders/part-0.parquet".getBytes(StandardCharsets.UTF_8);
    System.arraycopy(other, 0, bytes, 0, bytes.length); // the scan reuses its buffer ...
    // ... and reads it through a new UTF8String (UnsafeRow, column vectors): compared by bytes
    assertEquals(0L, p.applyAsLong(UTF8String.fromBytes(bytes)));
  }

  @Test
  void theObjectAScanHandsForEveryRowOfAFileIsLookedUpOnce() {
    FileOrdinals p = new FileOrdinals(FILES);
    // A constant column vector hands one UTF8String per file, the same object for each row.
    UTF8String first = UTF8String.fromString("file:/data/orders/part-1.parquet");
    UTF8String second = UTF8String.fromString("file:/data/orders/part-0.parquet");
    for (int row = 0; row < 3; row++) {
      assertEquals(1L << 33, p.applyAsLong(first));
    }
    assertEquals(0L, p.applyAsLong(second));
    assertEquals(0L, p.applyAsLong(UTF8String.fromString("file:/data/orders/part-0.parquet")));
    assertEquals(1L << 33, p.applyAsLong(first));
  }
}
