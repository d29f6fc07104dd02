package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A semi or anti join's capture point over a join's pairs, a left row's pairs together. */
class MatchRunsTest {
  private static final Long NONE = null;

  /** A chunk of {@code capacity} rows of a semi join's (id, left, witnesses) or an anti join's
   * (id, left, right) inputs, the runs over it, and what each full chunk held when it went. */
  private static final class Fixture {
    final Chunk chunk;
    final MatchRuns runs;
    final Object[] refs = new Object[3];
    final Object[] writer;
    final List<String> sent = new ArrayList<>();
    final Tap.Runs kind;
    final List<String> excluded = new ArrayList<>();

    Fixture(Tap.Runs kind, int capacity, boolean record) {
      this.kind = kind;
      boolean anti = kind == Tap.Runs.ANTI;
      String name = anti ? "anti_join" : "semi_join";
      List<String> inputs = List.of("id", "left", anti ? "right" : "witnesses");
      List<String> types = List.of("id", "id", anti ? "id" : "ids");
      TapPlan plan = new TapPlan(name, "k#1", "run", "wf", "", List.of(), inputs, types,
          List.of("main"), "", 0, List.of(), "", false, 0, List.of(1L), List.of(), "", capacity,
          64, false);
      chunk = new Chunk(plan);
      writer = chunk.writer(refs);
      MatchRuns.Excluded recorder = kind != Tap.Runs.EXISTENCE ? null : new MatchRuns.Excluded() {
        @Override
        public int left() {
          return 1;
        }

        @Override
        public void exclude(long left, long match) {
          excluded.add(left + ":" + match);
        }
      };
      runs = new MatchRuns(kind, "k#1", chunk, refs, 2, record, this::sendIfFull, recorder);
    }

    void sendIfFull() {
      if (chunk.full()) {
        send();
      }
    }

    void send() {
      for (int r = 0; r < chunk.size(); r++) {
        sent.add(row(r));
      }
      chunk.clear();
    }

    private String row(int r) {
      long id = chunk.ids("id")[r];
      long left = chunk.ids("left")[r];
      String matches = kind != Tap.Runs.ANTI
          ? java.util.Arrays.toString(chunk.arrays("witnesses")[r])
          : Long.toString(chunk.ids("right")[r]);
      return id + "/" + left + ":" + matches;
    }

    /** One pair written as the generated code writes it, then handed over: whether it passes. */
    boolean pair(long run, long id, long left, Long right) {
      long[] cells = (long[]) writer[0];
      boolean[] nulls = (boolean[]) writer[1];
      int at = ((int[]) writer[3])[0];
      cells[at] = id;
      cells[at + 1] = left;
      cells[at + 2] = right == null ? 0 : right;
      nulls[at] = false;
      nulls[at + 1] = false;
      nulls[at + 2] = right == null;
      return runs.pair(run);
    }

    List<String> end() {
      runs.close();
      send();
      return sent;
    }
  }

  @Test
  void aSemiJoinKeepsOnePairPerRowWithMatchesAndRecordsAllOfThem() {
    Fixture f = new Fixture(Tap.Runs.SEMI, 8, true);
    assertEquals(true, f.pair(1, 10, 100, 7L));
    assertEquals(false, f.pair(1, 10, 100, 8L));
    assertEquals(false, f.pair(1, 10, 100, 9L));
    assertEquals(false, f.pair(2, 20, 200, NONE)); // no match: dropped, not recorded
    assertEquals(true, f.pair(3, 30, 300, 5L));
    assertEquals(List.of("10/100:[7, 8, 9]", "30/300:[5]"), f.end());
  }

  @Test
  void anAntiJoinKeepsRowsWithoutMatchesAndRecordsTheOthersWithTheirSmallestMatch() {
    Fixture f = new Fixture(Tap.Runs.ANTI, 8, true);
    assertEquals(false, f.pair(1, 10, 100, 9L));
    assertEquals(false, f.pair(1, 10, 100, 4L));
    assertEquals(false, f.pair(1, 10, 100, 6L));
    assertEquals(true, f.pair(2, 20, 200, NONE));
    assertEquals(false, f.pair(3, 30, 300, 5L));
    assertEquals(List.of("10/100:4", "30/300:5"), f.end());
  }

  @Test
  void anExistenceJoinKeepsEveryRowOnceAndRecordsTheMatchedAsBothJoinsDo() {
    Fixture f = new Fixture(Tap.Runs.EXISTENCE, 8, true);
    assertEquals(true, f.pair(1, 10, 100, 9L));
    assertEquals(false, f.pair(1, 10, 100, 4L));
    assertEquals(true, f.pair(2, 20, 200, NONE)); // kept, its own node: nothing recorded
    assertEquals(true, f.pair(3, 30, 300, 5L));
    assertEquals(List.of("10/100:[9, 4]", "30/300:[5]"), f.end());
    assertEquals(List.of("100:4", "300:5"), f.excluded); // the anti side: the smallest match
  }

  @Test
  void aFullChunkWaitsForItsLastRowsMatchesAndTheNextRowIsNotLost() {
    Fixture f = new Fixture(Tap.Runs.SEMI, 2, true);
    f.pair(1, 10, 100, 1L);
    f.pair(2, 20, 200, 2L); // the chunk is full, its second row still open
    f.pair(2, 20, 200, 3L);
    assertEquals(List.of(), f.sent);
    f.pair(3, 30, 300, 4L); // row 2 ends: the chunk goes, row 3 begins a new one
    assertEquals(List.of("10/100:[1]", "20/200:[2, 3]"), f.sent);
    f.pair(3, 30, 300, 5L);
    assertEquals(List.of("10/100:[1]", "20/200:[2, 3]", "30/300:[4, 5]"), f.end());
  }

  @Test
  void aRowWhosePairsComeApartFailsRatherThanKeepingItTwice() {
    Fixture f = new Fixture(Tap.Runs.SEMI, 8, true);
    f.pair(1, 10, 100, 1L);
    f.pair(2, 20, 200, 2L);
    IllegalStateException e =
        assertThrows(IllegalStateException.class, () -> f.pair(1, 10, 100, 3L));
    assertEquals(true, e.getMessage().contains("did not come together"), e.getMessage());
  }

  @Test
  void withoutRecordingThePairsStillPassAsTheyShould() {
    Fixture f = new Fixture(Tap.Runs.SEMI, 8, false);
    assertEquals(true, f.pair(1, 10, 100, 1L));
    assertEquals(false, f.pair(1, 10, 100, 2L));
    assertEquals(true, f.pair(2, 20, 200, 3L));
    assertEquals(List.of(), f.end());
    Fixture anti = new Fixture(Tap.Runs.ANTI, 8, false);
    assertEquals(false, anti.pair(1, 10, 100, 1L));
    assertEquals(true, anti.pair(2, 20, 200, NONE));
    assertArrayEquals(new String[0], anti.end().toArray(new String[0]));
  }
}
