"""`up`, `down` and `status` of the local cluster (deploy/local-cluster/ wraps them).

python -m bench.cluster.control up [--state-dir DIR] [--port 8800] [--replicas 3]
    [--workers 2] [--no-temporal] [--limits-fail-open] [--lease-seconds 5]
python -m bench.cluster.control status [--state-dir DIR]
python -m bench.cluster.control down [--state-dir DIR] [--purge]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from bench.cluster.cluster import DEPLOY, Cluster, Spec, terminate_on_signals
from bench.gateway.processes import BenchError

DEFAULT_STATE = Path(os.environ.get("MAESTRALE_CLUSTER_STATE", DEPLOY / "state"))


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="local-cluster", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the cluster (reusing the state dir's database)")
    down = sub.add_parser("down", help="stop every process of the cluster")
    status = sub.add_parser("status", help="which processes run, and what HAProxy sees")
    for command in (up, down, status):
        command.add_argument("--state-dir", type=Path, default=DEFAULT_STATE)
    up.add_argument("--port", type=int, default=8800, help="HAProxy's port (0: a free one)")
    up.add_argument("--host", default="127.0.0.1", help="HAProxy's address")
    up.add_argument("--replicas", type=int, default=3)
    up.add_argument("--workers", type=int, default=2)
    up.add_argument("--no-temporal", action="store_true", help="no Temporal (workflows: 503)")
    up.add_argument("--limits-fail-open", action="store_true", help="admit calls without Redis")
    up.add_argument("--lease-seconds", type=float, default=5.0, help="job lease of the workers")
    down.add_argument("--purge", action="store_true", help="also delete the state dir")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    terminate_on_signals()
    try:
        if args.command == "up":
            spec = Spec(
                replicas=args.replicas,
                workers=args.workers,
                host=args.host,
                port=args.port,
                temporal=not args.no_temporal,
                job_lease_seconds=args.lease_seconds,
                limits_fail_open=args.limits_fail_open,
            )
            cluster = Cluster.create(args.state_dir, spec)
            cluster.up(_say)
            _say(f"\nMaestrale behind HAProxy: {cluster.url}")
            _say(f"keys: . {cluster.dir / 'keys.env'}  (MAESTRALE_URL, _API_KEY, _ADMIN_KEY)")
            _say(f"logs: {cluster.dir / 'logs'}; stop with deploy/local-cluster/down")
        elif args.command == "status":
            cluster = Cluster.load(args.state_dir)
            for name, state in cluster.status():
                _say(f"{name:<12} {state}")
            _say(f"url: {cluster.url}")
        else:
            if (args.state_dir / "cluster.json").exists():
                Cluster.load(args.state_dir).down(_say)
            if args.purge and args.state_dir.exists():
                shutil.rmtree(args.state_dir)
                _say(f"removed {args.state_dir}")
    except BenchError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
