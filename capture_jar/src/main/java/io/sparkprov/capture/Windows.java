package io.sparkprov.capture;

import io.sparkprov.capture.TapPlacement.Pending;
import io.sparkprov.capture.TapPlacement.Placed;
import io.sparkprov.capture.TapPlacement.UnsupportedPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Ascending$;
import org.apache.spark.sql.catalyst.expressions.CurrentRow$;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.NullsFirst$;
import org.apache.spark.sql.catalyst.expressions.RowFrame$;
import org.apache.spark.sql.catalyst.expressions.RowNumber;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.expressions.SpecifiedWindowFrame;
import org.apache.spark.sql.catalyst.expressions.UnboundedFollowing$;
import org.apache.spark.sql.catalyst.expressions.UnboundedPreceding$;
import org.apache.spark.sql.catalyst.expressions.WindowExpression;
import org.apache.spark.sql.catalyst.expressions.WindowSpecDefinition;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Window;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A Window of aggregates over whole partitions ({@code SUM(x) OVER (PARTITION BY k)}), as
 * capture_agent/windows.py captures it: per partition and aggregated column one AGGREGATE node,
 * fed by a TENSOR per member (a MEMBER capture point without DELTA edges below the window, the
 * partition's id hashing the window's key and each partition column with its null flag); each
 * output row a fresh TIMES node of its row and its partition's AGGREGATE nodes (a WINDOW_ROW
 * capture point, the partition's first row by id publishing the AGGREGATE nodes and their
 * values). Ranking functions, offsets and running or sliding frames, whose lineage is the rows
 * ordered before (plan_capture.py's {@code _running}), fail naming them.
 */
final class Windows {
  private Windows() {}

  static Placed place(TapPlacement.Placement at, Window node) {
    List<Aggregation.Aggregated> aggregated = new ArrayList<>();
    for (NamedExpression e : CollectionConverters.asJava(node.windowExpressions())) {
      aggregated.add(aggregated(e));
    }
    Placed child = at.materialize(at.place(node.child()));
    CaptureRun run = at.run();
    String key = run.nextKey("window");
    List<Expression> partition = CollectionConverters.asJava(node.partitionSpec());
    Alias group = TapPlacement.alias(partition.isEmpty() ? at.nodeId(key)
        : at.nodeId(key, TapPlacement.Placement.keyInputs(partition).toArray(new Expression[0])),
        "partition");
    LogicalPlan members = TapPlacement.project(child.plan(), child.plan().output(), group);

    Aggregation.MemberColumns columns =
        Aggregation.MemberColumns.of(key, child.id(), group.toAttribute(), aggregated);
    List<String> origins = child.origin().isEmpty() ? List.of() : List.of(child.origin());
    TapPlan memberTap = at.tapPlan("member", key + ":members", "", List.of(), columns.inputs(),
        columns.types(), TapPlacement.Placement.split(""), key, List.of(), List.of(),
        aggregated.size(), origins, false).withoutDelta();
    LogicalPlan tapped = new Filter(
        new TapExpression(columns.values(), new Tap(memberTap, run.sink(), run.counts())),
        members);
    LogicalPlan windowed = new Window(node.windowExpressions(), node.partitionSpec(),
        node.orderSpec(), tapped, node.hint());

    // The partition's first row by id (same partitioning as the window: no other shuffle).
    SortOrder byId = new SortOrder(child.id(), Ascending$.MODULE$, NullsFirst$.MODULE$,
        TapPlacement.seq(List.of()));
    WindowSpecDefinition spec = new WindowSpecDefinition(node.partitionSpec(),
        TapPlacement.seq(List.of(byId)), new SpecifiedWindowFrame(RowFrame$.MODULE$,
            UnboundedPreceding$.MODULE$, CurrentRow$.MODULE$));
    Alias position = TapPlacement.alias(new WindowExpression(new RowNumber(), spec), "position");
    LogicalPlan numbered = new Window(TapPlacement.seq(List.<NamedExpression>of(position)),
        node.partitionSpec(), TapPlacement.seq(List.of(byId)), windowed, scala.Option.empty());
    Alias first = TapPlacement.alias(new EqualTo(position.toAttribute(), Literal.create(1,
        org.apache.spark.sql.types.DataTypes.IntegerType)), "first");
    Alias id = TapPlacement.alias(at.nodeId(key, child.id()), "id");
    LogicalPlan plan = TapPlacement.project(numbered, windowed.output(), first, id);

    List<String> rowInputs = new ArrayList<>(List.of("id", "parent", "group", "first"));
    List<String> rowTypes = new ArrayList<>(List.of("id", "id", "id", "flag"));
    List<Expression> rowValues = new ArrayList<>(List.of(id.toAttribute(), child.id(),
        group.toAttribute(), first.toAttribute()));
    for (int i = 0; i < aggregated.size(); i++) {
      rowInputs.add("x" + i);
      rowTypes.add("text");
      rowValues.add(aggregated.get(i).output());
    }
    TapPlan rowTap = at.tapPlan("window_row", key, "", List.of(), rowInputs, rowTypes,
        TapPlacement.Placement.split(""), key, columns.functions(), columns.salts(), 0,
        List.of(), false);
    return new Placed(plan, TapPlacement.attributes(node.output()), id.toAttribute(),
        new Pending(rowTap, rowValues, List.of()), "", Set.of(key));
  }

  /** A window expression over its whole partition of one aggregate of one input; others fail
   * naming them. */
  private static Aggregation.Aggregated aggregated(NamedExpression named) {
    Expression body = named instanceof Alias a ? a.child() : (Expression) named;
    if (!(body instanceof WindowExpression w)) {
      throw new UnsupportedPlan("the plan operator Window computing " + body.sql());
    }
    if (!(w.windowFunction() instanceof AggregateExpression ae)) {
      throw new UnsupportedPlan("the plan operator Window with " + w.windowFunction().prettyName()
          + " (ranking and offset functions: their lineage is the rows ordered before)");
    }
    if (!(w.windowSpec().frameSpecification() instanceof SpecifiedWindowFrame frame)
        || frame.lower() != UnboundedPreceding$.MODULE$
        || frame.upper() != UnboundedFollowing$.MODULE$) {
      throw new UnsupportedPlan("the plan operator Window over a running or sliding frame ("
          + w.windowSpec().sql() + ")");
    }
    if (ae.isDistinct() || ae.filter().isDefined()) {
      throw new UnsupportedPlan("the plan operator Window with " + ae.sql() + " (DISTINCT or FILTER)");
    }
    List<Expression> args = CollectionConverters.asJava(ae.aggregateFunction().children());
    if (args.size() != 1) {
      throw new UnsupportedPlan("the plan operator Window with " + ae.sql() + " of " + args.size()
          + " inputs");
    }
    return new Aggregation.Aggregated(named.toAttribute(),
        ae.aggregateFunction().prettyName().toUpperCase(Locale.ROOT), args.get(0));
  }
}
