package io.sparkprov.capture;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import scala.runtime.AbstractPartialFunction;

/**
 * Plan capture (capture_agent/plan_capture.py) rebuilds a query's plan with the tracked
 * operators, which may give a column another attribute than the one the original plan's
 * expressions refer to (a join renames its sides' columns). Each expression of the original
 * plan is moved onto the rebuilt child's attributes here: every attribute reference whose id is
 * a key becomes the attribute it maps to. Called from Python through py4j, which cannot pass
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
    Map<Long, Expression> byId = new java.util.HashMap<>();
    for (int i = 0; i < from.size(); i++) {
      if (from.get(i) instanceof AttributeReference a) {
        byId.put(a.exprId().id(), to.get(i));
      }
    }
    return expression.transform(
        new AbstractPartialFunction<Expression, Expression>() {
          @Override
          public boolean isDefinedAt(Expression e) {
            return e instanceof AttributeReference a && byId.containsKey(a.exprId().id());
          }

          @Override
          public Expression apply(Expression e) {
            Expression target = byId.get(((AttributeReference) e).exprId().id());
            return target == null ? e : target;
          }
        });
  }
}
