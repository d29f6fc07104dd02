package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.junit.jupiter.api.Test;

class NodeIdsTest {
  @Test
  void unhashLongUndoesXxh64sHashOfOneLong() {
    SplittableRandom random = new SplittableRandom(7);
    long[] edges = {0L, 1L, -1L, Long.MIN_VALUE, Long.MAX_VALUE, NodeIds.SPARK_SEED};
    for (long x : edges) {
      assertEquals(x, NodeIds.unhashLong(XXH64.hashLong(x, 42L), 42L));
      assertEquals(x, XXH64.hashLong(NodeIds.unhashLong(x, 42L), 42L));
    }
    for (int i = 0; i < 100_000; i++) {
      long x = random.nextLong();
      long seed = random.nextLong();
      assertEquals(x, NodeIds.unhashLong(XXH64.hashLong(x, seed), seed));
      assertEquals(x, XXH64.hashLong(NodeIds.unhashLong(x, seed), seed));
    }
  }

  @Test
  void inverseIsTheInverseModuloTwoToThe64() {
    SplittableRandom random = new SplittableRandom(11);
    for (int i = 0; i < 10_000; i++) {
      long odd = random.nextLong() | 1L;
      assertEquals(1L, odd * NodeIds.inverse(odd));
    }
  }
}
