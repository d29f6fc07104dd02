package io.sparkprov.capture;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.SparkContext;
import org.apache.spark.util.CollectionAccumulator;
import org.roaringbitmap.longlong.Roaring64NavigableMap;

/**
 * The run's node and edge counts, {(tap, smallest row id): (nodes, edges)}, as the Python
 * session's counts accumulator: what each successful task's tap reports goes into a Spark
 * accumulator, and the driver merges the reports. The same key means the same rows, whatever
 * task computed them (a retry, a second job, a cartesian product's several reads): the larger
 * count wins; a source tap's rows are counted as the union of their positions ({@link #addRows}).
 * The reports are plain {@code Object[]} of JDK types: the driver deserializes task results with a
 * class loader that need not see this jar.
 */
public final class Counts implements Serializable {
  private final CollectionAccumulator<Object[]> reports;
  // The driver's view of what source taps sent, built from the reports as they arrive
  // (sentWith): {tap: {attribute or "" for the row itself: positions}}. Not shipped to tasks.
  private transient Map<String, Map<String, Roaring64NavigableMap>> sent;
  private transient int reportsRead;

  public Counts(SparkContext sc) {
    reports = sc.collectionAccumulator("sparkprov-counts");
  }

  /** What one task's tap adds. */
  void add(String tap, long minId, long nodes, long edges) {
    reports.add(new Object[] {tap, minId, nodes, edges});
  }

  /**
   * What one task's source tap sent: the positions of its rows (one TOKEN node each, no edges),
   * serialized (a {@code byte[]}, a JDK type). A source's rows differ between the jobs that read
   * it when filters run before its tap ({@link SourceFiltersFirst}), so its nodes are counted as
   * the union of the positions every task sent.
   */
  void addRows(String tap, Roaring64NavigableMap positions, List<String> attributes) {
    reports.add(rowsReport(tap, positions, attributes));
  }

  /** A source tap's report: its name, its positions serialized, and the attributes whose values
   * it sent with each of them. */
  static Object[] rowsReport(String tap, Roaring64NavigableMap positions, List<String> attributes) {
    positions.runOptimize();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      positions.serialize(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new Object[] {tap, bytes.toByteArray(), attributes.toArray(String[]::new)};
  }

  /**
   * The positions source tap {@code tap} has sent, in tasks that succeeded, with the values of
   * every one of {@code attributes} (with the row alone if there are none): rows a later job of
   * the run need not send again ({@link SourceRowsOnce}). Read on the driver; each report is
   * read once, however often this is asked.
   */
  public synchronized Roaring64NavigableMap sentWith(String tap, List<String> attributes) {
    if (sent == null) {
      sent = new HashMap<>();
    }
    List<Object[]> all = reports.value();
    readSent(all.subList(reportsRead, all.size()), sent, MAX_SENT_BYTES);
    reportsRead = all.size();
    return sentWith(sent.getOrDefault(tap, Map.of()), attributes);
  }

  /** The driver's memory for one source tap's positions by attribute ({@link #sentWith}): past
   * it, the tap's later jobs send every row again, as without {@link SourceRowsOnce}. */
  static final long MAX_SENT_BYTES = 64L << 20;
  private static final Map<String, Roaring64NavigableMap> GAVE_UP = Map.of();

  /** Adds the source taps' {@code reports} to {@code sent}: {tap: {attribute, or "" for the row
   * itself: positions sent with it}}; a tap whose positions take more than {@code maxBytes} is
   * given up (none of its rows counts as sent). */
  static void readSent(
      List<Object[]> reports, Map<String, Map<String, Roaring64NavigableMap>> sent, long maxBytes) {
    for (Object[] report : reports) {
      if (report.length != 3 || !(report[1] instanceof byte[] serialized)) {
        continue;
      }
      String tap = (String) report[0];
      Map<String, Roaring64NavigableMap> byAttribute = sent.computeIfAbsent(tap, k -> new HashMap<>());
      if (byAttribute == GAVE_UP) {
        continue;
      }
      Roaring64NavigableMap rows = positions(serialized);
      byAttribute.computeIfAbsent("", k -> new Roaring64NavigableMap()).or(rows);
      for (String attribute : (String[]) report[2]) {
        byAttribute.computeIfAbsent(attribute, k -> new Roaring64NavigableMap()).or(rows);
      }
      long bytes = 0;
      for (Roaring64NavigableMap positions : byAttribute.values()) {
        bytes += positions.getLongSizeInBytes();
      }
      if (bytes > maxBytes) {
        sent.put(tap, GAVE_UP);
      }
    }
  }

  /** The positions of one tap's {@code byAttribute} sent with every one of {@code attributes}. */
  static Roaring64NavigableMap sentWith(
      Map<String, Roaring64NavigableMap> byAttribute, List<String> attributes) {
    Roaring64NavigableMap rows = copy(byAttribute.get(""));
    for (String attribute : attributes) {
      Roaring64NavigableMap with = byAttribute.get(Objects.requireNonNull(attribute));
      if (with == null) {
        return new Roaring64NavigableMap();
      }
      rows.and(with);
    }
    return rows;
  }

  private static Roaring64NavigableMap copy(Roaring64NavigableMap rows) {
    Roaring64NavigableMap out = new Roaring64NavigableMap();
    if (rows != null) {
      out.or(rows);
    }
    return out;
  }

  /** {(tap, smallest row id) -> {nodes, edges}} over the completed tasks' reports; a source
   * tap's rows as {(tap) -> {distinct positions, 0}}. */
  public Map<String, long[]> value() {
    return merged(reports.value());
  }

  /** {@link #value} of {@code reports}. */
  static Map<String, long[]> merged(List<Object[]> reports) {
    Map<String, long[]> totals = new HashMap<>();
    Map<String, Roaring64NavigableMap> sources = new HashMap<>();
    for (Object[] report : reports) {
      if (report[1] instanceof byte[] serialized) {
        sources.computeIfAbsent((String) report[0], k -> new Roaring64NavigableMap())
            .or(positions(serialized));
        continue;
      }
      long[] counts = {(Long) report[2], (Long) report[3]};
      totals.merge(report[0] + "\u0000" + report[1], counts,
          (a, b) -> new long[] {Math.max(a[0], b[0]), Math.max(a[1], b[1])});
    }
    sources.forEach((tap, rows) -> totals.put(tap + "\u0000rows", new long[] {
        rows.getLongCardinality(), 0}));
    return totals;
  }

  private static Roaring64NavigableMap positions(byte[] serialized) {
    Roaring64NavigableMap rows = new Roaring64NavigableMap();
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
      rows.deserialize(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return rows;
  }

  /** {nodes, edges} over every (tap, rows) the completed tasks reported. */
  public long[] totals() {
    long nodes = 0;
    long edges = 0;
    for (long[] v : value().values()) {
      nodes += v[0];
      edges += v[1];
    }
    return new long[] {nodes, edges};
  }
}
