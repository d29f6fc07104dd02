package io.sparkprov.plugin.write;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * One edge block of a flush: edge {@code k} derives {@code dst[k]} from {@code src[k]}, both
 * node ids of run {@code run} (an end not stored yet becomes a placeholder). Keys as sent: {@code
 * run, src, dst}. The Python mirror is the TypedDict {@code sparkprov.blocks.EdgeBlock}; see
 * {@link NodeBlock} for the shared example payload.
 */
public record EdgeBlock(String run, long[] src, long[] dst) {

  /** Parses edge block {@code position} of a call; a malformed block names itself and the field. */
  public static EdgeBlock parse(Map<String, Object> map, int position) {
    BlockFields f = new BlockFields(map, "edge block " + position);
    long[] src = f.longs("src");
    long[] dst = f.longs("dst");
    if (src.length != dst.length) {
      throw f.error("dst", "has " + dst.length + " ids for " + src.length + " in src");
    }
    return new EdgeBlock(f.string("run"), src, dst);
  }

  public static List<EdgeBlock> parseAll(List<Map<String, Object>> blocks) {
    if (blocks == null) {
      throw new IllegalArgumentException("edges is null");
    }
    List<EdgeBlock> out = new ArrayList<>(blocks.size());
    for (int b = 0; b < blocks.size(); b++) {
      out.add(parse(blocks.get(b), b));
    }
    return out;
  }

  int size() {
    return src.length;
  }

  /** Edges {@code from} (inclusive) to {@code to} (exclusive) as a block of their own. */
  EdgeBlock slice(int from, int to) {
    return new EdgeBlock(run, Arrays.copyOfRange(src, from, to), Arrays.copyOfRange(dst, from, to));
  }
}
