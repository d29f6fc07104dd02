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
 * attribute's id ({@link PlanNames}). The optimized plan's leaves keep those ids. The most
 * recent {@value #KEPT} names are kept.
 */
final class SourceNames {
  static final int KEPT = 100_000;

  private static final Map<Long, String> NAMES = new LinkedHashMap<>(1024, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, String> eldest) {
      return size() > KEPT;
    }
  };

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
    Map<Long, String> found = new PlanNames(analyzed).byFirstAttribute();
    synchronized (NAMES) {
      NAMES.putAll(found);
    }
  }

  /** The name {@code leaf} was read through, or null. */
  static String of(LogicalPlan leaf) {
    if (leaf.output().isEmpty()) {
      return null;
    }
    synchronized (NAMES) {
      return NAMES.get(leaf.output().head().exprId().id());
    }
  }
}
