package io.sparkprov.capture;

import io.sparkprov.capture.TapPlacement.Pending;
import io.sparkprov.capture.TapPlacement.Placed;
import io.sparkprov.shared.Salts;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.MonotonicallyIncreasingID;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.expressions.aggregate.CollectList;
import org.apache.spark.sql.catalyst.expressions.aggregate.First;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.JoinType;
import org.apache.spark.sql.catalyst.plans.LeftOuter$;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;

/**
 * Left semi and left anti joins (capture_agent/joins.py, on a condition, as plan capture always
 * joins): the join's rows are no fresh product of both sides, so the join is rebuilt as the
 * left rows, numbered, paired with the right rows by the join's own condition and grouped back
 * per left row. A semi join pairs them inner and collects the matches' ids: the kept row is a
 * TIMES of its left row and the sum of its matches (SemiJoinSpec). An anti join pairs them left
 * outer and takes the smallest match's id: a row with one gets an EXCLUDED node (AntiJoinSpec)
 * and is dropped, a row without one is kept with its own node.
 */
final class SemiJoins {
  private SemiJoins() {}

  /** The left rows, once each, with the right ids of their matches combined as one column. */
  private record PerLeftRow(LogicalPlan plan, Attribute left, Attribute combined) {}

  static Placed place(TapPlacement.Placement at, Join node) {
    Placed left = at.materialize(at.place(node.left()));
    Placed right = at.materialize(at.place(node.right()));
    return node.joinType().toString().equals("LeftSemi") ? semi(at, node, left, right)
        : anti(at, node, left, right);
  }

  /** A semi join's kept rows, each a fresh TIMES node (not placed yet, so the root may name
   * them): fed by its left row and by its matches (their sum, a PLUS, where more than one). */
  private static Placed semi(TapPlacement.Placement at, Join node, Placed left, Placed right) {
    PerLeftRow kept = perLeftRow(node, left, right, Inner$.MODULE$,
        new CollectList(right.id()), "witnesses");
    String key = at.run().nextKey("semijoin");
    Alias id = TapPlacement.alias(at.nodeId(key, kept.left()), "id");
    LogicalPlan plan = TapPlacement.project(kept.plan(), kept.plan().output(), id);
    TapPlan tap = at.tapPlan("semi_join", key, "", List.of(), List.of("id", "left", "witnesses"),
        List.of("id", "id", "ids"), TapPlacement.Placement.split(""), "", List.of(),
        List.of(Salts.salt(key, "plus")), 0, List.of(), false);
    Pending pending = new Pending(tap, List.of(id.toAttribute(), kept.left(), kept.combined()),
        List.of());
    return new Placed(plan, left.visible(), id.toAttribute(), pending, "", Set.of(key));
  }

  /** An anti join's kept rows, which keep their nodes; the capture point before the drop
   * records each excluded row with the smallest id among its matches. */
  private static Placed anti(TapPlacement.Placement at, Join node, Placed left, Placed right) {
    PerLeftRow every = perLeftRow(node, left, right, LeftOuter$.MODULE$, new Min(right.id()),
        "match");
    String key = at.run().nextKey("antijoin");
    Alias excluded = TapPlacement.alias(at.nodeId(key, every.left()), "excluded");
    LogicalPlan plan = TapPlacement.project(every.plan(), every.plan().output(), excluded);
    TapPlan tap = at.tapPlan("anti_join", key, "", List.of(), List.of("id", "left", "right"),
        List.of("id", "id", "id"), TapPlacement.Placement.split(""), "", List.of(), List.of(),
        false);
    List<Expression> inputs = List.of(excluded.toAttribute(), every.left(), every.combined());
    LogicalPlan tapped = new Filter(
        new TapExpression(inputs, new Tap(tap, at.run().sink(), at.run().counts())), plan);
    LogicalPlan kept = new Filter(new IsNull(every.combined()), tapped);
    List<NamedExpression> columns = new ArrayList<>(left.visible());
    columns.add(every.left());
    return new Placed(new Project(TapPlacement.seq(columns), kept), left.visible(), every.left(),
        null, left.origin(), left.idKeys());
  }

  /**
   * joins.py's {@code _per_left_row} on a condition: the left rows numbered (the number only
   * tells rows apart; ids may repeat), joined {@code how} to the right rows on the join's
   * condition, and grouped by that number: each left column (and id) as it was, under its own
   * attribute, and {@code combine} of the right ids as {@code name}.
   */
  private static PerLeftRow perLeftRow(Join node, Placed left, Placed right, JoinType how,
      AggregateFunction combine, String name) {
    Alias row = TapPlacement.alias(new MonotonicallyIncreasingID(), "row");
    LogicalPlan numbered = TapPlacement.project(left.plan(), left.plan().output(), row);
    LogicalPlan pairs = new Join(numbered, right.plan(), how, node.condition(), node.hint());
    List<NamedExpression> outputs = new ArrayList<>();
    List<Attribute> columns = new ArrayList<>(left.visible());
    columns.add(left.id());
    for (Attribute c : columns) {
      outputs.add(new Alias(new First(c, false).toAggregateExpression(), c.name(), c.exprId(),
          c.qualifier(), scala.Option.empty(), TapPlacement.seq(List.of())));
    }
    Alias combined = TapPlacement.alias(combine.toAggregateExpression(), name);
    outputs.add(combined);
    LogicalPlan grouped = new Aggregate(TapPlacement.seq(List.<Expression>of(row.toAttribute())),
        TapPlacement.seq(outputs), pairs, scala.Option.empty());
    return new PerLeftRow(grouped, TapPlacement.inOutput(grouped, left.id()),
        combined.toAttribute());
  }
}
