package io.sparkprov.capture;

import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.util.CollectionAccumulator;

/**
 * The run's node and edge counts, {(tap, smallest row id): (nodes, edges)}, as the Python
 * session's counts accumulator: what each successful task's tap reports goes into a Spark
 * accumulator, and the driver merges the reports. The same key means the same rows, whatever
 * task computed them (a retry, a second job, a cartesian product's several reads): the larger
 * count wins. The reports are plain {@code Object[]} of JDK types: the driver deserializes task
 * results with a class loader that need not see this jar.
 */
public final class Counts implements Serializable {
  private final CollectionAccumulator<Object[]> reports;

  public Counts(SparkContext sc) {
    reports = sc.collectionAccumulator("sparkprov-counts");
  }

  /** What one task's tap adds. */
  void add(String tap, long minId, long nodes, long edges) {
    reports.add(new Object[] {tap, minId, nodes, edges});
  }

  /** {(tap, smallest row id) -> {nodes, edges}} over the completed tasks' reports. */
  public Map<String, long[]> value() {
    Map<String, long[]> totals = new HashMap<>();
    for (Object[] report : reports.value()) {
      long[] counts = {(Long) report[2], (Long) report[3]};
      totals.merge(report[0] + "\u0000" + report[1], counts,
          (a, b) -> new long[] {Math.max(a[0], b[0]), Math.max(a[1], b[1])});
    }
    return totals;
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
