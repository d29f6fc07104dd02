package io.sparkprov.capture;

import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;

/**
 * A filter directly over a source's capture point runs before it: {@code Filter(cond,
 * Filter(sourceTap, child))} becomes {@code Filter(sourceTap, Filter(cond, child))}, so the
 * source's tap sees, copies and sends only the rows the filter keeps, and Spark pushes the
 * filter into the scan (parquet's row-group skipping) as it does without capture. A source row
 * the filter drops reaches no output: it is not stored (../shared/MODEL.md section 6), and a
 * trace that asks for it by its file and row is told it reaches nothing (docs/capture.md,
 * "Source rows a filter drops").
 *
 * <p>Only deterministic conditions without subqueries or taps move, and only below a SOURCE
 * tap whose rows are positioned by file ({@link SourcePosition}: parquet's file and row index):
 * the row's id does not depend on which rows pass, so a kept row's lineage is the same, and a
 * dropped row's id still names its file row. A source positioned by partition and offset keeps
 * every row (its dropped rows' ids could not be told from unknown ones).
 * Installed with {@link ValuesPruning}, which counts the columns such a filter reads as read.
 * The session's conf {@value #CONF} = false turns it off (every row the scan reads captured).
 */
public final class SourceFiltersFirst extends Rule<LogicalPlan> {
  public static final SourceFiltersFirst INSTANCE = new SourceFiltersFirst();
  /** The Spark conf that turns the rule off ("false"): every source row the scan reads is
   * then captured, the ones a filter drops too. */
  public static final String CONF = "spark.sparkprov.sourceFiltersFirst";

  private SourceFiltersFirst() {}

  /** Adds the rule to {@code experimental}'s optimizations, once. */
  public static void install(ExperimentalMethods experimental) {
    ExtraOptimizations.add(experimental, INSTANCE);
  }

  @Override
  public String ruleName() {
    return "io.sparkprov.capture.SourceFiltersFirst";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!ExtraOptimizations.enabled(CONF)) {
      return plan;
    }
    // subquery plans too (a scalar subquery over a source: TPC-H q15's revenue view)
    return plan.transformDownWithSubqueries(new scala.runtime.AbstractPartialFunction<>() {
      @Override
      public boolean isDefinedAt(LogicalPlan node) {
        return movable(node);
      }

      @Override
      public LogicalPlan apply(LogicalPlan node) {
        return movable(node) ? swapped((Filter) node) : node;
      }
    });
  }

  /** {@code Filter(cond, Filter(sourceTap, child))} with a condition that may run first. */
  static boolean movable(LogicalPlan node) {
    return node instanceof Filter outer
        && outer.child() instanceof Filter inner
        && isSourceTap(inner.condition())
        && mayRunFirst(outer.condition());
  }

  private static LogicalPlan swapped(Filter outer) {
    Filter tap = (Filter) outer.child();
    return new Filter(tap.condition(), new Filter(outer.condition(), tap.child()));
  }

  /** Whether {@code e} is a SOURCE tap alone (the whole condition of its filter) whose rows are
   * positioned by file: only such a dropped row's id is still told from an unknown one. */
  static boolean isSourceTap(Expression e) {
    return e instanceof TapExpression tap && tap.isSource() && tap.positionsByFile();
  }

  private static boolean mayRunFirst(Expression condition) {
    return condition.deterministic()
        && !SubqueryExpression.hasSubquery(condition)
        && !TapExpression.contains(condition, TapExpression.class);
  }
}
