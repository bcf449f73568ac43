"""The cluster's own PostgreSQL: a data directory under the state dir, on its own port, run with
the server binaries of Debian's package (/usr/lib/postgresql/<version>/bin) as the `postgres`
user when we are root (Postgres refuses to run as root)."""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

from bench.cluster.procs import Proc, run
from bench.gateway.processes import BenchError

DATABASE = "maestrale"


def find_bin_dir() -> Path | None:
    """The newest installed server's bin dir (or MAESTRALE_CLUSTER_PG_BIN)."""
    chosen = os.environ.get("MAESTRALE_CLUSTER_PG_BIN")
    if chosen:
        return Path(chosen) if (Path(chosen) / "pg_ctl").exists() else None
    found = [d for d in Path("/usr/lib/postgresql").glob("*/bin") if (d / "pg_ctl").exists()]
    found.sort(key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0)
    return found[-1] if found else None


class Postgres:
    def __init__(self, directory: Path, port: int, bin_dir: Path) -> None:
        self.dir = directory
        self.data = directory / "data"
        self.port = port
        self.bin = bin_dir
        self.log = directory / "postgres.log"

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _owner(self, cmd: list[str]) -> list[str]:
        if os.geteuid() != 0:
            return cmd
        if shutil.which("runuser") is None:
            raise BenchError("running as root needs `runuser` (util-linux) to start Postgres")
        return ["runuser", "-u", "postgres", "--", *cmd]

    def _prepare_dir(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            return
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise BenchError("there is no `postgres` user to run Postgres as") from None
        os.chown(self.dir, owner.pw_uid, owner.pw_gid)
        self.dir.chmod(0o700)
        try:
            run(self._owner(["test", "-w", str(self.dir)]), "the postgres user's access check")
        except BenchError:
            raise BenchError(
                f"the postgres user cannot reach {self.dir}: every parent directory of the state"
                " dir must be searchable by others (o+x); choose another --state-dir"
            ) from None

    def init(self) -> None:
        """initdb once (trust authentication on loopback: a cluster for one machine)."""
        if (self.data / "PG_VERSION").exists():
            return
        self._prepare_dir()
        cmd = [str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres"]
        cmd += ["--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]
        run(self._owner(cmd), "initdb")

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
            " -c max_connections=300 -c shared_buffers=64MB"
        )
        cmd = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log)]
        cmd += ["-o", options, "-w", "-t", "60", "start"]
        run(self._owner(cmd), "pg_ctl start", timeout=90)

    def stop(self, mode: str = "fast") -> None:
        if not self.running():
            return
        cmd = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60"]
        run(self._owner([*cmd, "stop"]), "pg_ctl stop", timeout=90)

    def running(self) -> bool:
        proc = self.process()
        return proc is not None and proc.alive()

    def process(self) -> Proc | None:
        """The postmaster, from its pid file."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return Proc.of(pid)

    def create_database(self) -> None:
        query = f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"
        psql = [str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"]
        listed = run(self._owner([*psql, "-Atc", query]), "psql")
        if listed.strip() != "1":
            cmd = [str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port)]
            run(self._owner([*cmd, "-U", "postgres", DATABASE]), "createdb")
