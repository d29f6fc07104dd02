package io.sparkprov.plugin.ids;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A per-call cache of values read from the store, bounded: past {@link #CAP} entries the oldest
 * is dropped and read again if asked for. Only for values that are the same whenever they are
 * read within the call (a node's split path, its birth id, a root after the call's merges), so
 * dropping one changes nothing but the time. One id call may walk millions of nodes (a set
 * refined with its hubs' edges at 10M rows), and unbounded caches of them filled Neo4j's heap.
 */
final class Memo<K, V> extends LinkedHashMap<K, V> {
  /** Entries kept: about 50 MB of boxed keys and values at most per cache. */
  static final int CAP = 1 << 19;

  /** The cap of new memos: {@link #CAP}, but a test sets it tiny to drop entries at once. */
  static volatile int newCap = CAP;

  private final int cap;

  Memo() {
    this(newCap);
  }

  Memo(int cap) {
    this.cap = cap;
  }

  @Override
  protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
    return size() > cap;
  }
}
