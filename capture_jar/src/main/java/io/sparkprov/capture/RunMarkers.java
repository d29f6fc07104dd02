package io.sparkprov.capture;

import io.sparkprov.v1.LineageEvent;
import io.sparkprov.v1.RunComplete;
import io.sparkprov.v1.RunStarted;
import io.sparkprov.v1.SourceFiles;
import java.util.List;

/**
 * The run markers a driver publishes (lineage.proto's RunStarted and RunComplete), as
 * sparkprov/events.py's {@code encode_run_started} and {@code encode_run_complete} encode them:
 * markers are rare, so they are built with the classes protoc generates from lineage.proto, not
 * by hand as the taps' batches are ({@link Wire}). Ingest stores a run complete once it holds
 * exactly the counted nodes and edges.
 */
final class RunMarkers {
  /** The envelope's version of a marker: the one Python's markers carry (events.py). */
  static final int SCHEMA_VERSION = 2;

  private RunMarkers() {}

  static byte[] started(String runId, String workflow, long startedUnixMs, String applicationId) {
    return envelope(runId, workflow)
        .setRunStarted(RunStarted.newBuilder()
            .setStartedUnixMs(startedUnixMs)
            .setApplicationId(applicationId))
        .build()
        .toByteArray();
  }

  static byte[] complete(String runId, String workflow, long nodes, long edges,
      long finishedUnixMs, List<SourceFiles> sources) {
    return envelope(runId, workflow)
        .setRunComplete(RunComplete.newBuilder()
            .setNodeCount(nodes)
            .setEdgeCount(edges)
            .setFinishedUnixMs(finishedUnixMs)
            .addAllSourceFiles(sources))
        .build()
        .toByteArray();
  }

  private static LineageEvent.Builder envelope(String runId, String workflow) {
    return LineageEvent.newBuilder()
        .setSchemaVersion(SCHEMA_VERSION)
        .setRunId(runId)
        .setWorkflow(workflow);
  }
}
