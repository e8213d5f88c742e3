package io.neardup.solr;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.CountDownLatch;
import org.apache.solr.embedded.JettyConfig;
import org.apache.solr.embedded.JettySolrRunner;

/**
 * Runs a real Apache Solr node with Solr's own embedded Jetty runner, so that machines without Docker or a
 * Solr distribution can still talk to the genuine server. JettySolrRunner binds 127.0.0.1 only.
 *
 * <p>Usage: {@code Launcher <solrHome> <port> <portFile>}. The port actually bound is written to portFile
 * once Solr accepts requests (port 0 picks a free one); SIGTERM stops Jetty through the shutdown hook.
 */
public final class Launcher {
  private Launcher() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: Launcher <solrHome> <port> <portFile>");
      System.exit(2);
    }
    Path solrHome = Paths.get(args[0]).toAbsolutePath();
    int port = Integer.parseInt(args[1]);
    Path portFile = Paths.get(args[2]).toAbsolutePath();

    // Without a distribution Solr still reads these to locate its home, logs and (unused) install dir.
    System.setProperty("solr.solr.home", solrHome.toString());
    System.setProperty("solr.install.dir", solrHome.toString());
    System.setProperty("solr.log.dir", solrHome.resolve("logs").toString());
    Files.createDirectories(solrHome.resolve("logs"));

    JettyConfig config =
        JettyConfig.builder().setContext("/solr").setPort(port).stopAtShutdown(false).build();
    JettySolrRunner runner = new JettySolrRunner(solrHome.toString(), config);

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    runner.stop();
                  } catch (Exception e) {
                    System.err.println("error while stopping Solr: " + e);
                  } finally {
                    stopped.countDown();
                  }
                }));

    try {
      runner.start();
    } catch (Exception e) {
      // Jetty's threads outlive a failed start and would keep this JVM up until the caller's deadline (three
      // minutes for `neardup-solr solr start`); exiting lets it report the failure at once, with this trace.
      e.printStackTrace();
      // When the port is taken, Solr's retry stops Jetty and throws what that stop says ("STOPPED"), not the
      // bind failure: name it.
      if (port != 0 && !portIsFree(port)) {
        System.err.println("port " + port + " on 127.0.0.1 is in use by another program");
      }
      System.exit(1);
    }
    Path tmp = portFile.resolveSibling(portFile.getFileName() + ".tmp");
    Files.writeString(tmp, Integer.toString(runner.getLocalPort()));
    Files.move(tmp, portFile, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    System.out.println("Solr listening on " + runner.getBaseUrl());
    stopped.await();
  }

  private static boolean portIsFree(int port) {
    try (java.net.ServerSocket probe = new java.net.ServerSocket()) {
      probe.setReuseAddress(true); // as Jetty binds: a connection in TIME_WAIT does not hold the port
      probe.bind(new java.net.InetSocketAddress("127.0.0.1", port));
      return true;
    } catch (java.io.IOException e) {
      return false;
    }
  }
}
