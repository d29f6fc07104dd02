package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
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

  /** Adds {@code strategy} to {@code experimental}'s planner strategies, once. */
  static void addStrategy(ExperimentalMethods experimental,
      org.apache.spark.sql.execution.SparkStrategy strategy) {
    List<org.apache.spark.sql.execution.SparkStrategy> strategies =
        new ArrayList<>(CollectionConverters.asJava(experimental.extraStrategies()));
    if (!strategies.contains(strategy)) {
      strategies.add(strategy);
      experimental.extraStrategies_$eq(CollectionConverters.asScala(strategies).toList());
    }
  }

  /**
   * {@code plan} with {@code rule} applied to the plan of every subquery expression in it,
   * nested ones first (the rule is not applied to {@code plan} itself). A subquery's plan is
   * rewritten once however often it appears: the two references of one scalar subquery stay
   * one plan, so Spark still runs it once (its capture points send its rows once).
   */
  static LogicalPlan inSubqueries(LogicalPlan plan, UnaryOperator<LogicalPlan> rule) {
    return inSubqueries(plan, rule, new HashMap<>());
  }

  private static LogicalPlan inSubqueries(
      LogicalPlan plan, UnaryOperator<LogicalPlan> rule, Map<LogicalPlan, LogicalPlan> done) {
    return (LogicalPlan) plan.transformAllExpressions(
        new scala.runtime.AbstractPartialFunction<Expression, Expression>() {
          @Override
          public boolean isDefinedAt(Expression e) {
            return e instanceof SubqueryExpression;
          }

          @Override
          public Expression apply(Expression e) {
            SubqueryExpression s = (SubqueryExpression) e;
            LogicalPlan sub = done.get(s.plan());
            if (sub == null) {
              sub = rule.apply(inSubqueries(s.plan(), rule, done));
              done.put(s.plan(), sub);
            }
            return sub == s.plan() ? s : s.withNewPlan(sub);
          }
        });
  }
}
