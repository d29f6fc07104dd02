package io.sparkprov.capture;

import java.util.List;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * What the Python capture agent calls (capture_agent/jvm.py, through py4j). An instance, made by
 * reflection from whichever class loader holds the jar, so that py4j calls its methods on the
 * object rather than looking the class up by name.
 */
public final class Taps {
  /** The tap protocol this jar speaks; capture_agent/jvm.py refuses a jar of another. */
  public static final int PROTOCOL = 8;

  public Taps() {}

  public int protocol() {
    return PROTOCOL;
  }

  /**
   * The capture point for {@code planJson} (a TapPlan) as a boolean column over the columns
   * {@code inputs} (the plan's inputs, then its attributes): a {@link TapExpression}, fused into
   * whole-stage codegen. Since protocol 5 (before: one struct column).
   */
  public Column column(String planJson, Sink sink, Counts counts, Column[] inputs) {
    TapPlan plan = TapPlan.parse(planJson);
    if (inputs.length != plan.width()) {
      throw new IllegalArgumentException("tap " + plan.key() + " has " + plan.width()
          + " inputs and attributes, given " + inputs.length + " columns");
    }
    List<Expression> expressions = new java.util.ArrayList<>();
    for (Column input : inputs) {
      expressions.add(ExpressionUtils.expression(input));
    }
    return ExpressionUtils.column(new TapExpression(expressions, new Tap(plan, sink, counts)));
  }

  /**
   * A plan's expression moved onto the rebuilt attributes of its child ({@link Rebind}), as a
   * Column: plan capture (capture_agent/plan_capture.py). Since protocol 3.
   */
  public Column rebound(Expression expression, List<Expression> from, List<Expression> to) {
    return ExpressionUtils.column(Rebind.rebind(expression, from, to));
  }

  /**
   * A file source row's physical position ({@link SourcePosition}) from its
   * {@code _metadata.file_path} and {@code _metadata.row_index}, {@code files} being the source's
   * files sorted, joined by NUL (one py4j call however many files). Since protocol 6.
   */
  public Column sourcePosition(Column path, Column rowIndex, String files) {
    return ExpressionUtils.column(new SourcePosition(ExpressionUtils.expression(path),
        ExpressionUtils.expression(rowIndex), List.of(files.split("\0", -1))));
  }

  /**
   * A Dataset's input files, sorted (String's order: UTF-16 code units), joined by NUL: one
   * py4j call, where PySpark's {@code inputFiles()} makes one per file. Since protocol 6.
   */
  public String sortedInputFiles(Dataset<?> dataset) {
    String[] files = dataset.inputFiles();
    java.util.Arrays.sort(files);
    return String.join("\0", files);
  }

  /**
   * The facts capture_agent.plans.inspect_projection reads of a projection, in one call
   * ({@link PlanFacts#projection}). Since protocol 7.
   */
  public String projectionFacts(LogicalPlan before, LogicalPlan after, String ignoredPrefix) {
    return PlanFacts.projection(before, after, ignoredPrefix);
  }

  /**
   * Each column's analysed SQL over {@code df} and which call Python UDFs, in one call
   * ({@link PlanFacts#projectionSql}). Since protocol 7.
   */
  public String projectionSql(org.apache.spark.sql.classic.Dataset<Row> df, Column[] columns) {
    return PlanFacts.projectionSql(df, columns);
  }

  /**
   * {@code dataset}'s visible columns in order, then its id column {@code id}, the other hidden
   * columns (named from {@code hiddenPrefix}) left out: one projection of the plan's own
   * attributes (so names may repeat), where Python made up to five Datasets; {@code dataset}
   * itself when it is already so. Since protocol 7.
   */
  public org.apache.spark.sql.classic.Dataset<Row> visibleThenId(
      org.apache.spark.sql.classic.Dataset<Row> dataset, String id, String hiddenPrefix) {
    return PlanFacts.visibleThenId(dataset, id, hiddenPrefix);
  }

  /**
   * {@code head} (or nothing, when null) followed by the non-null columns of {@code c0..c7}:
   * Python builds a {@code Column[]} one call per eight columns, where py4j's array makes two
   * round trips per element. Since protocol 7.
   */
  public Column[] columns(Column[] head, Column c0, Column c1, Column c2, Column c3, Column c4,
      Column c5, Column c6, Column c7) {
    List<Column> out = new java.util.ArrayList<>();
    if (head != null) {
      out.addAll(List.of(head));
    }
    for (Column c : new Column[] {c0, c1, c2, c3, c4, c5, c6, c7}) {
      if (c != null) {
        out.add(c);
      }
    }
    return out.toArray(new Column[0]);
  }

  /**
   * Installs {@link ValuesPruning} in {@code session}'s optimizer (once): taps of relations that
   * keep the values the query reads keep no others. Since protocol 8.
   */
  public void pruneReadValues(org.apache.spark.sql.classic.SparkSession session) {
    ValuesPruning.install(session.experimental());
  }

  /** A node id: {@code xxhash64(lit(run), lit(key), columns...)}, computed cheaper. */
  public Column nodeId(String run, String key, Column[] columns) {
    return NodeIds.column(run, key, columns);
  }

  public KafkaSink kafka(String topic, Map<String, String> settings, long timeoutMs) {
    return new KafkaSink(topic, settings, timeoutMs);
  }

  /** A sink for profiles: taps stop after {@code step} (a DiscardSink.Step's name). */
  public DiscardSink discard(String step) {
    return new DiscardSink(step);
  }

  public MemorySink memory(SparkContext sc) {
    return new MemorySink(sc);
  }

  public Counts counts(SparkContext sc) {
    return new Counts(sc);
  }

  /**
   * A UDF of this jar that returns the tap protocol: capture_agent/jvm.py runs it in a one-row job
   * at session start, which fails (a ClassNotFoundException inside) when the executors cannot
   * load the jar.
   */
  public UserDefinedFunction probe() {
    return functions.udf(new Probe(), DataTypes.IntegerType).asNondeterministic()
        .withName("sparkprov_probe");
  }

  /** Loaded on an executor by {@link #probe}. */
  static final class Probe implements UDF1<Long, Integer> {
    @Override
    public Integer call(Long x) {
      return PROTOCOL;
    }
  }
}
