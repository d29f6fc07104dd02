package io.sparkprov.capture;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.Block;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A capture point as a Catalyst expression: always true, non-deterministic, over the struct of
 * the tap's inputs. Whole-stage codegen inlines it: the generated code evaluates the struct
 * and hands the {@link InternalRow} to the {@link Tap}, with no conversion to external types
 * (a Java UDF would build a Row of Java Strings and boxed Longs for every row). Spark
 * serializes the Tap with the stage's references, so each task has its own copy and state, as
 * with the UDF.
 */
public final class TapExpression extends Expression implements Serializable {
  private static final long serialVersionUID = 1L;

  private final Expression child;
  private final Tap tap;

  public TapExpression(Expression child, Tap tap) {
    this.child = child;
    this.tap = tap;
  }

  @Override
  public Seq<Expression> children() {
    return scalaSeq(List.of(child));
  }

  @Override
  public Expression withNewChildrenInternal(IndexedSeq<Expression> children) {
    return new TapExpression(children.apply(0), tap);
  }

  @Override
  public boolean nullable() {
    return false;
  }

  @Override
  public DataType dataType() {
    return DataTypes.BooleanType;
  }

  @Override
  public boolean deterministic() {
    return false;
  }

  @Override
  public String prettyName() {
    return "sparkprov_tap_" + tap.plan().key();
  }

  @Override
  public Object eval(InternalRow input) {
    tap.accept((InternalRow) child.eval(input));
    return Boolean.TRUE;
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    ExprCode row = child.genCode(ctx);
    // Typed as a JDK interface: Spark compiles the generated code with a class loader that
    // need not see this jar's classes (the driver loads them with a loader of their own).
    String ref = ctx.addReferenceObj("sparkprovTap", tap, "java.util.function.Consumer");
    Block call = new CodeBlock(
        scalaSeq(List.of(ref + ".accept(", " ? null : (InternalRow) ", ");\n")),
        scalaSeq(List.<JavaCode>of(row.isNull(), row.value())));
    return ExprCode.apply(row.code().$plus(call), FalseLiteral$.MODULE$,
        JavaCode$.MODULE$.literal("true", DataTypes.BooleanType));
  }

  @Override
  public int productArity() {
    return 2;
  }

  @Override
  public Object productElement(int n) {
    return switch (n) {
      case 0 -> child;
      case 1 -> tap;
      default -> throw new IndexOutOfBoundsException(n);
    };
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof TapExpression;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof TapExpression t && t.tap == tap && t.child.equals(child);
  }

  @Override
  public int hashCode() {
    return System.identityHashCode(tap) * 31 + child.hashCode();
  }

  private static <T> Seq<T> scalaSeq(List<T> items) {
    return CollectionConverters.asScala(items).toList();
  }
}
