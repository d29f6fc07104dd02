package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.internal.SQLConf;
import scala.jdk.javaapi.CollectionConverters;

/** A session's {@code experimental.extraOptimizations}, where capture's optimizer rules go. */
final class ExtraOptimizations {
  private ExtraOptimizations() {}

  /** Whether the session's Spark conf {@code conf}, a capture rule's switch, leaves it on: unset
   * or "true" (case aside). */
  static boolean enabled(String conf) {
    return SQLConf.get().getConfString(conf, "true").equalsIgnoreCase("true");
  }

  /** Adds {@code rule} to {@code experimental}'s optimizations, once. */
  static void add(ExperimentalMethods experimental, Rule<LogicalPlan> rule) {
    List<Rule<LogicalPlan>> rules =
        new ArrayList<>(CollectionConverters.asJava(experimental.extraOptimizations()));
    if (!rules.contains(rule)) {
      rules.add(rule);
      experimental.extraOptimizations_$eq(CollectionConverters.asScala(rules).toList());
    }
  }
}
