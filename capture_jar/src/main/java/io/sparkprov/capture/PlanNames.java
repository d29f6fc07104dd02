package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ScalarSubquery;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.plans.logical.View;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The view or table name each leaf of an analyzed plan was read through (the innermost alias
 * above it), found for a leaf of the optimized plan by its first attribute, else (a CTE inlined
 * anew, with fresh attributes) by the analyzed leaf it gives the same result as. Plan capture
 * (capture_agent/plan_capture.py) names its sources by it; one py4j call per leaf where Python
 * walked the plan node by node. Since protocol 9.
 */
public final class PlanNames {
  /**
   * The subquery expressions whose plans the walk enters (IN, EXISTS, scalar, lateral); with
   * InSubquery, those {@link Rebind#straySubquery} refuses where they are not joined.
   */
  static final Set<String> SUBQUERIES =
      Set.of("ScalarSubquery", "Exists", "ListQuery", "LateralSubquery");

  private final Map<Long, String> byFirstAttribute = new HashMap<>();
  private final List<Map.Entry<LogicalPlan, String>> leaves = new ArrayList<>();

  public PlanNames(LogicalPlan analyzed) {
    walk(analyzed, "");
  }

  private void walk(LogicalPlan node, String outer) {
    String alias = outer;
    if (node instanceof SubqueryAlias a) {
      alias = a.identifier().name();
    } else if (node instanceof View v) {
      alias = v.desc().identifier().table();
    }
    List<LogicalPlan> children = CollectionConverters.asJava(node.children());
    if (children.isEmpty() && !alias.isEmpty() && !node.output().isEmpty()) {
      byFirstAttribute.putIfAbsent(node.output().head().exprId().id(), alias);
      leaves.add(Map.entry(node, alias));
    }
    for (LogicalPlan child : children) {
      walk(child, alias);
    }
    for (Expression expression : CollectionConverters.asJava(node.expressions())) {
      for (Expression sub : PlanFacts.subtree(expression)) {
        if (sub instanceof SubqueryExpression s
            && SUBQUERIES.contains(sub.getClass().getSimpleName())) {
          walk(s.plan(), "");
        }
      }
    }
  }

  /** Each named leaf with its name, in the order the walk met them. */
  List<Map.Entry<LogicalPlan, String>> leaves() {
    return leaves;
  }

  /** Each named leaf's name, by the id of its first attribute. */
  Map<Long, String> byFirstAttribute() {
    return byFirstAttribute;
  }

  /** The name {@code leaf} (of the optimized plan) was read through, or null. */
  public String of(LogicalPlan leaf) {
    if (leaf.output().isEmpty()) {
      return null;
    }
    String found = byFirstAttribute.get(leaf.output().head().exprId().id());
    return found != null ? found : sameResultAs(leaves, leaf);
  }

  /** The name of the first of {@code leaves} that gives the same result as {@code leaf} (a CTE
   * inlined anew, with fresh attributes), or null. */
  static String sameResultAs(Iterable<Map.Entry<LogicalPlan, String>> leaves, LogicalPlan leaf) {
    for (Map.Entry<LogicalPlan, String> candidate : leaves) {
      if (candidate.getKey().sameResult(leaf)) {
        return candidate.getValue();
      }
    }
    return null;
  }

  /**
   * The distinct scalar subqueries of {@code expressions}, by expression id, in the order a
   * pre-order walk of each expression meets them.
   */
  public static List<Expression> scalarSubqueries(List<Expression> expressions) {
    Map<Long, Expression> found = new LinkedHashMap<>();
    for (Expression expression : expressions) {
      for (Expression sub : PlanFacts.subtree(expression)) {
        if (sub instanceof ScalarSubquery s) {
          found.putIfAbsent(s.exprId().id(), s);
        }
      }
    }
    return new ArrayList<>(found.values());
  }

  /** The attributes of {@code plan}'s output, in order, as a java.util.List. */
  public static List<Expression> output(LogicalPlan plan) {
    return new ArrayList<Expression>(CollectionConverters.asJava(plan.output()));
  }
}
