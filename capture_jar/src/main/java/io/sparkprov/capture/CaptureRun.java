package io.sparkprov.capture;

import io.sparkprov.v1.SourceFiles;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;

/**
 * The provenance run of an application captured through {@link CaptureExtension}: one at a time
 * per SparkContext, so every query the application runs is a part of it (the run scope
 * "application") until {@link #finish} completes it, with its id, the sink its capture points send to, their counts, and the
 * numbering of capture keys and result relations. Settings come from the Spark conf:
 *
 * <ul>
 *   <li>{@value #RUN_ID}: the run's id (default: a random UUID);
 *   <li>{@value #WORKFLOW}: its workflow (default: the application's name);
 *   <li>{@value #SINK}: {@code kafka} (default), {@code memory} (kept in an accumulator, for
 *       tests: {@link #memory()}) or {@code discard} (sent nowhere; {@code discard:call},
 *       {@code :copy}, {@code :emit} or {@code :encode}, the default, name the last step a
 *       capture point takes with its rows, as {@link DiscardSink.Step} says: for profiles);
 *   <li>{@value #BOOTSTRAP}, {@value #TOPIC} (default {@value #DEFAULT_TOPIC}) and {@value
 *       #KAFKA_PREFIX}{@code <producer setting>}: the Kafka producer's;
 *   <li>{@value #ROWS_PER_MESSAGE} (default {@value #DEFAULT_ROWS_PER_MESSAGE}; fewer where the
 *       rows' texts fill a message first: {@link Chunk#MAX_OBJECT_BYTES});
 *   <li>{@value #VALUES}: the values a source row's TOKEN keeps, {@code read} (default: the
 *       columns the query reads) or {@code all} (read when a query is placed).
 * </ul>
 */
public final class CaptureRun {
  public static final String RUN_ID = "spark.sparkprov.runId";
  public static final String WORKFLOW = "spark.sparkprov.workflow";
  public static final String SINK = "spark.sparkprov.sink";
  public static final String BOOTSTRAP = "spark.sparkprov.kafka.bootstrap";
  public static final String TOPIC = "spark.sparkprov.topic";
  public static final String KAFKA_PREFIX = "spark.sparkprov.kafka.";
  public static final String ROWS_PER_MESSAGE = "spark.sparkprov.rowsPerMessage";
  /** As sparkprov.defaults.ROWS_PER_MESSAGE. */
  static final int DEFAULT_ROWS_PER_MESSAGE = 8192;
  public static final String DEFAULT_TOPIC = "sparkprov.lineage";
  public static final String VALUES = "spark.sparkprov.values";
  /** The most files of a source the run marker lists (sparkprov/limits.py MAX_SOURCE_FILES). */
  static final int MAX_SOURCE_FILES = 2000;
  /** The longest text a tap keeps (sparkprov/limits.py MAX_TEXT_BYTES). */
  static final int MAX_TEXT_BYTES = 65536;
  /** The largest message a producer sends (sparkprov.events.MAX_EVENT_BYTES). */
  static final int MAX_MESSAGE_BYTES = 8 * 1024 * 1024;
  /** The producer's linger (sparkprov/defaults.py KAFKA_LINGER_MS): tasks and markers flush
   * before they wait, so it only makes batches fuller. */
  static final int LINGER_MS = 50;

  private static final Map<SparkContext, CaptureRun> RUNS = new HashMap<>();
  /** Runs begun per application, for the next run's number. */
  private static final Map<SparkContext, Integer> STARTED = new HashMap<>();

  private final SparkContext sc;

  private final String runId;
  private final String workflow;
  private final Sink sink;
  private final Counts counts;
  private final int rowsPerMessage;
  private final AtomicInteger keys = new AtomicInteger();
  private final AtomicInteger results = new AtomicInteger();

  private boolean finished;
  /** The sources positioned by file: per relation, its files and the TOKEN id masks of its
   * capture points over them (session.py's _file_source). */
  private final Map<String, Map.Entry<List<String>, List<Long>>> sourceFiles =
      new LinkedHashMap<>();
  private volatile String lastResult;
  private final Map<String, FileSource> fileSources = new HashMap<>();

  private CaptureRun(SparkContext sc, int number) {
    SparkConf conf = sc.getConf();
    String given = conf.get(RUN_ID, "");
    this.sc = sc;
    this.runId = given.isEmpty() ? UUID.randomUUID().toString()
        : number == 1 ? given : given + "-" + number;
    this.workflow = conf.get(WORKFLOW, sc.appName());
    this.rowsPerMessage = Integer.parseInt(conf.get(ROWS_PER_MESSAGE, String.valueOf(DEFAULT_ROWS_PER_MESSAGE)));
    this.sink = sink(sc, conf);
    this.counts = new Counts(sc);
    publish(RunMarkers.started(runId, workflow, System.currentTimeMillis(), sc.applicationId()));
  }

  /**
   * Completes the run: publishes its marker with the nodes and edges its completed tasks
   * emitted, which ingest waits to hold before it calls the run complete. Called when the
   * application ends (a listener); a notebook, a long-lived driver or a benchmark calls it when
   * the work it wants to query is done, and the next query captured begins a new run (its id
   * the given {@value #RUN_ID} numbered {@code -2}, {@code -3}, ..., or a fresh UUID). Once:
   * later calls do nothing.
   */
  public void finish() {
    synchronized (this) {
      if (finished) {
        return;
      }
      finished = true;
      long[] totals = counts.totals();
      publish(RunMarkers.complete(runId, workflow, totals[0], totals[1],
          System.currentTimeMillis(), listedSources()));
    }
    ended(this);
  }

  /** Records a source positioned by {@code files}, read with TOKEN id mask {@code mask}. A
   * relation read again from other files keeps the last list (a label's file index refers to
   * it) and that list's masks only. */
  synchronized void sourceFiles(String relation, List<String> files, long mask) {
    Map.Entry<List<String>, List<Long>> known = sourceFiles.get(relation);
    if (known == null || !known.getKey().equals(files)) {
      known = Map.entry(List.copyOf(files), new ArrayList<>());
      sourceFiles.put(relation, known);
    }
    if (!known.getValue().contains(mask)) {
      known.getValue().add(mask);
    }
  }

  /** The sources the run marker lists: those of at most {@value #MAX_SOURCE_FILES} files (a
   * source of more keeps its positions only, as Python's markers do). */
  private synchronized List<SourceFiles> listedSources() {
    List<SourceFiles> out = new ArrayList<>();
    sourceFiles.forEach((relation, known) -> {
      if (known.getKey().size() <= MAX_SOURCE_FILES) {
        out.add(SourceFiles.newBuilder().setRelation(relation).addAllFiles(known.getKey())
            .addAllMasks(known.getValue()).build());
      }
    });
    return out;
  }

  /** Sends a driver's marker and waits until the sink has it. */
  private void publish(byte[] marker) {
    try {
      Future<?> sent = sink.send(runId.getBytes(StandardCharsets.UTF_8), marker);
      sink.flush(); // waited for now: not after the producer's linger
      sent.get(sink.timeoutMs(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Failures.publish("interrupted publishing the run marker of " + runId, e);
    } catch (ExecutionException | TimeoutException e) {
      throw Failures.publish("could not publish the run marker of " + runId + " to "
          + sink.describe(), e);
    }
  }

  /** The current run of {@code sc}'s application, begun on first use (and after a finish). */
  public static synchronized CaptureRun of(SparkContext sc) {
    CaptureRun run = RUNS.get(sc);
    if (run == null) {
      if (STARTED.merge(sc, 1, Integer::sum) == 1) {
        sc.addSparkListener(new SparkListener() {
          @Override
          public void onApplicationEnd(SparkListenerApplicationEnd end) {
            applicationEnded(sc);
          }
        });
      }
      run = new CaptureRun(sc, STARTED.get(sc));
      RUNS.put(sc, run);
    }
    return run;
  }

  /** The application's end completes its current run, and forgets the application. */
  private static void applicationEnded(SparkContext sc) {
    CaptureRun run;
    synchronized (CaptureRun.class) {
      run = RUNS.get(sc);
    }
    try {
      if (run != null) {
        run.finish();
      }
    } finally {
      synchronized (CaptureRun.class) {
        RUNS.remove(sc);
        STARTED.remove(sc);
      }
    }
  }

  private static synchronized void ended(CaptureRun run) {
    RUNS.remove(run.sc, run);
  }

  private static Sink sink(SparkContext sc, SparkConf conf) {
    String kind = conf.get(SINK, "kafka");
    if (kind.startsWith("discard:")) {
      String step = kind.substring("discard:".length()).toUpperCase(java.util.Locale.ROOT);
      try {
        return new DiscardSink(step);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(SINK + "=" + kind + ": after discard: comes one of "
            + java.util.Arrays.toString(DiscardSink.Step.values()).toLowerCase(java.util.Locale.ROOT), e);
      }
    }
    switch (kind) {
      case "memory":
        return new MemorySink(sc);
      case "discard":
        return new DiscardSink("ENCODE");
      case "kafka":
        String bootstrap = conf.get(BOOTSTRAP, "");
        if (bootstrap.isEmpty()) {
          throw new IllegalArgumentException("sparkprov's capture extension sends to Kafka: set "
              + BOOTSTRAP + " (or " + SINK + "=memory or discard)");
        }
        Map<String, String> settings = new HashMap<>();
        settings.put("bootstrap.servers", bootstrap);
        settings.put("acks", "all");
        settings.put("enable.idempotence", "true");
        settings.put("linger.ms", String.valueOf(LINGER_MS));
        settings.put("batch.size", String.valueOf(1024 * 1024));
        // As the Python producers (capture_agent.publisher's max_message_bytes) and ingest
        // (sparkprov.events.MAX_EVENT_BYTES): a chunk of large texts (Chunk.MAX_OBJECT_BYTES)
        // fits.
        settings.put("max.request.size", String.valueOf(MAX_MESSAGE_BYTES));
        settings.put("compression.type", "zstd");
        // Level 1, as sparkprov.defaults.KAFKA_ZSTD_LEVEL: less CPU and fewer bytes than 3 here.
        settings.put("compression.zstd.level", "1");
        for (scala.Tuple2<String, String> entry : conf.getAllWithPrefix(KAFKA_PREFIX)) {
          if (!entry._1().equals("bootstrap")) {
            settings.put(entry._1(), entry._2());
          }
        }
        return new KafkaSink(conf.get(TOPIC, DEFAULT_TOPIC), settings, 120_000L);
      default:
        throw new IllegalArgumentException(SINK + " is kafka, memory or discard, not " + kind);
    }
  }

  public String runId() {
    return runId;
  }

  public String workflow() {
    return workflow;
  }

  Sink sink() {
    return sink;
  }

  Counts counts() {
    return counts;
  }

  int rowsPerMessage() {
    return rowsPerMessage;
  }

  /** A fresh capture key: {@code prefix#n}, numbered through the run (context.py next_key). */
  String nextKey(String prefix) {
    return prefix + "#" + keys.incrementAndGet();
  }

  /** The name of the next query result that no write names: {@code result<n>}. */
  String nextResult() {
    return "result" + results.incrementAndGet();
  }

  /** A file source of the run: its capture key and the relation that names it. */
  record FileSource(String key, String relation) {}

  /**
   * The source of the run over {@code files}: made the first time they are read (named {@code
   * relation}), the same for every later read of the same files, in this query (a self-join)
   * or a later one, so a file row keeps its TOKEN id (one node per input row) and is sent once
   * ({@link SourceRowsOnce}); each read's rows are counted once, as positions ({@link Counts}).
   */
  synchronized FileSource fileSource(String relation, List<String> files) {
    return fileSources.computeIfAbsent(String.join("\0", files),
        k -> new FileSource(nextKey("source:" + relation), relation));
  }

  /** Records the relation that names the rows of the query placed last. */
  void placed(String relation) {
    lastResult = relation;
  }

  /** The relation that names the rows of the query placed last ({@code result<n>}, or the
   * folder a write wrote to), or null before the first: what to trace a result from. */
  public String lastResult() {
    return lastResult;
  }

  /** The memory sink's messages (values), for tests; null when the sink is another. */
  public java.util.List<byte[]> memory() {
    return sink instanceof MemorySink m ? m.values() : null;
  }

  /** Nodes and edges the run's completed tasks emitted (the run marker's counts). */
  public long[] totals() {
    return counts.totals();
  }
}
