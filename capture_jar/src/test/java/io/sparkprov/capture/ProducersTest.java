package io.sparkprov.capture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProducersTest {
  @Test
  void saslCredentialsBecomeAJaasEntryOfTheLoginModule() {
    Properties props = Producers.properties(Map.of(
        "bootstrap.servers", "b:9093",
        "security.protocol", "SASL_SSL",
        "sasl.mechanism", "SCRAM-SHA-512",
        "sparkprov.sasl.username", "lineage",
        "sparkprov.sasl.password", "pa\"ss"));
    String jaas = props.getProperty("sasl.jaas.config");
    assertTrue(jaas.contains("ScramLoginModule required"), jaas);
    assertTrue(jaas.contains("username=\"lineage\" password=\"pa\\\"ss\";"), jaas);
    assertFalse(props.stringPropertyNames().stream().anyMatch(n -> n.startsWith("sparkprov.")));
  }

  @Test
  void aClientCertificateBecomesAPemKeyStore(@TempDir Path dir) throws Exception {
    Path cert = Files.writeString(dir.resolve("c.pem"), "CERT");
    Path key = Files.writeString(dir.resolve("k.pem"), "KEY");
    Properties props = Producers.properties(Map.of(
        "sparkprov.ssl.certfile", cert.toString(), "sparkprov.ssl.keyfile", key.toString()));
    assertEquals("PEM", props.getProperty("ssl.keystore.type"));
    assertEquals("CERT", props.getProperty("ssl.keystore.certificate.chain"));
    assertEquals("KEY", props.getProperty("ssl.keystore.key"));
    assertThrows(IllegalStateException.class, () -> Producers.properties(Map.of(
        "sparkprov.ssl.certfile", dir.resolve("missing").toString(),
        "sparkprov.ssl.keyfile", key.toString())));
  }
}
