package io.sparkprov.plugin.ids;

import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;

/**
 * A multiset of Neo4j's internal entity ids (of nodes or of relationships), a bit per id: the
 * store hands them out densely from zero, so 24M relationships take a few megabytes here where a
 * set of boxed ids takes a gigabyte. An id held twice (a relationship deleted and its id reused
 * while both writes wait) and an id past a bit set's range are counted in a small map.
 */
final class EntityIds {
  private final BitSet once = new BitSet();
  private final Map<Long, Integer> more = new HashMap<>();

  void add(long id) {
    if (id >= 0 && id <= Integer.MAX_VALUE && !once.get((int) id)) {
      once.set((int) id);
    } else {
      more.merge(id, 1, Integer::sum);
    }
  }

  /** Removes one occurrence of {@code id} (none held: nothing). */
  void remove(long id) {
    Integer extra = more.get(id);
    if (extra != null) {
      if (extra == 1) {
        more.remove(id);
      } else {
        more.put(id, extra - 1);
      }
    } else if (id >= 0 && id <= Integer.MAX_VALUE) {
      once.clear((int) id);
    }
  }

  boolean contains(long id) {
    return (id >= 0 && id <= Integer.MAX_VALUE && once.get((int) id)) || more.containsKey(id);
  }

  boolean isEmpty() {
    return once.isEmpty() && more.isEmpty();
  }

  void clear() {
    once.clear();
    more.clear();
  }
}
