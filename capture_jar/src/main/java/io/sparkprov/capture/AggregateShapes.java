package io.sparkprov.capture;

import io.sparkprov.capture.TapPlacement.UnsupportedPlan;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.MakeDecimal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.plans.Cross$;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.JoinHint;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Aggregates the tracked operators take apart before {@link Aggregation} places them, each
 * rewritten into an equal plan of simpler aggregates:
 *
 * <ul>
 *   <li>columns computed on aggregates ({@code sum(a) / count(b)}, {@code 0.5 * sum(x)}): the
 *       aggregation outputs each aggregate as a column of its own, and a projection above
 *       computes the column from them (an AGGREGATE node each; the column is computed on the
 *       group's row, which keeps its provenance: README, "columns computed on aggregates");
 *   <li>distinct aggregates over one set of inputs ({@code count(DISTINCT x)}, beside other
 *       distinct aggregates of the same inputs): first the distinct (keys, inputs) rows, a DELTA
 *       each fed by its copies, then the same aggregates, not distinct, over those rows (their
 *       definition, as grouping.py aggregates them);
 *   <li>distinct aggregates beside plain ones or over other inputs: an aggregation per kind,
 *       joined on the keys ({@link #byKind}).
 * </ul>
 */
final class AggregateShapes {
  private AggregateShapes() {}

  /** {@code node} as an equal plan of aggregates {@link Aggregation} places, or itself. */
  static LogicalPlan simplified(Aggregate node) {
    LogicalPlan distinct = distinctApart(node);
    if (distinct != node) {
      return distinct;
    }
    LogicalPlan computed = computedApart(node);
    return computed != node ? computed : byKind(node);
  }

  /**
   * Distinct aggregates beside plain ones, or over other inputs (grouping.py's
   * {@code aggregate_by_kind}): one aggregation per kind (the plain aggregates; the distinct
   * ones of each set of inputs), their rows joined on the grouping keys (null-safe; crossed when
   * there are none), so each result row is a TIMES of its group in every aggregation. The rows
   * below are read once per kind.
   */
  private static LogicalPlan byKind(Aggregate node) {
    Map<String, List<NamedExpression>> kinds = new java.util.LinkedHashMap<>();
    List<NamedExpression> others = new ArrayList<>();
    for (NamedExpression named : CollectionConverters.asJava(node.aggregateExpressions())) {
      Expression o = (Expression) named;
      Expression body = o instanceof Alias a ? a.child() : o;
      if (body instanceof MakeDecimal m) {
        body = m.child();
      }
      if (!(body instanceof AggregateExpression ae)) {
        others.add(named);
        continue;
      }
      kinds.computeIfAbsent(kindOf(ae), k -> new ArrayList<>()).add(named);
    }
    if (kinds.size() < 2) { // one kind: nothing to take apart
      return node;
    }
    List<Expression> keys = CollectionConverters.asJava(node.groupingExpressions());
    LogicalPlan joined = null;
    List<Attribute> joinedKeys = null;
    for (List<NamedExpression> aggregates : kinds.values()) {
      List<NamedExpression> outputs = new ArrayList<>();
      List<Attribute> keyColumns = new ArrayList<>();
      for (int i = 0; i < keys.size(); i++) {
        Alias key = TapPlacement.alias(keys.get(i), "key" + i);
        outputs.add(key);
        keyColumns.add(key.toAttribute());
      }
      if (joined == null) {
        outputs.addAll(others);
      }
      outputs.addAll(aggregates);
      LogicalPlan side = new Aggregate(node.groupingExpressions(), TapPlacement.seq(outputs),
          node.child(), node.hint());
      if (joined == null) {
        joined = side;
        joinedKeys = keyColumns;
        continue;
      }
      Expression on = null;
      for (int i = 0; i < keys.size(); i++) {
        Expression same = new EqualNullSafe(joinedKeys.get(i), keyColumns.get(i));
        on = on == null ? same : new And(on, same);
      }
      joined = new Join(joined, side, on == null ? Cross$.MODULE$ : Inner$.MODULE$,
          scala.Option.apply(on), JoinHint.NONE());
    }
    return new Project(TapPlacement.seq(new ArrayList<NamedExpression>(
        CollectionConverters.asJava(node.output()))), joined);
  }

  /** An aggregate's kind: "" when plain, else its distinct inputs (FILTERed ones refused
   * later by {@link Aggregation}, as before). */
  private static String kindOf(AggregateExpression ae) {
    if (!ae.isDistinct()) {
      return "";
    }
    StringBuilder kind = new StringBuilder("distinct:");
    for (Expression input : CollectionConverters.asJava(ae.aggregateFunction().children())) {
      kind.append(input.canonicalized().sql()).append('\u0000');
    }
    return kind.toString();
  }

  /** An aggregated output is one aggregate (possibly DecimalAggregates' MakeDecimal of one). */
  static boolean isUnit(Expression e) {
    return e instanceof AggregateExpression
        || (e instanceof MakeDecimal m && m.child() instanceof AggregateExpression);
  }

  private static LogicalPlan computedApart(Aggregate node) {
    List<NamedExpression> inner = new ArrayList<>();
    List<NamedExpression> outer = new ArrayList<>();
    Set<Long> listed = new HashSet<>();
    boolean split = false;
    for (NamedExpression named : CollectionConverters.asJava(node.aggregateExpressions())) {
      Expression o = (Expression) named;
      Expression body = o instanceof Alias a ? a.child() : o;
      if (!TapPlacement.isAggregate(o) || isUnit(body)) {
        inner.add(named);
        listed.add(named.exprId().id());
        outer.add(named.toAttribute());
        continue;
      }
      split = true;
      Map<Expression, Attribute> units = new IdentityHashMap<>();
      collectUnits(body, units, inner);
      Expression computed = body.transformDown(new scala.runtime.AbstractPartialFunction<>() {
        @Override
        public boolean isDefinedAt(Expression e) {
          return units.containsKey(e);
        }

        @Override
        public Expression apply(Expression e) {
          return units.containsKey(e) ? units.get(e) : e;
        }
      });
      Alias alias = (Alias) o; // an aggregate output computed on aggregates is aliased
      outer.add(new Alias(computed, alias.name(), alias.exprId(), alias.qualifier(),
          alias.explicitMetadata(), alias.nonInheritableMetadataKeys()));
    }
    if (!split) {
      return node;
    }
    // What the computed columns read besides their aggregates: grouping keys, output as such.
    for (NamedExpression e : outer) {
      for (Attribute a : CollectionConverters.asJava(((Expression) e).references().toSeq())) {
        if (!listed.contains(a.exprId().id()) && !a.name().startsWith(TapPlacement.HIDDEN)) {
          if (!isKey(node, a)) {
            throw new UnsupportedPlan("the aggregate output " + ((Expression) e).sql()
                + " (computed on aggregates and on what is not a grouping column)");
          }
          inner.add(a);
          listed.add(a.exprId().id());
        }
      }
    }
    Aggregate aggregate = new Aggregate(node.groupingExpressions(), TapPlacement.seq(inner),
        node.child(), node.hint());
    return new Project(TapPlacement.seq(outer), aggregate);
  }

  private static void collectUnits(Expression e, Map<Expression, Attribute> units,
      List<NamedExpression> inner) {
    if (isUnit(e)) {
      Alias alias = TapPlacement.alias(e, "agg" + inner.size());
      inner.add(alias);
      units.put(e, alias.toAttribute());
      return;
    }
    for (Expression child : CollectionConverters.asJava(e.children())) {
      collectUnits(child, units, inner);
    }
  }

  private static boolean isKey(Aggregate node, Attribute a) {
    for (Expression k : CollectionConverters.asJava(node.groupingExpressions())) {
      if (k instanceof Attribute key && key.exprId().equals(a.exprId())) {
        return true;
      }
    }
    return false;
  }

  /**
   * Distinct aggregates over one set of inputs, with only attributes as keys: the distinct
   * (keys, inputs) rows first, then the aggregates, not distinct, over them. Other plans are
   * returned as they are (mixed distinct and plain aggregates reach the rule as Spark's Expand,
   * refused by {@link Aggregation}).
   */
  private static LogicalPlan distinctApart(Aggregate node) {
    List<AggregateExpression> distinct = new ArrayList<>();
    for (NamedExpression named : CollectionConverters.asJava(node.aggregateExpressions())) {
      for (Expression e : PlanFacts.subtree((Expression) named)) {
        if (e instanceof AggregateExpression ae) {
          if (!ae.isDistinct()) {
            return node;
          }
          distinct.add(ae);
        }
      }
    }
    if (distinct.isEmpty()) {
      return node;
    }
    List<Expression> inputs = CollectionConverters.asJava(
        distinct.get(0).aggregateFunction().children());
    for (AggregateExpression ae : distinct) {
      if (!sameExpressions(CollectionConverters.asJava(ae.aggregateFunction().children()),
          inputs) || ae.filter().isDefined()) {
        throw new UnsupportedPlan("distinct aggregates over different inputs, or with FILTER");
      }
    }
    List<NamedExpression> rows = new ArrayList<>();
    List<Expression> grouping = new ArrayList<>();
    for (Expression k : CollectionConverters.asJava(node.groupingExpressions())) {
      if (!(k instanceof Attribute key)) {
        throw new UnsupportedPlan("a distinct aggregate grouped by an expression " + k.sql());
      }
      rows.add(key);
      grouping.add(key);
    }
    List<Attribute> inputAttributes = new ArrayList<>();
    for (Expression input : inputs) {
      Alias alias = TapPlacement.alias(input, "distinct" + inputAttributes.size());
      rows.add(alias);
      grouping.add(input);
      inputAttributes.add(alias.toAttribute());
    }
    Aggregate distinctRows = new Aggregate(TapPlacement.seq(grouping), TapPlacement.seq(rows),
        node.child(), node.hint());
    List<NamedExpression> outputs = new ArrayList<>();
    for (NamedExpression named : CollectionConverters.asJava(node.aggregateExpressions())) {
      Expression rewritten = ((Expression) named).transformDown(
          new scala.runtime.AbstractPartialFunction<>() {
            @Override
            public boolean isDefinedAt(Expression e) {
              return e instanceof AggregateExpression;
            }

            @Override
            public Expression apply(Expression e) {
              if (!(e instanceof AggregateExpression ae)) {
                return e;
              }
              Expression function = ae.aggregateFunction().withNewChildren(
                  TapPlacement.seq(new ArrayList<Expression>(inputAttributes)));
              return ae.copy((org.apache.spark.sql.catalyst.expressions.aggregate
                  .AggregateFunction) function, ae.mode(), false, ae.filter(), ae.resultId());
            }
          });
      outputs.add((NamedExpression) rewritten);
    }
    return new Aggregate(node.groupingExpressions(), TapPlacement.seq(outputs), distinctRows,
        node.hint());
  }

  private static boolean sameExpressions(List<Expression> a, List<Expression> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      if (!a.get(i).semanticEquals(b.get(i))) {
        return false;
      }
    }
    return true;
  }
}
