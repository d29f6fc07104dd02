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
 * A file source row's physical position: its file's ordinal in the source's sorted file list,
 * shifted left by {@value FileOrdinals#ROW_BITS} bits, OR its row index in that file (Spark's
 * {@code _metadata.file_path} and {@code _metadata.row_index}, parquet). The same file read with
 * another partitioning, split size or file order gives every row the same position, where
 * {@code monotonically_increasing_id()} (partition {@code << 33} | offset) does not: a source
 * row's TOKEN label {@code <relation>#<file>.<row>} then names the same row in every run over the
 * same files (docs/capture.md, "Source rows identified by their files").
 *
 * <p>{@link FileOrdinals} finds the file's ordinal; a path outside the list or a row index past
 * its bits fails the task naming it, never with a wrong position.
 */
public final class SourcePosition extends Expression implements Serializable {
  private static final long serialVersionUID = 1L;

  private final Expression path;
  private final Expression rowIndex;
  private final FileOrdinals ordinals;

  /** The position of a row read from one of {@code files} (sorted, as the source lists them). */
  public SourcePosition(Expression path, Expression rowIndex, List<String> files) {
    this(path, rowIndex, new FileOrdinals(files));
  }

  private SourcePosition(Expression path, Expression rowIndex, FileOrdinals ordinals) {
    this.path = path;
    this.rowIndex = rowIndex;
    this.ordinals = ordinals;
  }

  @Override
  public Seq<Expression> children() {
    return CollectionConverters.asScala(List.of(path, rowIndex)).toList();
  }

  @Override
  public Expression withNewChildrenInternal(IndexedSeq<Expression> children) {
    List<Expression> c = CollectionConverters.asJava(children);
    return new SourcePosition(c.get(0), c.get(1), ordinals);
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
    return "sparkprov_source_position";
  }

  @Override
  public Object eval(InternalRow input) {
    Object file = path.eval(input);
    Object row = rowIndex.eval(input);
    if (file == null || row == null) {
      throw new IllegalStateException("sparkprov: a source row without its file or row index");
    }
    return FileOrdinals.position(ordinals.applyAsLong(file), (Long) row);
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    // Typed as a JDK interface: Spark compiles generated code with a class loader that need
    // not see this jar's classes (as TapExpression).
    String ref = ctx.addReferenceObj("sparkprovPosition", ordinals,
        "java.util.function.ToLongFunction");
    ExprCode file = path.genCode(ctx);
    ExprCode row = rowIndex.genCode(ctx);
    String value = ctx.freshName("sparkprovPos");
    Block block = file.code().$plus(row.code());
    block = block.$plus(new CodeBlock(
        scalaSeq(List.of("long " + value + " = ", ";\nif (", " < 0L || (", " >>> " + FileOrdinals.ROW_BITS
            + ") != 0L) { throw new IllegalStateException(\"sparkprov: row index \" + ", " + \" of a"
            + " file is past the " + FileOrdinals.ROW_BITS + " bits of a position\"); }\n" + value + " |= "
            + ref + ".applyAsLong(", ");\n")),
        scalaSeq(List.<JavaCode>of(row.value(), row.value(), row.value(), row.value(),
            file.value()))));
    return ExprCode.apply(block, FalseLiteral$.MODULE$,
        JavaCode$.MODULE$.variable(value, DataTypes.LongType));
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    return switch (n) {
      case 0 -> path;
      case 1 -> rowIndex;
      case 2 -> ordinals.files();
      default -> throw new IndexOutOfBoundsException(n);
    };
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof SourcePosition;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof SourcePosition p && p.path.equals(path)
        && p.rowIndex.equals(rowIndex) && p.ordinals.files().equals(ordinals.files());
  }

  @Override
  public int hashCode() {
    return (path.hashCode() * 31 + rowIndex.hashCode()) * 31 + ordinals.files().hashCode();
  }

  private static <T> Seq<T> scalaSeq(List<T> items) {
    return CollectionConverters.asScala(items).toList();
  }
}
