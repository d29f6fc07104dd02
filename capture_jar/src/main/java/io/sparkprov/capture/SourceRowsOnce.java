package io.sparkprov.capture;

import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;

/**
 * A source row is sent once per run: a source's capture point, when the plan of a later job of
 * the run is optimized, learns which of its rows earlier jobs already sent with every value it
 * keeps ({@link Counts#sentWith}, from the successful tasks' reports), and lets those rows
 * through without sending them again. Their TOKEN nodes are stored already (each task's lineage
 * is acknowledged before the task succeeds), with the same ids (a row's id is its position), and
 * ingest gives a source row the union of the values its run sent (FlushWriter), so the stored
 * graph is the same; the run's counts are the union of the positions sent, so they are the same
 * too. A query that reads a source's rows again (the 22 TPC-H queries over the same tables, an
 * iterative job) stops resending their values (docs/capture.md, "Source rows sent once per run").
 *
 * <p>Only sources positioned by file ({@link SourcePosition}): their positions name the same
 * rows in every job. The skipped rows are read once, here, on the driver; a plan optimized before
 * an earlier job ended resends what that job sent, which ingest stores once. The session's conf
 * {@value #CONF} = false turns it off. Installed after {@link ValuesPruning}, so a tap looks up
 * the values it keeps after pruning; the lookup is done once per tap (the rule is idempotent).
 */
public final class SourceRowsOnce extends Rule<LogicalPlan> {
  public static final SourceRowsOnce INSTANCE = new SourceRowsOnce();
  /** The Spark conf that turns the rule off ("false"): every job sends its source rows. */
  public static final String CONF = "spark.sparkprov.sourceRowsOnce";

  private SourceRowsOnce() {}

  /** Adds the rule to {@code experimental}'s optimizations, once. */
  public static void install(ExperimentalMethods experimental) {
    ExtraOptimizations.add(experimental, INSTANCE);
  }

  @Override
  public String ruleName() {
    return "io.sparkprov.capture.SourceRowsOnce";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!ExtraOptimizations.enabled(CONF)) {
      return plan;
    }
    return plan.transformUp(new scala.runtime.AbstractPartialFunction<>() {
      @Override
      public boolean isDefinedAt(LogicalPlan node) {
        return looksUp(node);
      }

      @Override
      public LogicalPlan apply(LogicalPlan node) {
        if (!looksUp(node)) {
          return node;
        }
        Filter filter = (Filter) node;
        TapExpression tap = (TapExpression) filter.condition();
        return new Filter(tap.skippingRowsSentBefore(), filter.child());
      }
    });
  }

  /** A filter that is a file source's tap alone, whose rows sent before are not looked up yet. */
  private static boolean looksUp(LogicalPlan node) {
    return node instanceof Filter filter
        && SourceFiltersFirst.isSourceTap(filter.condition())
        && !((TapExpression) filter.condition()).skipsRowsSentBefore();
  }
}
