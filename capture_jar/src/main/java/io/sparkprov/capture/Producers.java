package io.sparkprov.capture;

import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One Kafka producer per executor JVM and settings, created on first use and shared by every
 * task: Kafka's own Java client batches, compresses and retries idempotently (acks=all). Closed
 * when the JVM exits.
 */
final class Producers {
  private static final Map<TreeMap<String, String>, KafkaProducer<byte[], byte[]>> PRODUCERS =
      new ConcurrentHashMap<>();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(Producers::closeAll, "sparkprov-producers"));
  }

  private Producers() {}

  static KafkaProducer<byte[], byte[]> of(TreeMap<String, String> settings) {
    return PRODUCERS.computeIfAbsent(settings, Producers::create);
  }

  private static KafkaProducer<byte[], byte[]> create(TreeMap<String, String> settings) {
    Properties props = properties(settings);
    Thread thread = Thread.currentThread();
    ClassLoader before = thread.getContextClassLoader();
    // Kafka loads its pluggable classes through the context class loader: make it ours.
    thread.setContextClassLoader(Producers.class.getClassLoader());
    try {
      return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    } catch (RuntimeException e) {
      throw Failures.publish("no Kafka producer for " + settings.get("bootstrap.servers"), e);
    } finally {
      thread.setContextClassLoader(before);
    }
  }

  /**
   * Kafka's settings from ours: {@code sparkprov.sasl.*} become a JAAS entry of the (shaded)
   * login module, {@code sparkprov.ssl.*} files a PEM key store (capture_agent's
   * KafkaSecurity.as_java_settings writes them).
   */
  static Properties properties(Map<String, String> settings) {
    Properties props = new Properties();
    settings.forEach((name, value) -> {
      if (!name.startsWith("sparkprov.")) {
        props.put(name, value);
      }
    });
    String user = settings.get("sparkprov.sasl.username");
    if (user != null) {
      boolean plain = "PLAIN".equals(settings.get("sasl.mechanism"));
      String module = plain
          ? org.apache.kafka.common.security.plain.PlainLoginModule.class.getName()
          : org.apache.kafka.common.security.scram.ScramLoginModule.class.getName();
      props.put("sasl.jaas.config", module + " required username=\"" + escape(user)
          + "\" password=\"" + escape(settings.get("sparkprov.sasl.password")) + "\";");
    }
    String cert = settings.get("sparkprov.ssl.certfile");
    if (cert != null) {
      props.put("ssl.keystore.type", "PEM");
      props.put("ssl.keystore.certificate.chain", read(cert));
      props.put("ssl.keystore.key", read(settings.get("sparkprov.ssl.keyfile")));
    }
    return props;
  }

  private static String escape(String value) {
    return value.replace("\\", "\\\\").replace("\"", "\\\"");
  }

  private static String read(String path) {
    try {
      return java.nio.file.Files.readString(java.nio.file.Path.of(path));
    } catch (java.io.IOException e) {
      throw Failures.publish("cannot read the Kafka TLS file " + path, e);
    }
  }

  static void closeAll() {
    for (KafkaProducer<byte[], byte[]> producer : PRODUCERS.values()) {
      try {
        producer.close(java.time.Duration.ofSeconds(10));
      } catch (RuntimeException e) {
        // best effort at JVM exit
      }
    }
    PRODUCERS.clear();
  }
}
