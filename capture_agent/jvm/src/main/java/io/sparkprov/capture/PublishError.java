package io.sparkprov.capture;

/**
 * Lineage that Kafka did not take or acknowledge within the bound. Thrown in a task, it fails the
 * task (and, after Spark's retries, the job); the Python session recognizes it by this class's
 * name in the failure's text, as it does capture_agent.errors.PublishError.
 */
public final class PublishError extends RuntimeException {
  public PublishError(String message, Throwable cause) {
    super(message, cause);
  }
}
