import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * The transport's own floor for capture: how long this machine's Kafka takes to accept a
 * workload's lineage bytes with nothing else running (no Spark, no taps), with the JVM taps'
 * producer settings (acks=all, idempotent, linger 5 ms, no compression) and messages of the
 * taps' size. Random bytes, like the 64-bit hash ids that make up most of a message.
 *
 * <p>{@code java -cp '.stack/lib/kafka/*' bench/java/KafkaFloor.java BOOTSTRAP TOPIC MESSAGES
 * BYTES ROUNDS}; prints one line per round (the first warms the producer up). A workload whose
 * plain time times 0.30 is below this floor cannot reach captured/plain <= 1.30 here, whatever
 * the taps cost.
 */
public final class KafkaFloor {
  private KafkaFloor() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    int messages = Integer.parseInt(args[2]);
    int bytes = Integer.parseInt(args[3]);
    int rounds = Integer.parseInt(args[4]);
    byte[] value = new byte[bytes];
    new SplittableRandom(1).nextBytes(value);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(settings(bootstrap))) {
      for (int round = 0; round < rounds; round++) {
        long start = System.nanoTime();
        List<Future<RecordMetadata>> sent = new ArrayList<>(messages);
        for (int i = 0; i < messages; i++) {
          byte[] key = ("partition-" + (i % 8)).getBytes();
          sent.add(producer.send(new ProducerRecord<>(topic, key, value)));
        }
        producer.flush();
        for (Future<RecordMetadata> f : sent) {
          f.get();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        double mb = (double) messages * bytes / 1e6;
        System.out.printf("round %d: %d messages, %.1f MB acknowledged in %.2f s (%.0f MB/s)%n",
            round, messages, mb, seconds, mb / seconds);
      }
    }
  }

  private static Properties settings(String bootstrap) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("acks", "all");
    p.put("enable.idempotence", "true");
    p.put("linger.ms", "5");
    p.put("compression.type", "none");
    p.put("max.request.size", "8388608");
    p.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
    p.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
    return p;
  }
}
