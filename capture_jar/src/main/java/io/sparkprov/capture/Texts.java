package io.sparkprov.capture;

import java.nio.charset.StandardCharsets;

/**
 * Texts from data kept within the wire's limit: sparkprov.limits.truncate, byte for byte. A value
 * of any size never fails a captured job; one over the limit travels as its longest prefix cut at
 * a character boundary, followed by the mark {@code …[truncated: N bytes]} (N: the whole value's
 * UTF-8 size), all of it at most the limit.
 */
final class Texts {
  private Texts() {}

  static String mark(long size) {
    return "…[truncated: " + size + " bytes]";
  }

  /** {@code utf8} itself if it fits in {@code limit} bytes, else its truncation. */
  static byte[] truncate(byte[] utf8, int limit) {
    if (utf8 == null || utf8.length <= limit) {
      return utf8;
    }
    byte[] mark = mark(utf8.length).getBytes(StandardCharsets.UTF_8);
    int cut = Math.max(0, limit - mark.length);
    // utf8[cut] is the first byte left out: a continuation byte means its character is cut, so
    // its leading bytes go too.
    while (cut > 0 && (utf8[cut] & 0xC0) == 0x80) {
      cut--;
    }
    byte[] out = new byte[cut + mark.length];
    System.arraycopy(utf8, 0, out, 0, cut);
    System.arraycopy(mark, 0, out, cut, mark.length);
    return out;
  }

  /** As {@link #truncate(byte[], int)}, for a text held as a String. */
  static String truncate(String text, int limit) {
    // A char is at most 3 UTF-8 bytes: short strings need no encoding.
    if (text == null || (long) text.length() * 3 <= limit) {
      return text;
    }
    byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
    return utf8.length <= limit ? text : new String(truncate(utf8, limit), StandardCharsets.UTF_8);
  }

  /** Truncates every entry of {@code column} in place; returns how many were. */
  static int truncateAll(byte[][] column, int limit) {
    int cut = 0;
    for (int r = 0; r < column.length; r++) {
      byte[] v = column[r];
      if (v != null && v.length > limit) {
        column[r] = truncate(v, limit);
        cut++;
      }
    }
    return cut;
  }

  /** As {@link #truncateAll(byte[][], int)}, for Strings. */
  static int truncateAll(String[] column, int limit) {
    int cut = 0;
    for (int r = 0; r < column.length; r++) {
      String v = column[r];
      String kept = truncate(v, limit);
      if (kept != v) {
        column[r] = kept;
        cut++;
      }
    }
    return cut;
  }
}
