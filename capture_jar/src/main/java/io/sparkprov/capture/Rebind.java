package io.sparkprov.capture;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ScalarSubquery;
import scala.runtime.AbstractPartialFunction;

/**
 * Plan capture (capture_agent/plan_capture.py) rebuilds a query's plan with the tracked
 * operators, which may give a column another attribute than the one the original plan's
 * expressions refer to (a join renames its sides' columns). Each expression of the original
 * plan is moved onto the rebuilt child's attributes here: every attribute reference whose id is
 * a key becomes the attribute it maps to, and so does every scalar subquery given (plan capture
 * joins its one row to the rebuilt child and reads its value from that column). Called from Python through py4j, which cannot pass
 * Scala functions.
 */
public final class Rebind {
  private Rebind() {}

  /** {@code expression} with the references of {@code from} replaced by those of {@code to}. */
  public static Expression rebind(Expression expression, List<Expression> from, List<Expression> to) {
    if (from.size() != to.size()) {
      throw new IllegalArgumentException(
          "rebinding " + from.size() + " attributes onto " + to.size());
    }
    Map<Long, Expression> attributes = new java.util.HashMap<>();
    Map<Long, Expression> subqueries = new java.util.HashMap<>();
    for (int i = 0; i < from.size(); i++) {
      if (from.get(i) instanceof AttributeReference a) {
        attributes.put(a.exprId().id(), to.get(i));
      } else if (from.get(i) instanceof ScalarSubquery s) {
        subqueries.put(s.exprId().id(), to.get(i));
      }
    }
    return expression.transformDown(
        new AbstractPartialFunction<Expression, Expression>() {
          @Override
          public boolean isDefinedAt(Expression e) {
            return target(e, attributes, subqueries) != null;
          }

          @Override
          public Expression apply(Expression e) {
            Expression target = target(e, attributes, subqueries);
            return target == null ? e : target;
          }
        });
  }

  /** See {@link Taps#straySubquery}. */
  static String straySubquery(Expression expression, List<Expression> joined) {
    java.util.Set<Long> ids = new java.util.HashSet<>();
    for (Expression e : joined) {
      if (e instanceof ScalarSubquery s) {
        ids.add(s.exprId().id());
      }
    }
    scala.Option<Expression> stray =
        expression.find(
            new scala.runtime.AbstractFunction1<Expression, Object>() {
              @Override
              public Object apply(Expression e) {
                if (e instanceof ScalarSubquery s) {
                  return !ids.contains(s.exprId().id());
                }
                String kind = e.getClass().getSimpleName();
                return PlanNames.SUBQUERIES.contains(kind) || kind.equals("InSubquery");
              }
            });
    return stray.isEmpty() ? null : stray.get().getClass().getSimpleName();
  }

  private static Expression target(
      Expression e, Map<Long, Expression> attributes, Map<Long, Expression> subqueries) {
    if (e instanceof AttributeReference a) {
      return attributes.get(a.exprId().id());
    }
    if (e instanceof ScalarSubquery s) {
      return subqueries.get(s.exprId().id());
    }
    return null;
  }
}
