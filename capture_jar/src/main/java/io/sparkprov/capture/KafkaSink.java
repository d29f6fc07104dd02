package io.sparkprov.capture;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.ProducerRecord;

/** Sends to one topic through the executor JVM's producer for these settings ({@link Producers}). */
public final class KafkaSink implements Sink {
  private final String topic;
  private final TreeMap<String, String> settings;
  private final long timeoutMs;

  public KafkaSink(String topic, Map<String, String> settings, long timeoutMs) {
    this.topic = topic;
    this.settings = new TreeMap<>(settings);
    this.timeoutMs = timeoutMs;
  }

  @Override
  public Future<?> send(byte[] key, byte[] value) {
    try {
      return Producers.of(settings).send(new ProducerRecord<>(topic, key, value));
    } catch (RuntimeException e) { // a timeout waiting for metadata or buffer space
      throw Failures.publish("could not hand lineage to Kafka at " + describe() + " within "
          + timeoutMs + " ms", e);
    }
  }

  @Override
  public void flush() {
    Producers.of(settings).flush();
  }

  @Override
  public long timeoutMs() {
    return timeoutMs;
  }

  @Override
  public String describe() {
    return settings.getOrDefault("bootstrap.servers", "?") + " (topic " + topic + ")";
  }
}
