"""HAProxy of the local cluster: its configuration (deploy/local-cluster/haproxy.cfg.template
filled in and checked with `haproxy -c`) and what it thinks of each replica (`show stat` on its
admin socket)."""

from __future__ import annotations

import csv
import io
import shutil
import socket
import string
from pathlib import Path

from bench.cluster.procs import run

TEMPLATE = Path(__file__).resolve().parents[2] / "deploy" / "local-cluster" / "haproxy.cfg.template"


def binary() -> str:
    return shutil.which("haproxy") or "/usr/sbin/haproxy"  # sbin is not on every PATH


def installed() -> bool:
    return shutil.which("haproxy") is not None or Path("/usr/sbin/haproxy").exists()


def write_config(state_dir: Path, host: str, port: int, servers: dict[str, int]) -> Path:
    """<state dir>/haproxy.cfg balancing `servers` (name → loopback port), checked."""
    lines = "\n".join(f"    server {name} 127.0.0.1:{p}" for name, p in servers.items())
    text = string.Template(TEMPLATE.read_text()).substitute(
        state_dir=state_dir, host=host, port=port, servers=lines
    )
    path = state_dir / "haproxy.cfg"
    path.write_text(text)
    run([binary(), "-c", "-q", "-f", str(path)], "haproxy -c (the configuration check)")
    return path


def servers(state_dir: Path) -> dict[str, str]:
    """Each server of the `replicas` backend and its state (`UP`, `DOWN`, `UP 1/2`...)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        sock.connect(str(state_dir / "haproxy.sock"))
        sock.sendall(b"show stat\n")
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    text = b"".join(chunks).decode().lstrip("# ")  # the header line starts with "# "
    return {
        row["svname"]: row["status"]
        for row in csv.DictReader(io.StringIO(text))
        if row.get("pxname") == "replicas" and row["svname"] not in ("FRONTEND", "BACKEND")
    }
