package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.optimizer.ColumnPruning;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The values policy "read" in the optimized plan: a capture point whose relation keeps the
 * attributes the query reads ({@link TapPlan#valuesRead}) keeps, of its attribute values, only
 * the columns some operator above it reads or the query returns. The others leave the tap, and
 * Spark's column pruning, run again, leaves them out of the scan: a tap no longer makes a
 * query read a column it does not use (a wide table's other columns, with their decoding).
 *
 * <p>Which columns are read is computed top-down: a node's child must give what the node's
 * own expressions reference and what the node's parent needs of it (attribute ids are unique
 * in a plan). A tap's own attribute values are not references of this kind. A subquery's plan
 * is pruned as a plan of its own, keeping what it returns ({@link
 * ExtraOptimizations#inSubqueries}). Installed in the session's optimizer ({@link
 * #install}); a plan without such a tap is returned as it is.
 */
public final class ValuesPruning extends Rule<LogicalPlan> {
  public static final ValuesPruning INSTANCE = new ValuesPruning();

  private ValuesPruning() {}

  /** Adds the rule to {@code experimental}'s optimizations, once. */
  public static void install(ExperimentalMethods experimental) {
    ExtraOptimizations.add(experimental, INSTANCE);
  }

  @Override
  public String ruleName() {
    return "io.sparkprov.capture.ValuesPruning";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return pruned(ExtraOptimizations.inSubqueries(plan, ValuesPruning::pruned));
  }

  /** {@code plan} (a query's or a subquery's) with its own taps' unread values dropped; the
   * subqueries in it as they are. */
  private static LogicalPlan pruned(LogicalPlan plan) {
    if (!hasPrunableTap(plan)) {
      return plan;
    }
    LogicalPlan pruned = prune(plan, ids(plan.outputSet()));
    return pruned == plan ? plan : ColumnPruning.apply(pruned);
  }

  /** {@code node} with its taps' unread values dropped; {@code required}: what its parent reads. */
  private static LogicalPlan prune(LogicalPlan node, Set<Long> required) {
    Set<Long> below = new HashSet<>(required);
    LogicalPlan current = node;
    if (node instanceof Filter filter && hasPrunableTap(filter.condition())) {
      Set<Long> read = new HashSet<>(required);
      references(filter.condition(), read);
      filtersRunFirst(filter.child(), read);
      Expression condition = narrow(filter.condition(), read);
      references(condition, below);
      if (condition != filter.condition()) {
        current = new Filter(condition, filter.child());
      }
    } else if (node instanceof Project project) {
      // Only the columns the parent reads: the capture extension's projection over a file
      // source's capture point lists every column of the source.
      for (NamedExpression e : CollectionConverters.asJava(project.projectList())) {
        if (required.contains(e.exprId().id())) {
          references((Expression) e, below);
        }
      }
    } else {
      below.addAll(ids(node.references()));
    }
    List<LogicalPlan> children = CollectionConverters.asJava(current.children());
    List<LogicalPlan> pruned = new ArrayList<>(children.size());
    boolean changed = false;
    for (LogicalPlan child : children) {
      LogicalPlan p = prune(child, current instanceof Union ? byPosition(current, child, below)
          : below);
      changed |= p != child;
      pruned.add(p);
    }
    return changed ? current.withNewChildren(CollectionConverters.asScala(pruned).toList())
        : current;
  }

  /**
   * Adds what the filters directly below a tap read ({@link SourceFiltersFirst} moves a
   * source's filters there): their columns are read by the query, as they were above it.
   */
  private static void filtersRunFirst(LogicalPlan child, Set<Long> read) {
    LogicalPlan node = child;
    while (node instanceof Filter below && !hasPrunableTap(below.condition())) {
      read.addAll(ids(below.condition().references()));
      node = below.child();
    }
  }

  /** {@code e} with each prunable tap keeping only the values whose attribute is {@code read}. */
  private static Expression narrow(Expression e, Set<Long> read) {
    if (e instanceof TapExpression tap && tap.keepsReadValues()) {
      boolean[] keep = new boolean[tap.attributeCount()];
      for (int i = 0; i < keep.length; i++) {
        keep[i] = !(tap.attributeValue(i) instanceof Attribute a) || read.contains(a.exprId().id());
      }
      return tap.keeping(keep);
    }
    if (!hasPrunableTap(e)) {
      return e;
    }
    List<Expression> children = CollectionConverters.asJava(e.children());
    List<Expression> narrowed = new ArrayList<>(children.size());
    boolean changed = false;
    for (Expression child : children) {
      Expression n = narrow(child, read);
      changed |= n != child;
      narrowed.add(n);
    }
    return changed ? e.withNewChildren(CollectionConverters.asScala(narrowed).toList()) : e;
  }

  /** What {@code child} of a union gives of {@code required}: a union's output columns are its
   * children's by position, under the first child's ids. */
  static Set<Long> byPosition(LogicalPlan union, LogicalPlan child, Set<Long> required) {
    Set<Long> out = new HashSet<>(required);
    List<Attribute> outputs = CollectionConverters.asJava(union.output());
    List<Attribute> inputs = CollectionConverters.asJava(child.output());
    for (int i = 0; i < outputs.size() && i < inputs.size(); i++) {
      if (required.contains(outputs.get(i).exprId().id())) {
        out.add(inputs.get(i).exprId().id());
      }
    }
    return out;
  }

  /** Adds what {@code e} reads to {@code out}, a prunable tap's plain attribute values apart. */
  private static void references(Expression e, Set<Long> out) {
    if (e instanceof TapExpression tap && tap.keepsReadValues()) {
      for (Expression input : tap.idInputs()) {
        out.addAll(ids(input.references()));
      }
      for (int i = 0; i < tap.attributeCount(); i++) {
        if (!(tap.attributeValue(i) instanceof Attribute)) {
          out.addAll(ids(tap.attributeValue(i).references()));
        }
      }
    } else if (hasPrunableTap(e)) {
      for (Expression child : CollectionConverters.asJava(e.children())) {
        references(child, out);
      }
    } else {
      out.addAll(ids(e.references()));
    }
  }

  private static boolean hasPrunableTap(LogicalPlan plan) {
    for (Expression e : CollectionConverters.asJava(plan.expressions())) {
      if (hasPrunableTap(e)) {
        return true;
      }
    }
    for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
      if (hasPrunableTap(child)) {
        return true;
      }
    }
    return false;
  }

  private static boolean hasPrunableTap(Expression e) {
    if (e instanceof TapExpression tap) {
      return tap.keepsReadValues();
    }
    for (Expression child : CollectionConverters.asJava(e.children())) {
      if (hasPrunableTap(child)) {
        return true;
      }
    }
    return false;
  }

  /** The ids of {@code attributes}. */
  static Set<Long> ids(AttributeSet attributes) {
    Set<Long> ids = new HashSet<>();
    scala.collection.Iterator<Attribute> it = attributes.iterator();
    while (it.hasNext()) {
      ids.add(it.next().exprId().id());
    }
    return ids;
  }
}
