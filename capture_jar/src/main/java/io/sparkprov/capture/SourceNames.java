package io.sparkprov.capture;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Function1;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * The view or table names that analyzed plans read their leaves through, for {@link
 * TapPlacement}, which sees only optimized plans (where those aliases are gone): every analyzed
 * plan passes the extension's check rule, which records each leaf's name by its first
 * attribute's id ({@link PlanNames}). The optimized plan's leaves keep those ids; a leaf the
 * optimizer copied with fresh attributes (a CTE inlined twice) is named by a recent analyzed
 * leaf it gives the same result as. The most recent {@value #KEPT} names and {@value
 * #KEPT_LEAVES} leaves are kept.
 */
final class SourceNames {
  static final int KEPT = 100_000;
  static final int KEPT_LEAVES = 1_000;

  private static final Map<Long, String> NAMES = new LinkedHashMap<>(1024, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, String> eldest) {
      return size() > KEPT;
    }
  };

  private static final java.util.ArrayDeque<Map.Entry<LogicalPlan, String>> LEAVES =
      new java.util.ArrayDeque<>();

  static final Function1<LogicalPlan, BoxedUnit> CHECK_RULE =
      new AbstractFunction1<LogicalPlan, BoxedUnit>() {
        @Override
        public BoxedUnit apply(LogicalPlan analyzed) {
          remember(analyzed);
          return BoxedUnit.UNIT;
        }
      };

  private SourceNames() {}

  static void remember(LogicalPlan analyzed) {
    PlanNames names = new PlanNames(analyzed);
    synchronized (NAMES) {
      NAMES.putAll(names.byFirstAttribute());
      for (Map.Entry<LogicalPlan, String> leaf : names.leaves()) {
        LEAVES.addFirst(leaf);
      }
      while (LEAVES.size() > KEPT_LEAVES) {
        LEAVES.removeLast();
      }
    }
  }

  /** The name {@code leaf} was read through, or null. */
  static String of(LogicalPlan leaf) {
    if (leaf.output().isEmpty()) {
      return null;
    }
    synchronized (NAMES) {
      String found = NAMES.get(leaf.output().head().exprId().id());
      return found != null ? found : PlanNames.sameResultAs(LEAVES, leaf);
    }
  }
}
