package io.sparkprov.capture;

import java.io.Serializable;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The files of one source, sorted, and the ordinal bits of each ({@link SourcePosition}): a
 * file's ordinal shifted left by {@value #ROW_BITS}. Found once per file: the rows of one file
 * arrive together, so the last file's bits are kept. A path outside the list (the files changed
 * after the source was captured) fails with the path named.
 */
final class FileOrdinals implements Serializable, ToLongFunction<Object> {
  private static final long serialVersionUID = 1L;

  /** Bits of the row index, as in monotonically_increasing_id's record number. */
  static final int ROW_BITS = 33;

  /** Files a position can tell apart: 2^30, the ordinal bits left of a positive long. */
  static final int MAX_FILES = 1 << 30;

  private final List<String> files;
  private transient Map<String, Long> ordinals;
  private transient Last last;
  // The object Spark handed for the last file (a copy of its text is in last).
  private transient Object lastGiven;

  FileOrdinals(List<String> files) {
    if (files.size() > MAX_FILES) {
      throw new IllegalArgumentException("a source of " + files.size()
          + " files: positions tell at most " + MAX_FILES + " apart");
    }
    this.files = List.copyOf(files);
  }

  List<String> files() {
    return files;
  }

  private record Last(Object path, long bits) {}

  /**
   * A file's identity across the spellings Spark gives it: {@code _metadata.file_path} writes
   * {@code file:/a/b}, {@code inputFiles()} {@code file:///a/b}. Scheme, authority and the
   * decoded path; a text that is no URI is its own key.
   */
  static String key(String file) {
    try {
      URI uri = new URI(file);
      String authority = uri.getAuthority() == null ? "" : uri.getAuthority();
      String scheme = uri.getScheme() == null ? "" : uri.getScheme();
      return scheme + "://" + authority + uri.getPath();
    } catch (URISyntaxException e) {
      return file;
    }
  }

  private Map<String, Long> ordinals() {
    Map<String, Long> found = ordinals;
    if (found == null) {
      found = new HashMap<>(files.size() * 2);
      for (int i = 0; i < files.size(); i++) {
        found.put(key(files.get(i)), ((long) i) << ROW_BITS);
      }
      ordinals = found;
    }
    return found;
  }

  /** The ordinal bits of the file {@code file} (a UTF8String or a String). */
  @Override
  public long applyAsLong(Object file) {
    Last seen = last;
    // The same object is the same file: a scan hands one UTF8String per file for every row
    // (the constant column of _metadata.file_path), and Spark never changes a UTF8String's
    // bytes under it (a reused buffer is read through a new UTF8String per row). Comparing
    // the bytes of every row's path cost 20% of a light job (bench/README.md).
    if (seen != null && lastGiven == file) {
      return seen.bits();
    }
    if (seen != null && seen.path().equals(file)) {
      lastGiven = file;
      return seen.bits();
    }
    Long bits = ordinals().get(key(file.toString()));
    if (bits == null) {
      throw new IllegalStateException("sparkprov: the source row's file " + file
          + " is not one of the " + files.size() + " files listed when the source was captured"
          + " (did its files change during the job?)");
    }
    // A UTF8String may be a view of a row buffer the scan reuses: keep a copy.
    last = new Last(
        file instanceof UTF8String u ? UTF8String.fromBytes(u.getBytes().clone()) : file, bits);
    lastGiven = file;
    return bits;
  }

  /** The position of row {@code row} of the file whose ordinal bits are {@code bits}. */
  static long position(long bits, long row) {
    if (row < 0 || (row >>> ROW_BITS) != 0) {
      throw new IllegalStateException("sparkprov: row index " + row + " of a file is past the "
          + ROW_BITS + " bits of a position");
    }
    return bits | row;
  }
}
