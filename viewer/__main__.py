"""``python -m viewer``: settings from the environment (see the package docstring), then serve."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import FrameType

from sparkprov.runtime import configure_logging
from viewer.api import create_server
from viewer.gateway import Gateway
from viewer.settings import ViewerSettings

log = logging.getLogger("viewer")


def main() -> int:
    configure_logging(os.environ.get("SPARKPROV_LOG_LEVEL", "INFO"))
    settings = ViewerSettings.from_env(os.environ)
    missing = settings.missing_files()
    if missing:
        log.error("missing %s: run `make setup` (it vendors cytoscape.js)", ", ".join(missing))
        return 2
    gateway = Gateway(
        settings.grpc_addr,
        settings.token,
        settings.grpc_timeout_s,
        tls_ca=settings.tls_ca,
        tls=settings.tls,
    )
    server, port = create_server(settings, gateway)
    serving = threading.Thread(target=server.serve_forever, name="viewer-http", daemon=True)
    serving.start()
    log.info(
        "trace viewer on http://%s:%d/ (query service %s)", settings.host, port, settings.grpc_addr
    )
    stopped = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stopped.wait()
    server.shutdown()
    server.server_close()
    gateway.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
