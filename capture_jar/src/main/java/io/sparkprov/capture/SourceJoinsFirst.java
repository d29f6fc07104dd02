package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.BitwiseXor;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys$;
import org.apache.spark.sql.catalyst.plans.InnerLike;
import org.apache.spark.sql.catalyst.plans.logical.BROADCAST$;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.HintInfo;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.internal.SQLConf;
import scala.jdk.javaapi.CollectionConverters;
import scala.math.BigInt;

/**
 * A source's capture point runs above the first inner join its rows meet, so it sends only the
 * rows that join keeps: {@code Join(Project(.., id, Filter(sourceTap, child)), other)} becomes
 * {@code Project(joinOutput, Filter(sourceTap', Join(Project(.., id, child), other)))}. A source
 * row without a partner reaches no output, as a row a filter drops ({@link SourceFiltersFirst}):
 * it is not stored, and a trace that asks for it by its file and row is told it reaches nothing
 * (docs/capture.md, "Source rows a join drops"). A selective join over a large table (TPC-H's
 * lineitem joined with a few parts, a nation or a year of orders) then sends the rows it keeps,
 * not the table.
 *
 * <p>Only a SOURCE tap whose rows are positioned by file moves (the same condition as {@link
 * SourceFiltersFirst}'s), and only from a join's side made of projections and filters over it
 * with no other capture point between, so every capture point that reads the source's ids sits
 * above the join and sees only the rows the join keeps. The tap's id is read above the join from
 * the projection that gives it (an attribute the join carries), its position from the id (the
 * position XOR the source's mask: XOR is its own inverse), its values from the columns the join
 * then carries too. A row that comes again above the join (a row with several partners: a
 * dimension's row matched by many facts) is sent once per task ({@link Tap#aboveJoin}, {@link
 * MetPositions}). A side Spark will broadcast keeps its tap at its scan ({@link #streamed}):
 * every task of the other side meets its rows. Installed after {@link SourceRowsOnce}, whose
 * lookup the moved tap keeps. The session's conf {@value #CONF} = false turns it off (every row
 * the source's filters keep is captured).
 */
public final class SourceJoinsFirst extends Rule<LogicalPlan> {
  public static final SourceJoinsFirst INSTANCE = new SourceJoinsFirst();
  /** The Spark conf that turns the rule off ("false"): a source's rows a join drops are then
   * captured too. */
  public static final String CONF = "spark.sparkprov.sourceJoinsFirst";

  private SourceJoinsFirst() {}

  /** Adds the rule to {@code experimental}'s optimizations, once. */
  public static void install(ExperimentalMethods experimental) {
    ExtraOptimizations.add(experimental, INSTANCE);
  }

  @Override
  public String ruleName() {
    return "io.sparkprov.capture.SourceJoinsFirst";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!ExtraOptimizations.enabled(CONF)) {
      return plan;
    }
    return moved(ExtraOptimizations.inSubqueries(plan, SourceJoinsFirst::moved));
  }

  /** {@code plan} (a query's or a subquery's) with its source taps above their first join. */
  private static LogicalPlan moved(LogicalPlan plan) {
    return plan.transformUp(new scala.runtime.AbstractPartialFunction<>() {
      @Override
      public boolean isDefinedAt(LogicalPlan node) {
        return node instanceof Join j && j.joinType() instanceof InnerLike;
      }

      @Override
      public LogicalPlan apply(LogicalPlan node) {
        return isDefinedAt(node) ? above((Join) node) : node;
      }
    });
  }

  /** {@code join} with the movable taps of its sides above it, or as it is. */
  private static LogicalPlan above(Join join) {
    boolean[] streamed = streamed(join);
    Lifted left = streamed[0] ? lifted(join.left()) : null;
    Lifted right = streamed[1] ? lifted(join.right()) : null;
    if (left == null && right == null) {
      return join;
    }
    LogicalPlan top = join.withNewChildren(CollectionConverters.asScala(List.of(
        left == null ? join.left() : left.plan, right == null ? join.right() : right.plan))
        .toList());
    for (Lifted side : new Lifted[] {left, right}) {
      if (side != null) {
        top = new Filter(side.tap, top);
      }
    }
    // the join's own columns to the operators above, as before
    return new Project(seq(new ArrayList<>(CollectionConverters.asJava(join.output()))), top);
  }

  /**
   * Which of {@code join}'s sides (left, right) Spark will not broadcast, as its join selection
   * would choose: a broadcast side's rows are met by every task of the other side, so a tap
   * above the join would send each of them once per task (a dimension of 100k rows joined by
   * 200 tasks: 20M rows), where at its scan it sends each once. Not a side hinted BROADCAST (the
   * other side is then streamed), nor one whose estimated size fits under the broadcast threshold
   * (of two that fit, the smaller, as Spark builds on it); neither side of a join without an
   * equality (a nested loop or cartesian product meets every row many times). A side this
   * misjudges (adaptive execution broadcasting a side larger than estimated) costs bytes, never
   * lineage: its rows are sent once per task that meets them.
   */
  static boolean[] streamed(Join join) {
    if (ExtractEquiJoinKeys$.MODULE$.unapply(join).isEmpty()) {
      return new boolean[] {false, false};
    }
    boolean leftHinted = broadcastHint(join.hint().leftHint());
    boolean rightHinted = broadcastHint(join.hint().rightHint());
    if (leftHinted || rightHinted) {
      return new boolean[] {!leftHinted, !rightHinted};
    }
    SQLConf conf = SQLConf.get();
    long threshold = conf.autoBroadcastJoinThreshold();
    scala.Option<Object> adaptive = conf.getConf(SQLConf.ADAPTIVE_AUTO_BROADCASTJOIN_THRESHOLD());
    if (conf.adaptiveExecutionEnabled() && adaptive.isDefined()) {
      threshold = Math.max(threshold, (Long) adaptive.get());
    }
    BigInt left = join.left().stats().sizeInBytes();
    BigInt right = join.right().stats().sizeInBytes();
    boolean leftFits = threshold >= 0 && left.$less$eq(BigInt.apply(threshold));
    boolean rightFits = threshold >= 0 && right.$less$eq(BigInt.apply(threshold));
    if (leftFits && rightFits) {
      boolean buildRight = right.$less$eq(left);
      return new boolean[] {buildRight, !buildRight};
    }
    return new boolean[] {!leftFits, !rightFits};
  }

  private static boolean broadcastHint(scala.Option<HintInfo> hint) {
    return hint.isDefined() && hint.get().strategy().isDefined()
        && hint.get().strategy().get() == BROADCAST$.MODULE$;
  }

  /**
   * A join's side without its source tap, and the tap as the join's output gives its inputs;
   * or null where no tap moves: the side is not projections and filters (without capture
   * points) over a file source's capture point, or the projection over the tap gives no id.
   */
  private record Lifted(LogicalPlan plan, TapExpression tap) {}

  private static Lifted lifted(LogicalPlan node) {
    if (node instanceof Project p && p.child() instanceof Filter f && movable(f)) {
      return idFrom(p, f);
    }
    if (node instanceof Project p && !hasTap(p.expressions())) {
      Lifted inner = lifted(p.child());
      return inner == null ? null : new Lifted(carrying(p, inner.plan, inner.tap), inner.tap);
    }
    if (node instanceof Filter f && !hasTap(f.expressions())) {
      Lifted inner = lifted(f.child());
      return inner == null ? null : new Lifted(new Filter(f.condition(), inner.plan), inner.tap);
    }
    return null;
  }

  /** A file source's capture point, not moved before. */
  private static boolean movable(Filter f) {
    return SourceFiltersFirst.isSourceTap(f.condition())
        && !((TapExpression) f.condition()).aboveJoin();
  }

  /**
   * The tap of {@code f} read from {@code p}'s output: its id from the column {@code p} gives
   * it (an alias of the tap's id input), its position from that id, its values as they are
   * ({@code p} then carries their columns); null where {@code p} gives no id or the tap's id is
   * not its position XOR a mask.
   */
  private static Lifted idFrom(Project p, Filter f) {
    TapExpression tap = (TapExpression) f.condition();
    int idAt = tap.plan().input("id");
    int rownoAt = tap.plan().input("rowno");
    List<Expression> inputs = new ArrayList<>(CollectionConverters.asJava(tap.children()));
    if (!(inputs.get(idAt) instanceof BitwiseXor xor)
        || !xor.left().semanticEquals(inputs.get(rownoAt))) {
      return null;
    }
    Attribute id = null;
    for (NamedExpression e : CollectionConverters.asJava(p.projectList())) {
      if (e instanceof Alias a && a.child().semanticEquals(xor)) {
        id = a.toAttribute();
      }
    }
    if (id == null) {
      return null;
    }
    inputs.set(idAt, id);
    inputs.set(rownoAt, new BitwiseXor(id, xor.right()));
    TapExpression moved = tap.aboveJoin(inputs);
    Project keeping = new Project(p.projectList(), f.child());
    return new Lifted(carrying(keeping, keeping.child(), moved), moved);
  }

  /** {@code p} over {@code child}, also giving the columns {@code tap} reads that it lacks. */
  private static Project carrying(Project p, LogicalPlan child, TapExpression tap) {
    List<NamedExpression> columns = new ArrayList<>(CollectionConverters.asJava(p.projectList()));
    AttributeSet given = p.outputSet();
    scala.collection.Iterator<Attribute> read = tap.references().iterator();
    while (read.hasNext()) {
      Attribute a = read.next();
      if (!given.contains(a)) {
        columns.add(a);
      }
    }
    return new Project(seq(columns), child);
  }

  private static boolean hasTap(scala.collection.Seq<Expression> expressions) {
    for (Expression e : CollectionConverters.asJava(expressions)) {
      if (TapExpression.contains(e, TapExpression.class)) {
        return true;
      }
    }
    return false;
  }

  private static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toList();
  }
}
