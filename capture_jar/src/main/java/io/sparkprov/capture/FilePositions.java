package io.sparkprov.capture;

import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GetStructField;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
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
    LogicalRelation scan = relation.withMetadataColumns();
    Attribute meta = null;
    for (Attribute a : CollectionConverters.asJava(scan.output())) {
      if (a.name().equals(META)) {
        meta = a;
      }
    }
    if (meta == null || !(meta.dataType() instanceof StructType struct)) {
      return null;
    }
    List<String> fields = Arrays.asList(struct.fieldNames());
    int path = fields.indexOf("file_path");
    int row = fields.indexOf("row_index");
    String[] files = fs.location().inputFiles();
    if (path < 0 || row < 0 || files.length == 0 || files.length > MAX_FILES) {
      return null;
    }
    Arrays.sort(files); // as Taps.sortedInputFiles sorts them for Python
    Expression position = new SourcePosition(field(meta, path, "file_path"),
        field(meta, row, "row_index"), List.of(files));
    return new FilePositions(scan, position, List.of(files));
  }

  private static Expression field(Attribute struct, int ordinal, String name) {
    return new GetStructField(struct, ordinal, scala.Option.apply(name));
  }
}
