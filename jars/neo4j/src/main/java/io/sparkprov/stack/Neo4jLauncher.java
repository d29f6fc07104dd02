package io.sparkprov.stack;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;

/**
 * Runs Neo4j Community as an embedded DBMS with the Bolt connector enabled, so the local stack
 * needs no Docker and no server tarball. The HTTP connector is off unless CONFIG_FILE turns it on
 * (server.http.enabled, server.http.listen_address): the embedded DBMS then serves what the
 * server does, the transactional Cypher endpoint and, with the neo4j-browser jar on the
 * classpath, Neo4j Browser at /browser/. Usage:
 *   java -Xmx.. -cp 'lib/neo4j/*' io.sparkprov.stack.Neo4jLauncher HOME_DIR HOST PORT
 *       [PAGECACHE_BYTES [CONFIG_FILE]]
 * CONFIG_FILE holds further settings in neo4j.conf's format (the local stack writes the page
 * cache, transaction-log retention and checkpoint interval there; they win over PAGECACHE_BYTES).
 * The heap is the JVM's own (-Xms/-Xmx). Prints "neo4j ready bolt://HOST:PORT" once Bolt accepts
 * connections; stops cleanly on SIGTERM.
 */
public final class Neo4jLauncher {
  private Neo4jLauncher() {}

  private static Path pluginDir() {
    try {
      return Path.of(Neo4jLauncher.class.getProtectionDomain().getCodeSource().getLocation().toURI())
          .getParent();
    } catch (java.net.URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  public static void main(String[] args) throws InterruptedException {
    if (args.length < 3) {
      System.err.println(
          "usage: Neo4jLauncher HOME_DIR HOST PORT [PAGECACHE_BYTES [CONFIG_FILE]]");
      System.exit(2);
    }
    Path home = Path.of(args[0]).toAbsolutePath();
    String host = args[1];
    int port = Integer.parseInt(args[2]);
    long pageCache = args.length > 3 ? Long.parseLong(args[3]) : 512L * 1024 * 1024;

    DatabaseManagementServiceBuilder builder =
        new DatabaseManagementServiceBuilder(home)
            .setConfig(BoltConnector.enabled, true)
            .setConfig(BoltConnector.listen_address, new SocketAddress(host, port))
            .setConfig(HttpConnector.enabled, false)
            .setConfig(GraphDatabaseSettings.auth_enabled, false)
            .setConfig(GraphDatabaseSettings.pagecache_memory, pageCache)
            // Our procedures load from the folder of this jar, as from a server's plugins/.
            .setConfig(GraphDatabaseSettings.plugin_dir, pluginDir());
    if (args.length > 4) {
      builder.loadPropertiesFromFile(Path.of(args[4]));
    }
    DatabaseManagementService dbms = builder.build();
    // Opening the default database forces it to start before we announce readiness.
    GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
    db.executeTransactionally("RETURN 1");

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  dbms.shutdown();
                  stopped.countDown();
                },
                "neo4j-shutdown"));
    System.out.println("neo4j ready bolt://" + host + ":" + port);
    System.out.flush();
    stopped.await();
  }
}
