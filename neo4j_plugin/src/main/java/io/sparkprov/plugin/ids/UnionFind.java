package io.sparkprov.plugin.ids;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Union-find over ids; {@link #groups()} lists each group of two or more. */
final class UnionFind {
  private final Map<Long, Long> parent = new HashMap<>();

  long find(long x) {
    long root = x;
    Long p;
    while ((p = parent.get(root)) != null && p != root) {
      root = p;
    }
    parent.putIfAbsent(x, x);
    long y = x;
    while (y != root) {
      long next = parent.get(y);
      parent.put(y, root);
      y = next;
    }
    return root;
  }

  void union(long a, long b) {
    if (a == b) {
      return;
    }
    long ra = find(a);
    long rb = find(b);
    if (ra != rb) {
      parent.put(ra, rb);
    }
  }

  Map<Long, List<Long>> groups() {
    Map<Long, List<Long>> out = new HashMap<>();
    for (long x : new ArrayList<>(parent.keySet())) {
      out.computeIfAbsent(find(x), r -> new ArrayList<>()).add(x);
    }
    out.values().removeIf(g -> g.size() < 2);
    return out;
  }
}
