package io.sparkprov.capture;

/** A value over one of sparkprov.limits' bounds: refused before anything is sent. */
public final class LimitExceeded extends IllegalArgumentException {
  public LimitExceeded(String message) {
    super(message);
  }
}
