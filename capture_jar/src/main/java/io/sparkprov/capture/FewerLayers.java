package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.optimizer.CollapseProject$;
import org.apache.spark.sql.catalyst.optimizer.RemoveNoopOperators$;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Fewer plan layers for the same capture. Spark's physical planning walks each run of
 * consecutive projections and filters from every node of it (PhysicalOperation, once per
 * strategy, and again each time an adaptive query re-plans after a stage), so a run of k layers
 * costs about k squared; cars' plans spent most of the capture's overhead there (bench/README.md).
 * Two things keep the runs short:
 *
 * <ul>
 *   <li>A captured row's tap is one projection ({@link TapExpression#yielding}): the tap's
 *       expression captures the row and yields the row's id, where a filter over the id's
 *       projection and a projection dropping the inputs' ids took three layers.
 *   <li>This rule, capture's last: adjacent projections merge and projections that change
 *       nothing go, as Spark's optimizer would have done had capture's rules not run after it
 *       (Spark's own {@code CollapseProject} and {@code RemoveNoopOperators}, on a plan that
 *       holds a capture point, and on each subquery's plan that holds one). Neither moves a
 *       projection across a filter nor inlines a nondeterministic expression (a tap) into
 *       another projection, so every tap sees the same rows with the same ids.
 * </ul>
 *
 * <p>A tap whose id nothing above reads would be pruned with its column, so {@link #tapsRead}
 * makes such a tap a filter again when the placement ends, before any rule runs. The session's
 * conf {@value #CONF} = false turns both off (three layers per captured operator, as before
 * 2026-12-01).
 */
public final class FewerLayers extends Rule<LogicalPlan> {
  public static final FewerLayers INSTANCE = new FewerLayers();
  /** The Spark conf that turns the rule off ("false"). */
  public static final String CONF = "spark.sparkprov.fewerLayers";

  private FewerLayers() {}

  /** Adds the rule to {@code experimental}'s optimizations, once; install it after the others. */
  public static void install(ExperimentalMethods experimental) {
    ExtraOptimizations.add(experimental, INSTANCE);
  }

  @Override
  public String ruleName() {
    return "io.sparkprov.capture.FewerLayers";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!ExtraOptimizations.enabled(CONF)) {
      return plan;
    }
    return collapsed(ExtraOptimizations.inSubqueries(plan, FewerLayers::collapsed));
  }

  /** {@code plan} (a query's or a subquery's) with its runs of projections merged, if it holds a
   * tap; the subqueries in it as they are. */
  private static LogicalPlan collapsed(LogicalPlan plan) {
    if (!TapPlacement.holdsTap(plan)) {
      return plan;
    }
    // TapPlacement.root left every yielding tap read (tapsRead), and neither rule makes one unread
    return RemoveNoopOperators$.MODULE$.apply(CollapseProject$.MODULE$.apply(plan));
  }

  /**
   * {@code plan} with every tap that yields an id nothing above reads made a filter's condition
   * again, under the projection that held it: only a column something reads is safe from
   * pruning. Subquery plans are checked as plans of their own.
   */
  static LogicalPlan tapsRead(LogicalPlan plan) {
    return read(ExtraOptimizations.inSubqueries(plan, FewerLayers::ownTapsRead),
        ValuesPruning.ids(plan.outputSet()));
  }

  /** {@link #tapsRead} of {@code plan}'s own taps, the subqueries in it as they are. */
  private static LogicalPlan ownTapsRead(LogicalPlan plan) {
    return read(plan, ValuesPruning.ids(plan.outputSet()));
  }

  private static LogicalPlan read(LogicalPlan node, Set<Long> required) {
    LogicalPlan current = node;
    if (current instanceof Project project) {
      current = unyielded(project, required);
    }
    Set<Long> below = new HashSet<>(required);
    below.addAll(ValuesPruning.ids(current.references()));
    List<LogicalPlan> children = CollectionConverters.asJava(current.children());
    List<LogicalPlan> read = new ArrayList<>(children.size());
    boolean changed = false;
    for (LogicalPlan child : children) {
      LogicalPlan r = read(child, current instanceof Union
          ? ValuesPruning.byPosition(current, child, below) : below);
      changed |= r != child;
      read.add(r);
    }
    return changed ? current.withNewChildren(CollectionConverters.asScala(read).toList())
        : current;
  }

  /** {@code project} with its yielding taps whose id is not {@code required} as a filter below
   * it; itself if there is none. */
  private static LogicalPlan unyielded(Project project, Set<Long> required) {
    List<NamedExpression> kept = new ArrayList<>();
    LogicalPlan child = project.child();
    for (NamedExpression e : CollectionConverters.asJava(project.projectList())) {
      if (e instanceof Alias a && a.child() instanceof TapExpression tap && tap.yieldsId()
          && !required.contains(a.exprId().id())) {
        child = new Filter(tap.asCondition(), child);
      } else {
        kept.add(e);
      }
    }
    return child == project.child() ? project
        : new Project(CollectionConverters.asScala(kept).toList(), child);
  }
}
