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
  public static final int PROTOCOL = 11;

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
   * The kind of the first subquery expression in {@code expression} that is not one of the
   * scalar subqueries among {@code joined} (plan capture joins those to the rebuilt child), or
   * null when there is none: one py4j call where Python walked the expression. Since protocol 9.
   */
  public String straySubquery(Expression expression, List<Expression> joined) {
    return Rebind.straySubquery(expression, joined);
  }

  /**
   * The attributes of {@code dataset}'s analyzed output whose names do not start with
   * {@code hiddenPrefix}, in order: plan capture's rebuilt attributes in one call. Since
   * protocol 9.
   */
  public List<Expression> visibleAttributes(
      org.apache.spark.sql.classic.Dataset<Row> dataset, String hiddenPrefix) {
    return PlanFacts.visibleAttributes(dataset, hiddenPrefix);
  }

  /** The names {@code analyzed}'s leaves were read through ({@link PlanNames}). Since protocol 9. */
  public PlanNames planNames(LogicalPlan analyzed) {
    return new PlanNames(analyzed);
  }

  /** See {@link PlanNames#scalarSubqueries}. Since protocol 9. */
  public List<Expression> scalarSubqueries(List<Expression> expressions) {
    return PlanNames.scalarSubqueries(expressions);
  }

  /** {@code plan}'s output attributes as a java.util.List, in one call. Since protocol 9. */
  public List<Expression> output(LogicalPlan plan) {
    return PlanNames.output(plan);
  }

  /**
   * {@code head} (or an empty list, when null) followed by the first {@code count} of
   * {@code o0..o7}: Python's capture_agent.jvm.JvmList made one call per eight elements. Since
   * protocol 9.
   */
  public List<Object> listOf(List<Object> head, Object o0, Object o1, Object o2, Object o3,
      Object o4, Object o5, Object o6, Object o7, int count) {
    List<Object> out = head == null ? new java.util.ArrayList<>() : head;
    Object[] given = {o0, o1, o2, o3, o4, o5, o6, o7};
    for (int i = 0; i < count; i++) {
      out.add(given[i]);
    }
    return out;
  }

  /** {@code list}'s elements {@code from} (inclusive) to {@code to}, copied. Since protocol 9. */
  public List<Object> slice(List<Object> list, int from, int to) {
    return new java.util.ArrayList<>(list.subList(from, to));
  }

  /** {@code left}'s elements, then {@code right}'s. Since protocol 9. */
  public List<Object> concat(List<Object> left, List<Object> right) {
    List<Object> out = new java.util.ArrayList<>(left);
    out.addAll(right);
    return out;
  }

  /**
   * {@code df.select} of {@code columns} and of the columns named in {@code names} (joined by
   * NUL), in the order {@code layout} gives ('c' the next column, 'n' the next name, as
   * {@code functions.col} reads it): PySpark's select makes a py4j call or two per name and per
   * element of the list it hands over. Since protocol 9.
   */
  public org.apache.spark.sql.classic.Dataset<Row> select(
      org.apache.spark.sql.classic.Dataset<Row> df, Column[] columns, String names,
      String layout) {
    String[] named = layout.indexOf('n') < 0 ? new String[0] : names.split("\0", -1);
    long wanted = layout.chars().filter(ch -> ch == 'c').count();
    if (wanted != columns.length || layout.length() - wanted != named.length) {
      throw new IllegalArgumentException("select's layout " + layout + " does not match "
          + columns.length + " columns and " + named.length + " names");
    }
    Column[] out = new Column[layout.length()];
    int c = 0;
    int n = 0;
    for (int i = 0; i < out.length; i++) {
      out[i] = layout.charAt(i) == 'c' ? columns[c++] : functions.col(named[n++]);
    }
    return df.select(out);
  }

  /** The column named {@code name}, as {@code functions.col} reads it. Since protocol 9. */
  public Column col(String name) {
    return functions.col(name);
  }

  /**
   * The position in {@code attributes} of the attribute with {@code attribute}'s expression id,
   * or -1. Since protocol 9.
   */
  public int indexOfAttribute(List<Expression> attributes, Expression attribute) {
    if (!(attribute instanceof org.apache.spark.sql.catalyst.expressions.Attribute a)) {
      return -1;
    }
    for (int i = 0; i < attributes.size(); i++) {
      if (attributes.get(i) instanceof org.apache.spark.sql.catalyst.expressions.Attribute b
          && b.exprId().equals(a.exprId())) {
        return i;
      }
    }
    return -1;
  }

  /** {@code o}'s class's simple name, in one py4j call (two through getClass). Since protocol 9. */
  public String kind(Object o) {
    return o.getClass().getSimpleName();
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
   * Installs capture's optimizer rules in {@code session} (once each): {@link ValuesPruning}
   * (taps of relations that keep the values the query reads keep no others) and {@link
   * SourceFiltersFirst} (a filter over a source runs before its tap). Since protocol 10.
   */
  public void installRules(org.apache.spark.sql.classic.SparkSession session) {
    ValuesPruning.install(session.experimental());
    SourceFiltersFirst.install(session.experimental());
    SourceRowsOnce.install(session.experimental());
    SourceJoinsFirst.install(session.experimental());
  }

  /** A source's TOKEN id mask, {@code xxhash64(lit(run), lit(key))}: a row's id is its position
   * XOR the mask. Since protocol 10. */
  public long tokenMask(String run, String key) {
    return NodeIds.seed(run, key);
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
