package io.sparkprov.capture;

import io.sparkprov.capture.TapPlacement.Pending;
import io.sparkprov.capture.TapPlacement.Placed;
import io.sparkprov.capture.TapPlacement.UnsupportedPlan;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.CreateNamedStruct;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GetStructField;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.ScalarSubquery;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Uncorrelated scalar subqueries in a filter or a projection ({@code x > (SELECT avg(x) ...)}):
 * each row of the operator's input is joined with the subquery's one row, a TIMES of the two
 * (of the row alone where the subquery gives no row), so a row's lineage reaches the rows the
 * value was computed from (plan_capture.py's {@code _subqueries}, a left join on true). Here no
 * join is planned: the subquery's plan, placed, returns its value and its row's node id as one
 * struct, read twice from the same subquery (Spark runs it once); Spark itself fails a query
 * whose subquery gives more than one row.
 */
final class ScalarSubqueries {
  private ScalarSubqueries() {}

  static Placed place(TapPlacement.Placement at, LogicalPlan node) {
    if (!(node instanceof Filter) && !(node instanceof Project)) {
      throw new UnsupportedPlan("a scalar subquery in a " + node.nodeName());
    }
    Placed child = at.place(node.children().head());
    // By the original expressions themselves: their replacements hold a subquery of the same id.
    Map<Expression, Expression> values = new IdentityHashMap<>();
    for (Expression e : PlanNames.scalarSubqueries(
        new ArrayList<>(CollectionConverters.asJava(node.expressions())))) {
      ScalarSubquery s = (ScalarSubquery) e;
      if (!s.outerAttrs().isEmpty()) {
        throw new UnsupportedPlan("the correlated scalar subquery " + s.sql());
      }
      Placed sub = at.materialize(at.place(s.plan()));
      Expression row = new CreateNamedStruct(TapPlacement.seq(List.of(
          Literal$.MODULE$.apply("v"), sub.visible().get(0),
          Literal$.MODULE$.apply("i"), sub.id())));
      Alias struct = TapPlacement.alias(row, "subquery");
      ScalarSubquery withId = s.withNewPlan(
          new Project(TapPlacement.seq(List.<NamedExpression>of(struct)), sub.plan()));
      Expression value = new GetStructField(withId, 0, scala.Option.apply("v"));
      for (Expression expression : CollectionConverters.asJava(node.expressions())) {
        for (Expression occurrence : PlanFacts.subtree(expression)) {
          if (occurrence instanceof ScalarSubquery o && o.exprId().equals(s.exprId())) {
            values.put(o, value);
          }
        }
      }
      child = times(at, at.materialize(child),
          new GetStructField(withId, 1, scala.Option.apply("i")));
    }
    LogicalPlan rewritten = node.transformExpressions(new scala.runtime.AbstractPartialFunction<
        Expression, Expression>() {
      @Override
      public boolean isDefinedAt(Expression e) {
        return values.containsKey(e);
      }

      @Override
      public Expression apply(Expression e) {
        return values.getOrDefault(e, e);
      }
    });
    return rewritten instanceof Project p ? at.projection(p, child)
        : at.passThrough(rewritten, child);
  }

  /** {@code left}'s rows, each a TIMES of itself and the subquery's row {@code right} (an id,
   * null when the subquery gave no row): a JOIN capture point, not placed yet (a projection
   * above carries it, so the result names the TIMES nodes, as plan capture's do). */
  private static Placed times(TapPlacement.Placement at, Placed left, Expression right) {
    String key = at.run().nextKey("join");
    Alias rightId = TapPlacement.alias(right, "right");
    LogicalPlan withRight = TapPlacement.project(left.plan(), left.plan().output(), rightId);
    Alias id = TapPlacement.alias(at.nodeId(key, left.id(), rightId.toAttribute()), "id");
    LogicalPlan plan = TapPlacement.project(withRight, withRight.output(), id);
    TapPlan tap = at.tapPlan("join", key, "", List.of(), List.of("id", "left", "right"),
        List.of("id", "id", "id"), TapPlacement.Placement.split(""), "", List.of(),
        List.of(left.origin(), ""), false);
    Pending pending = new Pending(tap,
        List.of(id.toAttribute(), left.id(), rightId.toAttribute()), List.of());
    return new Placed(plan, left.visible(), id.toAttribute(), pending, "", Set.of(key));
  }
}
