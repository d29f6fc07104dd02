package io.sparkprov.capture;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GetStructField;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The physical positions of a file scan's rows, for the extension's sources (what
 * capture_agent/sources.py's file_positions gives Python's): the scan with Spark's hidden
 * {@code _metadata} column added (as the analyzer adds it where a query names it; the file
 * source strategy reads it from the relation's output), and each row's {@link SourcePosition}
 * from its file path and row index. A row's TOKEN label then names the same row of the same file
 * in every run. Only where the format gives a row index (parquet) and the relation has no column
 * of its own named {@code _metadata}.
 *
 * @param scan the relation with its metadata column
 * @param position the row's position (file ordinal above row index)
 * @param files the scan's files, sorted, as the run marker lists them
 */
record FilePositions(LogicalPlan scan, Expression position, List<String> files) {
  private static final String META = "_metadata";
  /** As capture_agent/sources.py's MAX_FILES: past it, file ordinals do not fit their bits. */
  private static final int MAX_FILES = 1 << 30;

  /** The positions of {@code leaf}'s rows, or null where the scan does not give them. */
  static FilePositions of(LogicalPlan leaf) {
    if (!(leaf instanceof LogicalRelation relation)
        || !(relation.relation() instanceof HadoopFsRelation fs)
        || relation.output().exists(a -> a.name().equals(META))) {
      return null;
    }
    LogicalRelation withMeta = relation.withMetadataColumns();
    List<AttributeReference> output = new ArrayList<>(CollectionConverters.asJava(withMeta.output()));
    int at = -1;
    for (int i = 0; i < output.size(); i++) {
      at = output.get(i).name().equals(META) ? i : at;
    }
    if (at < 0 || !(output.get(at).dataType() instanceof StructType struct)) {
      return null;
    }
    List<String> fields = Arrays.asList(struct.fieldNames());
    String[] files = fs.location().inputFiles();
    if (!fields.contains("file_path") || !fields.contains("row_index") || files.length == 0
        || files.length > MAX_FILES) {
      return null;
    }
    // Only the two fields read: the scan then makes no other metadata field per row (the
    // optimizer's nested schema pruning, which ran before capture, does so for a query's own).
    StructType read = new StructType(new StructField[] {
        struct.apply("file_path"), struct.apply("row_index")});
    AttributeReference meta = output.get(at).withDataType(read);
    output.set(at, meta);
    LogicalRelation scan = withMeta.copy(withMeta.relation(), TapPlacement.seq(output),
        withMeta.catalogTable(), withMeta.isStreaming(), withMeta.stream());
    Arrays.sort(files); // as Taps.sortedInputFiles sorts them for Python
    Expression position = new SourcePosition(field(meta, 0, "file_path"),
        field(meta, 1, "row_index"), List.of(files));
    return new FilePositions(scan, position, List.of(files));
  }

  private static Expression field(Attribute struct, int ordinal, String name) {
    return new GetStructField(struct, ordinal, scala.Option.apply(name));
  }
}
