package io.sparkprov.capture;

import io.sparkprov.capture.TapPlacement.Pending;
import io.sparkprov.capture.TapPlacement.Placed;
import io.sparkprov.capture.TapPlacement.UnsupportedPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.DenseRank;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Rank;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.JoinHint;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Union;
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
    for (NamedExpression e : CollectionConverters.asJava(node.windowExpressions())) {
      if (runningKind(e) != null) {
        return running(at, node);
      }
    }
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
        aggregated.size(), origins, "", false, columns.valueOf()).withoutDelta();
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

  /**
   * A window whose values depend on the rows ordered before (plan_capture.py's {@code _running}):
   * aggregates over a running frame (ROWS, or RANGE with the row's peers) and rank, dense_rank
   * and row_number. Those rows are the value's lineage: every row numbered in its partition
   * (ties broken by its columns) and ranked, paired with the rows of its frame (a TIMES per
   * pair) and taken once by itself, grouped per row (a DELTA whose members are those, with the
   * running aggregates), and joined back to its row. The window's other functions are computed
   * on the row. Quadratic in a partition's size, as the lineage is. The numbered rows are read
   * four times through one shuffle, which Spark reuses (as it plans a CTE read twice), so their
   * capture points publish once.
   */
  private static Placed running(TapPlacement.Placement at, Window node) {
    List<NamedExpression> exprs = CollectionConverters.asJava(node.windowExpressions());
    java.util.Set<String> frames = new java.util.HashSet<>();
    List<NamedExpression> runningExprs = new ArrayList<>();
    List<NamedExpression> direct = new ArrayList<>();
    for (NamedExpression e : exprs) {
      String kind = runningKind(e);
      if (kind != null && !kind.equals("Rank")) {
        frames.add(kind);
        runningExprs.add(e);
      } else {
        direct.add(e);
      }
    }
    if (frames.size() > 1) {
      throw new UnsupportedPlan("the plan operator Window over a ROWS and a RANGE running frame"
          + " in one window");
    }
    if (!org.apache.spark.sql.internal.SQLConf.get().exchangeReuseEnabled()) {
      throw new UnsupportedPlan("the plan operator Window with ranks or running frames while"
          + " spark.sql.exchange.reuse is false (its rows are read again through one shuffle)");
    }
    Placed child = at.materialize(at.place(node.child()));
    if (at.readsPlacedAgain(child.plan())) {
      // TPC-DS q51 so: 0.8% of its nodes were sent twice, the cause not found yet (q70's rank
      // over an aggregate of rows a ranked subquery filtered sends each once)
      throw new UnsupportedPlan("the plan operator Window with ranks or running frames over the"
          + " rows of another such window");
    }
    Numbered mine = numbered(at, node, child, direct);
    Numbered theirs = mine.renamed(at, child);
    boolean rows = !frames.equals(java.util.Set.of("RangeFrame"));
    LogicalPlan pairs = new Join(mine.plan(), theirs.plan(), Inner$.MODULE$,
        scala.Option.apply(mine.frameOf(theirs, rows)), JoinHint.NONE());
    LogicalPlan framed = new Union(TapPlacement.seq(List.of(mine.members(pairs, theirs),
        mine.members(mine.plan(), mine))), false, false);
    List<Attribute> union = TapPlacement.attributes(framed.output());
    List<Attribute> keys = union.subList(0, mine.keys().size());
    List<Attribute> inputs = union.subList(keys.size(), union.size());
    List<NamedExpression> grouped = new ArrayList<>(keys);
    List<Attribute> computed = new ArrayList<>();
    for (NamedExpression e : runningExprs) {
      Expression function = ((WindowExpression) ((Alias) e).child()).windowFunction();
      Alias a = TapPlacement.alias(rebound(function, child.visible(), inputs), "running");
      grouped.add(a);
      computed.add(a.toAttribute());
    }
    LogicalPlan aggregated = new org.apache.spark.sql.catalyst.plans.logical.Aggregate(
        TapPlacement.seq(new ArrayList<Expression>(keys)), TapPlacement.seq(grouped), framed,
        scala.Option.empty());
    Expression back = null;
    for (int i = 0; i < keys.size(); i++) {
      Expression same = new EqualNullSafe(mine.keys().get(i), keys.get(i));
      back = back == null ? same : new And(back, same);
    }
    LogicalPlan out = new Join(mine.plan(), aggregated, Inner$.MODULE$, scala.Option.apply(back),
        JoinHint.NONE());
    List<NamedExpression> result = new ArrayList<>(child.visible());
    for (NamedExpression e : exprs) {
      int d = direct.indexOf(e);
      Attribute value = d >= 0 ? mine.direct().get(d) : computed.get(runningExprs.indexOf(e));
      result.add(new Alias(value, e.name(), e.exprId(), e.qualifier(), scala.Option.empty(),
          TapPlacement.seq(List.of())));
    }
    return at.place(new Project(TapPlacement.seq(result), out));
  }

  /**
   * A running window's numbered rows, read again through one shuffle: {@code columns} are the
   * child's {@code k} columns, the window's {@code v} other values, its partition columns, the
   * row's position in its partition and its rank among its peers ({@code plan}'s output besides
   * the id), placed already.
   */
  private record Numbered(LogicalPlan plan, List<Attribute> columns, int k, int v) {
    int position() {
      return columns.size() - 2;
    }

    /** The row's keys: its partition columns and position. */
    List<Attribute> keys() {
      return columns.subList(k + v, position() + 1);
    }

    List<Attribute> direct() {
      return columns.subList(k, k + v);
    }

    /** The same rows under other attributes (the other side of the pairs), placed already. */
    Numbered renamed(TapPlacement.Placement at, Placed child) {
      List<NamedExpression> renamed = new ArrayList<>();
      Attribute id = null;
      List<Attribute> visible = new ArrayList<>();
      for (Attribute a : TapPlacement.attributes(plan.output())) {
        Alias copy = TapPlacement.alias(a, "frame" + renamed.size());
        renamed.add(copy);
        if (a.exprId().equals(child.id().exprId())) {
          id = copy.toAttribute();
        } else {
          visible.add(copy.toAttribute());
        }
      }
      LogicalPlan others = new Project(TapPlacement.seq(renamed), plan);
      at.placedAlready(new Placed(others, visible, id, null, child.origin(), child.idKeys()));
      return new Numbered(others, visible, k, v);
    }

    /** Whether a row of {@code theirs} is in this row's frame: before it in its partition (ROWS),
     * or not after it and not itself (RANGE: its peers too). */
    Expression frameOf(Numbered theirs, boolean rows) {
      int p = position();
      List<Attribute> other = theirs.columns;
      Expression on = rows
          ? new LessThan(other.get(p), columns.get(p))
          : new And(new LessThanOrEqual(other.get(p + 1), columns.get(p + 1)),
              new Not(new EqualTo(other.get(p), columns.get(p))));
      for (int i = k + v; i < p; i++) {
        on = new And(on, new EqualNullSafe(columns.get(i), other.get(i)));
      }
      return on;
    }

    /** A frame's rows over {@code plan}: this row's keys, the member's child columns. */
    LogicalPlan members(LogicalPlan plan, Numbered member) {
      List<NamedExpression> out = new ArrayList<>();
      for (Attribute key : keys()) {
        out.add(TapPlacement.alias(key, "row" + out.size()));
      }
      for (int i = 0; i < k; i++) {
        out.add(TapPlacement.alias(member.columns.get(i), "member" + i));
      }
      return new Project(TapPlacement.seq(out), plan);
    }
  }

  /** The child's rows with the window's other values, partition columns, position (ties broken
   * by the row's columns) and rank, read again through one shuffle (placed already). */
  private static Numbered numbered(TapPlacement.Placement at, Window node, Placed child,
      List<NamedExpression> direct) {
    List<NamedExpression> columns = new ArrayList<>(child.visible());
    columns.add(child.id());
    LogicalPlan plan = new Project(TapPlacement.seq(columns), child.plan()); // no other column
    if (!direct.isEmpty()) {
      plan = new Window(TapPlacement.seq(direct), node.partitionSpec(), node.orderSpec(), plan,
          node.hint());
    }
    List<Expression> partition = CollectionConverters.asJava(node.partitionSpec());
    List<Attribute> parts = new ArrayList<>();
    List<NamedExpression> partAliases = new ArrayList<>();
    for (int i = 0; i < partition.size(); i++) {
      Alias part = TapPlacement.alias(partition.get(i), "part" + i);
      partAliases.add(part);
      parts.add(part.toAttribute());
    }
    plan = TapPlacement.project(plan, plan.output(), partAliases.toArray(new NamedExpression[0]));
    List<SortOrder> orders = CollectionConverters.asJava(node.orderSpec());
    List<SortOrder> ordersThenTies = new ArrayList<>(orders);
    for (Attribute a : child.visible()) {
      if (!a.dataType().existsRecursively(t -> t instanceof org.apache.spark.sql.types.MapType
          || t instanceof org.apache.spark.sql.types.VariantType)) { // orderable
        ordersThenTies.add(ascending(a));
      }
    }
    plan = runningWindow(new RowNumber(), "position", parts, ordersThenTies, plan);
    List<Expression> orderedBy = new ArrayList<>();
    orders.forEach(o -> orderedBy.add(o.child()));
    plan = runningWindow(new Rank(TapPlacement.seq(orderedBy)), "peers", parts, orders, plan);
    LogicalPlan shared = parts.isEmpty()
        ? new org.apache.spark.sql.catalyst.plans.logical.Repartition(
            org.apache.spark.sql.internal.SQLConf.get().numShufflePartitions(), true, plan)
        : new org.apache.spark.sql.catalyst.plans.logical.RepartitionByExpression(
            TapPlacement.seq(new ArrayList<Expression>(parts)), plan, scala.Option.empty(),
            scala.Option.empty());
    List<Attribute> visible = TapPlacement.attributes(shared.output());
    visible.removeIf(a -> a.exprId().equals(child.id().exprId()));
    at.placedAlready(new Placed(shared, visible, child.id(), null, child.origin(),
        child.idKeys()));
    return new Numbered(shared, visible, child.visible().size(), direct.size());
  }

  /** {@code plan} with {@code function} over its partition up to the current row, as a column
   * named {@code name}. */
  private static LogicalPlan runningWindow(Expression function, String name,
      List<Attribute> parts, List<SortOrder> order, LogicalPlan plan) {
    Alias value = TapPlacement.alias(windowed(function, parts, order), name);
    return new Window(TapPlacement.seq(List.<NamedExpression>of(value)),
        TapPlacement.seq(new ArrayList<Expression>(parts)), TapPlacement.seq(order), plan,
        scala.Option.empty());
  }

  /** {@code e} reading {@code to} where it read {@code from} (by position). */
  private static Expression rebound(Expression e, List<Attribute> from, List<Attribute> to) {
    return e.transformDown(new scala.runtime.AbstractPartialFunction<>() {
      @Override
      public boolean isDefinedAt(Expression x) {
        return x instanceof Attribute;
      }

      @Override
      public Expression apply(Expression x) {
        for (int i = 0; i < from.size(); i++) {
          if (from.get(i).exprId().equals(((Attribute) x).exprId())) {
            return to.get(i);
          }
        }
        throw new UnsupportedPlan("the plan operator Window aggregating " + x.sql()
            + " (not a column of its input)");
      }
    });
  }

  private static SortOrder ascending(Expression e) {
    return new SortOrder(e, Ascending$.MODULE$, NullsFirst$.MODULE$, TapPlacement.seq(List.of()));
  }

  /** {@code function} over the rows of the partition up to the current row, by {@code order}. */
  private static WindowExpression windowed(Expression function, List<Attribute> partition,
      List<SortOrder> order) {
    return new WindowExpression(function, new WindowSpecDefinition(
        TapPlacement.seq(new ArrayList<Expression>(partition)), TapPlacement.seq(order),
        new SpecifiedWindowFrame(RowFrame$.MODULE$, UnboundedPreceding$.MODULE$,
            CurrentRow$.MODULE$)));
  }

  /** "Rank" (rank, dense_rank, row_number), "RowFrame" or "RangeFrame" (an aggregate from the
   * partition's start to the current row, ordered), else null (plan_capture.py's
   * {@code _running_frame}). */
  private static String runningKind(NamedExpression named) {
    Expression body = named instanceof Alias a ? a.child() : (Expression) named;
    if (!(body instanceof WindowExpression w)) {
      return null;
    }
    Expression f = w.windowFunction();
    if (f instanceof Rank || f instanceof DenseRank || f instanceof RowNumber) {
      return "Rank";
    }
    if (!(f instanceof AggregateExpression) || w.windowSpec().orderSpec().isEmpty()
        || !(w.windowSpec().frameSpecification() instanceof SpecifiedWindowFrame frame)
        || frame.lower() != UnboundedPreceding$.MODULE$ || frame.upper() != CurrentRow$.MODULE$) {
      return null;
    }
    return frame.frameType() == RowFrame$.MODULE$ ? "RowFrame" : "RangeFrame";
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
