"""The benchmark's MCP tool server in a process of its own: `make_tools_server()` (the connector
tests' tools, `echo` among them) over streamable HTTP, served by uvicorn on 127.0.0.1.

    .venv/bin/python -m bench.connectors.mcp_server [--port N]

Prints the MCP endpoint URL on one line once the server accepts connections, then serves until
SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import signal
import sys

from tests.support.mcp_servers import (
    ENDPOINT_PATHS,
    Transport,
    make_tools_server,
    mcp_asgi_app,
    serve_asgi,
)

TRANSPORT: Transport = "streamable-http"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MCP tools server (streamable HTTP)")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    args = parser.parse_args(argv)
    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # the server's thread inherits the mask
    server, _ = make_tools_server()
    with serve_asgi(mcp_asgi_app(server, TRANSPORT), port=args.port) as base:
        print(f"{base}{ENDPOINT_PATHS[TRANSPORT]}", flush=True)
        signal.sigwait(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
