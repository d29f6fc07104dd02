package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.v1.LineageEvent;
import io.sparkprov.v1.SourceFiles;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The capture extension's driver side without Spark: its run markers and result names. (The
 * markers' bytes are checked against Python's encoders by tests/unit/test_capture_extension.py.) */
class RunMarkersTest {
  @Test
  void aCompleteMarkerCarriesTheCountsAndTheFileSources() throws Exception {
    SourceFiles files = SourceFiles.newBuilder().setRelation("orders")
        .addAllFiles(List.of("file:/a.parquet", "file:/b.parquet")).addMasks(-7L).build();
    LineageEvent event = LineageEvent.parseFrom(
        RunMarkers.complete("run-1", "wf", 12, 34, 1000L, List.of(files)));
    assertEquals(RunMarkers.SCHEMA_VERSION, event.getSchemaVersion());
    assertEquals("run-1", event.getRunId());
    assertEquals("wf", event.getWorkflow());
    assertTrue(event.hasRunComplete());
    assertEquals(12, event.getRunComplete().getNodeCount());
    assertEquals(34, event.getRunComplete().getEdgeCount());
    assertEquals(List.of(files), event.getRunComplete().getSourceFilesList());
  }

  @Test
  void aStartedMarkerNamesTheApplication() throws Exception {
    LineageEvent event = LineageEvent.parseFrom(RunMarkers.started("run-1", "wf", 5L, "app-9"));
    assertTrue(event.hasRunStarted());
    assertEquals("app-9", event.getRunStarted().getApplicationId());
    assertEquals(5L, event.getRunStarted().getStartedUnixMs());
  }

  @Test
  void aWrittenFolderNamesItsRowsWithoutExtensionInLettersDigitsAndUnderscores() {
    assertEquals("big_orders", RelationNames.ofPath("big_orders.parquet"));
    assertEquals("x_2026", RelationNames.ofPath("x-2026"));
    assertEquals("enriched", RelationNames.ofPath("__enriched__"));
    assertNull(RelationNames.ofPath("---"));
  }
}
