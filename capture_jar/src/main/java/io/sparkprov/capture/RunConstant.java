package io.sparkprov.capture;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.EmptyBlock$;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A long that is constant for a run but differs between runs (a node id's seed, a source's TOKEN
 * mask). A literal would be inlined into the generated code, so every run would generate a class
 * of its own: Spark's codegen cache would miss and the JIT would start again from the
 * interpreter for each run's stages (the pipeline's captured run spent 0.45 s more that way:
 * bench/README.md, "One class per plan shape"). This expression's generated code reads the
 * value from the stage's references instead, so the same plan shape generates the same code in
 * every run. Deterministic and never null; not foldable, so the optimizer does not turn it back
 * into a literal.
 */
public final class RunConstant extends Expression implements Serializable {
  private static final long serialVersionUID = 1L;

  private final long value;

  public RunConstant(long value) {
    this.value = value;
  }

  @Override
  public Seq<Expression> children() {
    return CollectionConverters.asScala(List.<Expression>of()).toList();
  }

  @Override
  public Expression withNewChildrenInternal(IndexedSeq<Expression> children) {
    return this;
  }

  @Override
  public boolean foldable() {
    return false;
  }

  @Override
  public boolean nullable() {
    return false;
  }

  @Override
  public DataType dataType() {
    return DataTypes.LongType;
  }

  @Override
  public String prettyName() {
    return "sparkprov_run_constant";
  }

  @Override
  public Object eval(InternalRow input) {
    return value;
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    String ref = ctx.addReferenceObj("sparkprovRunConstant", value, "java.lang.Long");
    return ExprCode.apply(
        EmptyBlock$.MODULE$,
        FalseLiteral$.MODULE$,
        JavaCode$.MODULE$.expression(ref + ".longValue()", DataTypes.LongType));
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
    return value;
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof RunConstant;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof RunConstant c && c.value == value;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(value);
  }
}
