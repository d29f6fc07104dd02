package io.sparkprov.capture;

import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import scala.collection.immutable.Seq;

/**
 * A semi, anti or existence join's capture ({@link SemiJoins}): the join Spark planned, rebuilt
 * as a join of the left rows to their matches (left outer or inner), estimated as the join it
 * stands for. Spark's size-only estimate of a semi or anti join is its left side's; of a left
 * outer or inner join, the product of both sides' sizes (TPC-H q20: 4.9e26 bytes where plain
 * estimates 4.6e4). An estimate that large made every join above it a sort merge join where
 * plain Spark broadcasts, with shuffles that adaptive execution could not take back
 * (bench/README.md). This node holds the rebuilt join and reports its left side's statistics;
 * it is planned as the join itself ({@link Planned}, a strategy the extension installs), so it
 * changes the estimate only, never the plan's rows.
 */
public final class SizedAsSemiJoin extends LogicalPlan {
  private final LogicalPlan child;

  public SizedAsSemiJoin(LogicalPlan child) {
    this.child = child;
  }

  /** {@code join} under this node where the capture extension is on (its strategy plans it). */
  static LogicalPlan over(Join join) {
    return new SizedAsSemiJoin(join);
  }

  LogicalPlan child() {
    return child;
  }

  @Override
  public Seq<LogicalPlan> children() {
    return scala.collection.immutable.List$.MODULE$.<LogicalPlan>empty().$colon$colon(child);
  }

  @Override
  public Seq<Attribute> output() {
    return child.output();
  }

  /** The left side's statistics of the join below (through anything between), as Spark
   * estimates the semi join this one stands for. */
  @Override
  public Statistics stats() {
    LogicalPlan node = child;
    while (!(node instanceof Join) && node.children().size() == 1) {
      node = node.children().head();
    }
    return node instanceof Join join ? join.left().stats() : child.stats();
  }

  @Override
  public LogicalPlan withNewChildrenInternal(
      scala.collection.immutable.IndexedSeq<LogicalPlan> newChildren) {
    return new SizedAsSemiJoin(newChildren.head());
  }

  @Override
  public int productArity() {
    return 1;
  }

  @Override
  public Object productElement(int n) {
    if (n != 0) {
      throw new IndexOutOfBoundsException(n);
    }
    return child;
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof SizedAsSemiJoin;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof SizedAsSemiJoin s && s.child.equals(child);
  }

  @Override
  public int hashCode() {
    return child.hashCode() * 31 + 7;
  }

  /** Plans {@link SizedAsSemiJoin} as its child: the node exists for the estimate alone. */
  public static final class Planned extends SparkStrategy {
    public static final Planned INSTANCE = new Planned();

    private Planned() {}

    @Override
    public Seq<SparkPlan> apply(LogicalPlan plan) {
      if (plan instanceof SizedAsSemiJoin sized) {
        return scala.collection.immutable.List$.MODULE$.<SparkPlan>empty()
            .$colon$colon(planLater(sized.child()));
      }
      return scala.collection.immutable.List$.MODULE$.empty();
    }
  }
}
