package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.CreateNamedStruct;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GetStructField;
import org.apache.spark.sql.catalyst.expressions.KnownNotNull;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.FilterExec;
import org.apache.spark.sql.execution.ProjectExec;
import org.apache.spark.sql.execution.SparkPlan;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * A file source's {@code _metadata} fields read from the scan's own columns. Spark's file
 * source planning reads {@code file_path} and {@code row_index} as flat columns and rebuilds the
 * {@code _metadata} struct from them in a projection above the scan, so every read of
 * {@code _metadata.file_path} builds that struct for the row first: an array, a boxed row index
 * and a row object per source row, for each capture point that takes the row's position
 * ({@link SourcePosition}). This physical rule, a columnar rule run before the transitions and
 * the stages' generated code (with adaptive execution or without), passes the flat
 * columns up through the filters to the first projection above and reads the fields there from
 * them. The struct is still made for whatever else reads it; the plan's results are the same.
 *
 * <p>Only where the rows go from the struct's projection through filters alone into a
 * projection (which drops the flat columns again): nothing wider leaves the stage. Spark conf
 * {@value #CONF} = false turns it off.
 */
final class MetadataColumns extends Rule<SparkPlan> {
  static final MetadataColumns INSTANCE = new MetadataColumns();

  /** The rule as Spark's columnar rules run it: before the transitions and the stages' code. */
  static final ColumnarRule COLUMNAR = new ColumnarRule() {
    @Override
    public Rule<SparkPlan> preColumnarTransitions() {
      return INSTANCE;
    }
  };

  /** The switch (for A/B measurements; on by default). */
  public static final String CONF = "spark.sparkprov.metadataColumns";

  private MetadataColumns() {}

  @Override
  public SparkPlan apply(SparkPlan plan) {
    if (!ExtraOptimizations.enabled(CONF)) {
      return plan;
    }
    return (SparkPlan) plan.transformUp(new AbstractPartialFunction<SparkPlan, SparkPlan>() {
      @Override
      public boolean isDefinedAt(SparkPlan p) {
        return p instanceof ProjectExec;
      }

      @Override
      public SparkPlan apply(SparkPlan p) {
        SparkPlan done = rewrite((ProjectExec) p);
        return done == null ? p : done;
      }
    });
  }

  /** {@code top} reading the fields of a struct made below it from the flat columns; null when
   * the shape is not one this rule rewrites, or nothing reads a field. */
  private static SparkPlan rewrite(ProjectExec top) {
    List<FilterExec> filters = new ArrayList<>();
    SparkPlan below = top.child();
    while (below instanceof FilterExec f) {
      filters.add(f);
      below = f.child();
    }
    if (!(below instanceof ProjectExec struct)) {
      return null;
    }
    Map<Long, List<Attribute>> fields = structs(struct);
    if (fields.isEmpty()) {
      return null;
    }
    List<Expression> conditions = new ArrayList<>();
    boolean changed = false;
    for (FilterExec f : filters) {
      Expression condition = read(f.condition(), fields);
      changed |= condition != f.condition();
      conditions.add(condition);
    }
    List<NamedExpression> projected = new ArrayList<>();
    for (NamedExpression e : CollectionConverters.asJava(top.projectList())) {
      Expression read = read((Expression) e, fields);
      changed |= read != e;
      projected.add((NamedExpression) read);
    }
    if (!changed) {
      return null; // nothing above reads a field
    }
    List<NamedExpression> widened =
        new ArrayList<>(CollectionConverters.asJava(struct.projectList()));
    java.util.Set<Long> listed = new java.util.HashSet<>();
    for (NamedExpression e : widened) {
      listed.add(e.exprId().id());
    }
    for (List<Attribute> columns : fields.values()) {
      for (Attribute a : columns) {
        if (listed.add(a.exprId().id())) {
          widened.add(a);
        }
      }
    }
    SparkPlan child = new ProjectExec(CollectionConverters.asScala(widened).toList(),
        struct.child());
    for (int i = filters.size() - 1; i >= 0; i--) {
      child = new FilterExec(conditions.get(i), child);
    }
    return new ProjectExec(CollectionConverters.asScala(projected).toList(), child);
  }

  /** The structs {@code project} makes of flat columns of its child: {struct's expression id:
   * the column of each field}. */
  private static Map<Long, List<Attribute>> structs(ProjectExec project) {
    Map<Long, List<Attribute>> found = new HashMap<>();
    java.util.Set<Long> input = new java.util.HashSet<>();
    for (Attribute a : CollectionConverters.asJava(project.child().output())) {
      input.add(a.exprId().id());
    }
    for (NamedExpression e : CollectionConverters.asJava(project.projectList())) {
      if (!(e instanceof Alias alias)) {
        continue;
      }
      Expression made = alias.child();
      if (made instanceof KnownNotNull k) {
        made = k.child();
      }
      if (!(made instanceof CreateNamedStruct create)) {
        continue;
      }
      List<Attribute> columns = new ArrayList<>();
      for (Expression v : CollectionConverters.asJava(create.valExprs())) {
        if (!(v instanceof Attribute a) || !input.contains(a.exprId().id())) {
          columns = null;
          break;
        }
        columns.add(a);
      }
      if (columns != null) {
        found.put(alias.exprId().id(), columns);
      }
    }
    return found;
  }

  /** The flat column a field read {@code e} reads, or null. */
  private static Attribute field(Expression e, Map<Long, List<Attribute>> fields) {
    if (e instanceof GetStructField g && g.child() instanceof Attribute a) {
      List<Attribute> columns = fields.get(a.exprId().id());
      if (columns != null && g.ordinal() < columns.size()) {
        return columns.get(g.ordinal());
      }
    }
    return null;
  }

  /** {@code e} with its field reads on the flat columns; the same object when it has none
   * (Catalyst's transforms keep a node no rule changed). */
  private static Expression read(Expression e, Map<Long, List<Attribute>> fields) {
    return e.transformUp(new AbstractPartialFunction<Expression, Expression>() {
      @Override
      public boolean isDefinedAt(Expression x) {
        return field(x, fields) != null;
      }

      @Override
      public Expression apply(Expression x) {
        return field(x, fields);
      }
    });
  }
}
