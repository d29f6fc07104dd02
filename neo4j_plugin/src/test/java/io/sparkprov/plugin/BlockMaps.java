package io.sparkprov.plugin;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Blocks as ingest sends them to {@code sparkprov.write} (sparkprov.blocks), for the tests. */
public final class BlockMaps {
  public static final String RUN = "run-1";

  private BlockMaps() {}

  /** A node block as ingest sends it: every key of the contract, TOKENs of one relation. */
  public static Map<String, Object> nodes(String op, List<Long> ids, String... split) {
    Map<String, Object> block = new HashMap<>();
    block.put("run", RUN);
    block.put("op", op);
    block.put("ids", ids);
    block.put("label", op.toLowerCase());
    block.put("labels", List.of());
    block.put("relation", "R");
    block.put("values", List.of());
    block.put("shared", false);
    block.put("split", List.of(split));
    block.put("attribute_names", List.of());
    block.put("attribute_values", List.of());
    block.put("null_rows", List.of());
    return block;
  }

  /** An edge block: edge k derives dst[k] from src[k]. */
  public static Map<String, Object> edges(long[][] pairs) {
    List<Long> src = new ArrayList<>();
    List<Long> dst = new ArrayList<>();
    for (long[] p : pairs) {
      src.add(p[0]);
      dst.add(p[1]);
    }
    return Map.of("run", RUN, "src", src, "dst", dst);
  }
}
