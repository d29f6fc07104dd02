"""Settings of the trace viewer, built once from the environment in ``__main__``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sparkprov import defaults

__all__ = ["STATIC_DIR", "ViewerSettings"]

STATIC_DIR = Path(__file__).parent / "static"


@dataclass(frozen=True)
class ViewerSettings:
    addr: str = defaults.VIEWER_ADDR
    grpc_addr: str = defaults.GRPC_ADDR
    # When set, every /api call needs "Authorization: Bearer <token>", and the viewer sends the
    # same token to the query service (which then asks for it too).
    token: str = field(default="", repr=False)
    # The query service over TLS: a PEM file of the CA that signed its certificate, or the
    # system's CAs (SPARKPROV_QUERY_TLS_CA / SPARKPROV_QUERY_TLS, as every client reads them).
    tls_ca: str = ""
    tls: bool = False
    static_dir: Path = STATIC_DIR
    # What a page asks for unless it says otherwise: the first levels of a trace, at most so
    # many nodes. A browser lays out a few thousand nodes at most; the cap keeps it usable.
    default_depth: int = 6
    default_nodes: int = 300
    max_nodes: int = 2000
    grpc_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        host, _, port = self.addr.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"{defaults.ENV_VIEWER_ADDR}={self.addr!r} is not host:port")

    @property
    def host(self) -> str:
        return self.addr.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.addr.rpartition(":")[2])

    def missing_files(self) -> list[str]:
        """The page's files that are not there (the vendored ones come from ``make setup``)."""
        needed = (
            "index.html",
            "app.js",
            "vendor/cytoscape.min.js",
            "vendor/cytoscape-dagre.min.js",
        )
        return [str(self.static_dir / n) for n in needed if not (self.static_dir / n).is_file()]

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ViewerSettings:
        return cls(
            addr=environ.get(defaults.ENV_VIEWER_ADDR, defaults.VIEWER_ADDR),
            grpc_addr=environ.get(defaults.ENV_GRPC_ADDR, defaults.GRPC_ADDR),
            token=environ.get(defaults.ENV_QUERY_TOKEN, ""),
            tls_ca=environ.get(defaults.ENV_QUERY_TLS_CA, "").strip(),
            tls=defaults.is_on(environ.get(defaults.ENV_QUERY_TLS)),
        )
