package io.sparkprov.capture;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.PythonUDF;
import org.apache.spark.sql.catalyst.plans.logical.Generate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Window;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.ExpressionUtils;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What the capture agent reads from analyzed plans (capture_agent/plans.py and workflow_dag.py),
 * each question answered in one py4j call. Asked from Python, the same answers cost a round trip
 * per plan node, expression and attribute, and a Dataset analysed per projected column: on a
 * workflow's deep plans, tens of milliseconds per projection (bench/README.md, "The driver's
 * round trips"). The answers are JSON; Python keeps the reference semantics and its fallbacks.
 */
public final class PlanFacts {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> PROJECTING = Set.of("Project", "Generate", "Window");

  private PlanFacts() {}

  /**
   * How many nodes of each kind ({@code nodeName}) the plan holds, its subqueries' plans
   * included (the nodes {@code treeString} prints).
   */
  static Map<String, Integer> nodeCounts(TreeNode<?> plan) {
    Map<String, Integer> counts = new LinkedHashMap<>();
    count(plan, counts);
    return counts;
  }

  private static void count(TreeNode<?> node, Map<String, Integer> counts) {
    counts.merge(node.nodeName(), 1, Integer::sum);
    for (TreeNode<?> inner : CollectionConverters.asJava(node.innerChildren())) {
      count(inner, counts);
    }
    for (Object child : CollectionConverters.asJava(node.children())) {
      count((TreeNode<?>) child, counts);
    }
  }

  /** The nodes of each kind {@code after} holds more than {@code before} (kinds it adds only). */
  static Map<String, Integer> addedNodes(LogicalPlan before, LogicalPlan after) {
    Map<String, Integer> added = nodeCounts(after);
    nodeCounts(before).forEach((name, n) -> added.merge(name, -n, Integer::sum));
    added.values().removeIf(n -> n <= 0);
    return added;
  }

  /**
   * The names of the Python UDFs a projection calls: those in the expressions of the plan's top
   * node and of the Generate or Window nodes right below it (up to three levels), leaving out the
   * capture's own ({@code ignoredPrefix}).
   */
  static List<String> projectedUdfs(LogicalPlan plan, String ignoredPrefix) {
    List<String> names = new ArrayList<>();
    LogicalPlan node = plan;
    for (int level = 0; level < 3 && PROJECTING.contains(node.nodeName()); level++) {
      for (Expression expression : CollectionConverters.asJava(node.expressions())) {
        for (Expression e : subtree(expression)) {
          String name = udfName(e);
          if (name != null && !name.startsWith(ignoredPrefix)) {
            names.add(name);
          }
        }
      }
      List<LogicalPlan> children = CollectionConverters.asJava(node.children());
      if (children.size() != 1) {
        break;
      }
      node = children.get(0);
    }
    return names;
  }

  /**
   * capture_agent.plans.inspect_projection's facts of the projection {@code after} over
   * {@code before}: {"added": {node kind: count}, "udfs": [name, ...]}.
   */
  public static String projection(LogicalPlan before, LogicalPlan after, String ignoredPrefix) {
    Map<String, Object> facts = new LinkedHashMap<>();
    facts.put("added", addedNodes(before, after));
    facts.put("udfs", projectedUdfs(after, ignoredPrefix));
    return json(facts);
  }

  /**
   * capture_agent.workflow_dag.expression_sql of each column over {@code df}, and which columns
   * call a Python UDF: {"sql": [text, ...], "udf_columns": [index, ...]}. The columns are
   * analysed in one projection when that projects each of them as one expression over
   * {@code df}'s plan; otherwise (a generator, a window function, a column that expands into
   * several) each is analysed alone, as Python does.
   */
  public static String projectionSql(Dataset<Row> df, Column[] columns) {
    List<Expression> projected = together(df, columns);
    List<String> sql = new ArrayList<>();
    List<Integer> udfColumns = new ArrayList<>();
    for (int i = 0; i < columns.length; i++) {
      String text;
      Expression expression;
      if (projected != null) {
        expression = projected.get(i);
        text = expression.sql();
      } else {
        LogicalPlan plan = df.select(new Column[] {columns[i]}).queryExecution().analyzed();
        Project project = (Project) plan;
        NamedExpression named = project.projectList().head();
        expression = (Expression) named;
        text = aloneSql(project, named);
      }
      sql.add(text);
      if (subtree(expression).stream().anyMatch(e -> udfName(e) != null)) {
        udfColumns.add(i);
      }
    }
    Map<String, Object> facts = new LinkedHashMap<>();
    facts.put("sql", sql);
    facts.put("udf_columns", udfColumns);
    return json(facts);
  }

  /** See {@link Taps#visibleThenId}. */
  static Dataset<Row> visibleThenId(Dataset<Row> dataset, String id, String hiddenPrefix) {
    List<Attribute> output =
        CollectionConverters.asJava(dataset.queryExecution().analyzed().output());
    List<Attribute> wanted = new ArrayList<>();
    List<Attribute> ids = new ArrayList<>();
    for (Attribute a : output) {
      if (a.name().equals(id)) {
        ids.add(a);
      } else if (!a.name().startsWith(hiddenPrefix)) {
        wanted.add(a);
      }
    }
    if (ids.size() != 1) {
      throw new IllegalArgumentException(
          "expected one " + id + " column, found " + ids.size() + " among " + output);
    }
    wanted.add(ids.get(0));
    if (wanted.equals(output)) {
      return dataset;
    }
    Column[] columns = new Column[wanted.size()];
    for (int i = 0; i < columns.length; i++) {
      columns[i] = ExpressionUtils.column(wanted.get(i));
    }
    return dataset.select(columns);
  }

  /** See {@link Taps#visibleAttributes}. */
  static List<Expression> visibleAttributes(Dataset<Row> dataset, String hiddenPrefix) {
    List<Expression> visible = new ArrayList<>();
    for (Attribute a : CollectionConverters.asJava(dataset.queryExecution().analyzed().output())) {
      if (!a.name().startsWith(hiddenPrefix)) {
        visible.add(a);
      }
    }
    return visible;
  }

  /** The columns' analysed expressions from one projection, or null when it does not apply. */
  private static List<Expression> together(Dataset<Row> df, Column[] columns) {
    LogicalPlan plan;
    try {
      plan = df.select(columns).queryExecution().analyzed();
    } catch (RuntimeException e) { // analysed alone, each column raises its own error
      return null;
    }
    if (!(plan instanceof Project project) || project.child() instanceof Generate
        || project.child() instanceof Window || project.projectList().size() != columns.length) {
      return null;
    }
    List<Expression> expressions = new ArrayList<>();
    for (NamedExpression e : CollectionConverters.asJava(project.projectList())) {
      expressions.add((Expression) e);
    }
    return expressions;
  }

  /** One column's SQL from its own projection (a generator's or window's SQL from below it). */
  private static String aloneSql(Project plan, NamedExpression projected) {
    LogicalPlan below = plan.child();
    if (below instanceof Generate generate) {
      return ((Expression) generate.generator()).sql() + " AS " + projected.name();
    }
    if (below instanceof Window window) {
      List<String> texts = new ArrayList<>();
      for (NamedExpression e : CollectionConverters.asJava(window.windowExpressions())) {
        texts.add(((Expression) e).sql());
      }
      return String.join(" , ", texts);
    }
    return ((Expression) projected).sql();
  }

  /** The expression and all its descendants (children only, as capture_agent.plans walks). */
  static List<Expression> subtree(Expression root) {
    List<Expression> out = new ArrayList<>();
    preorder(root, out);
    return out;
  }

  private static void preorder(Expression e, List<Expression> out) {
    out.add(e);
    for (Expression child : CollectionConverters.asJava(e.children())) {
      preorder(child, out);
    }
  }

  /** A Python UDF's name, or null for any other expression. */
  private static String udfName(Expression e) {
    return e instanceof PythonUDF udf ? udf.name() : null;
  }

  private static String json(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
