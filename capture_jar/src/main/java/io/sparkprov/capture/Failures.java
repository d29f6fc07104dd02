package io.sparkprov.capture;

/**
 * The errors a tap fails its task with. They are JDK exceptions whose message starts with the
 * Python capture agent's error names, without causes of this jar's classes: Spark's driver
 * deserializes a task's failure with a class loader that need not see this jar (the failure
 * would arrive as "UnknownReason", its message lost), and the Python session recognizes a lost
 * delivery by the name "PublishError" in the failure's text, as for its own taps.
 */
final class Failures {
  private Failures() {}

  /** Lineage that Kafka did not take or acknowledge within the bound. */
  static IllegalStateException publish(String message, Throwable cause) {
    return new IllegalStateException("PublishError: " + message + ": " + cause);
  }

  /** A value over one of sparkprov.limits' bounds, refused before anything is sent. */
  static IllegalArgumentException limit(String message) {
    return new IllegalArgumentException("LimitExceeded: " + message);
  }
}
