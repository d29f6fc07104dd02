"""Errors of the capture agent, ordered by what the caller does about them."""

from __future__ import annotations

__all__ = ["CaptureError", "PublishError", "SettingsError", "UnsupportedOperation"]


class CaptureError(Exception):
    """Root of every error the capture agent raises."""


class SettingsError(CaptureError, ValueError):
    """A setting (an environment variable or a ProvenanceSession argument) has a value the capture
    agent cannot use; the message names it. Raised when the session is built: fix the setting."""


class UnsupportedOperation(CaptureError):
    """The DataFrame operation cannot be captured exactly; the message names it and the way out."""

    def __init__(self, operation: str, hint: str = "") -> None:
        message = f"sparkprov cannot capture the provenance of {operation}"
        if hint:
            message += f": {hint}"
        super().__init__(message)
        self.operation = operation


class PublishError(CaptureError):
    """Lineage could not be delivered to Kafka within the configured bound; the run has failed.

    Raised by the session, ``nodes`` and ``edges`` count what the run's completed tasks did
    deliver (so the caller knows how much lineage the failed run left); None where unknown (on an
    executor)."""

    def __init__(self, message: str, nodes: int | None = None, edges: int | None = None) -> None:
        super().__init__(message)
        self.nodes = nodes
        self.edges = edges
