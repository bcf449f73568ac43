"""`maestrale serve`: one server process, or a supervisor of N of them.

With N > 1 the supervisor
- applies the migrations and the first-start bootstrap once, before any server starts;
- binds the listening socket and hands it to N server processes (spawned, so that each starts
  clean: no thread, lock or connection copied by a fork), which accept on it in turn;
- runs the hub (`hub`) on a Unix socket that every server process connects to at start: the limit
  counters (when there is no Redis, which would hold them otherwise), the invalidation bus among
  the processes (likewise), and the heavy local engines, loaded once for the machine;
- gives the in-process job worker to the first server process only (jobs are claimed under a
  lease, so more would be safe, but one worker per machine is what one process had);
- restarts a server process that dies, with a backoff, and on SIGINT or SIGTERM stops them all
  before it closes the hub: it passes the signal on (each process drains and finishes its
  requests, as one process does: see `processes.server`) and closes its own copy of the
  listening socket, so that new connections are refused once every process stopped accepting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import time
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path

from maestrale.config import Settings, make_data_dir
from maestrale.hub import frames
from maestrale.processes.server import run_server

log = logging.getLogger("maestrale.supervisor")

DEFAULT_MAX_WORKERS = 4
# A server process that lived this long is restarted at once when it dies, else after a backoff.
_HEALTHY_SECONDS = 30.0
_MAX_BACKOFF = 30.0


def default_workers() -> int:
    """One server process per CPU this process may run on, at most `DEFAULT_MAX_WORKERS`."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 1
    return max(1, min(usable, DEFAULT_MAX_WORKERS))


def serve(settings: Settings) -> int:
    count = settings.workers or default_workers()
    if count == 1:
        run_server(settings)
        return 0
    return asyncio.run(Supervisor(settings, count).run())


def bind(host: str, port: int) -> socket.socket:
    """The listening socket of every server process, as uvicorn binds its own."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    # Not inheritable: the spawned server processes get it as multiprocessing passes it (by
    # name, to that child only); nothing else this process starts may hold it.
    return sock


def serve_on(settings: Settings, sock: socket.socket, workflows_off: str | None = None) -> None:
    """A server process of the supervisor, on its listening socket (`workflows_off`: why the
    supervisor's embedded Temporal did not start). multiprocessing hands the socket down
    inheritable: it is made close-on-exec at once, so that no process this one starts
    (code_interpreter's sandboxes, engines, tools) can accept on it."""
    sock.set_inheritable(False)
    run_server(settings, sock, workflows_off=workflows_off)


async def claim_socket(path: Path) -> None:
    """Remove the socket a stopped supervisor left behind; refuse to run beside a live one."""
    if not path.exists():
        return
    try:
        _, writer = await asyncio.open_unix_connection(str(path))
    except OSError:
        path.unlink()
        return
    writer.close()
    raise SystemExit(f"another `maestrale serve` runs on this data directory (its hub: {path})")


@dataclass(slots=True)
class _Slot:
    index: int
    process: BaseProcess | None = None
    started: float = 0.0
    backoff: float = 1.0


class Supervisor:
    def __init__(self, settings: Settings, count: int) -> None:
        self.settings = settings
        self.count = count
        self.stopping = asyncio.Event()
        self._all_stopped = asyncio.Event()
        self._context = multiprocessing.get_context("spawn")
        self._slots = [_Slot(i) for i in range(count)]
        self._hub_path = frames.hub_path(settings.data_dir)
        self._sock: socket.socket | None = None
        self._temporal_address: str | None = None
        self._workflows_off: str | None = None  # why the embedded Temporal did not start
        self._proxy_port: int | None = None  # the worker proxy's, reserved for the processes
        self._signal = signal.SIGTERM  # what the server processes are told at shutdown

    def _signalled(self, signum: int) -> None:
        """The first signal stops everything; a later one is passed on to the server processes
        (the second ends their drain, the third stops them without waiting)."""
        if not self.stopping.is_set():
            self._signal = signal.Signals(signum)
            self.stopping.set()
            return
        self._kill_running(signum)

    def _running(self) -> list[BaseProcess]:
        return [s.process for s in self._slots if s.process is not None and s.process.is_alive()]

    def _kill_running(self, signum: int) -> None:
        for process in self._running():
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid or 0, signum)

    async def run(self) -> int:
        settings = self.settings
        make_data_dir(settings.data_dir)
        await _first_start(settings)
        await claim_socket(self._hub_path)
        try:
            self._sock = bind(settings.host, settings.port)
        except OSError as exc:
            log.error("cannot listen on %s:%d: %s", settings.host, settings.port, exc)
            return 1
        host, port = self._sock.getsockname()[:2]
        from maestrale.hub.hosting import open_hub

        async with open_hub(settings, self._hub_path), contextlib.AsyncExitStack() as stack:
            await self._start_temporal(stack)
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, self._signalled, signum)
            log.info("serving on http://%s:%d with %d processes", host, port, self.count)
            for slot in self._slots:
                self._start(slot)
            await self.stopping.wait()
            await self._stop_all()
        self._sock.close()
        return 0

    async def _start_temporal(self, stack: contextlib.AsyncExitStack) -> None:
        """The embedded Temporal, once for all the server processes (which are handed its
        address, or why it did not start), when no Temporal cluster is configured; and the
        worker proxy's port, which they all serve (with `temporal_proxy_port` 0, each would
        take a port of its own)."""
        settings = self.settings
        if not settings.temporal_address and settings.temporal_embedded:
            from maestrale.workflows.temporal.devserver import (
                TemporalUnavailable,
                embedded_temporal,
                start_failure,
            )

            try:
                self._temporal_address = await stack.enter_async_context(
                    embedded_temporal(settings)
                )
            except TemporalUnavailable as exc:
                self._workflows_off = start_failure(exc)
        if self._temporal_address or settings.temporal_address:
            from maestrale.workflows.workers.frontend import reserve_port

            reserved = reserve_port(settings)
            if reserved is not None:
                stack.callback(reserved.close)  # held until the processes have stopped
                self._proxy_port = int(reserved.getsockname()[1])

    def _child_settings(self, index: int) -> Settings:
        # A plain `Settings` (a file's settings come as a subclass that cannot be pickled), with
        # the hub, the worker for the first process only, and the migrations already applied.
        plain = Settings.model_construct(**dict(self.settings))
        return plain.model_copy(
            update={
                "hub_socket": self._hub_path,
                "worker": self.settings.worker and index == 0,
                "auto_migrate": False,
                "workers": 1,
                "temporal_address": self._temporal_address or self.settings.temporal_address,
                "temporal_embedded": False,
                "temporal_proxy_port": self._proxy_port or self.settings.temporal_proxy_port,
            }
        )

    def _start(self, slot: _Slot) -> None:
        process = self._context.Process(
            target=serve_on,
            args=(self._child_settings(slot.index), self._sock, self._workflows_off),
            name=f"maestrale-server-{slot.index}",
        )
        process.start()
        slot.process, slot.started = process, time.monotonic()
        asyncio.get_running_loop().add_reader(process.sentinel, self._exited, slot)

    def _exited(self, slot: _Slot) -> None:
        loop = asyncio.get_running_loop()
        process = slot.process
        assert process is not None
        loop.remove_reader(process.sentinel)
        process.join()
        if self.stopping.is_set():
            if not any(s.process is not None and s.process.is_alive() for s in self._slots):
                self._all_stopped.set()
            return
        lived = time.monotonic() - slot.started
        slot.backoff = 1.0 if lived > _HEALTHY_SECONDS else min(slot.backoff * 2, _MAX_BACKOFF)
        delay = 0.0 if lived > _HEALTHY_SECONDS else slot.backoff
        log.error(
            "server process %d exited with %s after %.0f s; restarting it in %.0f s",
            slot.index,
            process.exitcode,
            lived,
            delay,
        )
        loop.call_later(delay, self._restart, slot)

    def _restart(self, slot: _Slot) -> None:
        if not self.stopping.is_set():
            self._start(slot)

    async def _stop_all(self) -> None:
        running = self._running()
        self._kill_running(self._signal)
        # The server processes keep accepting on their copies while they drain; once they have
        # all closed theirs, the socket is gone and new connections are refused.
        if self._sock is not None:
            self._sock.close()
        # The requests' grace, then the job worker's, then a margin.
        settings = self.settings
        if running:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._all_stopped.wait(),
                    settings.shutdown_grace_seconds + settings.worker_grace_seconds + 5,
                )
        for process in running:
            if process.is_alive():
                log.warning("server process %s did not stop in time; killing it", process.name)
                process.kill()
            process.join()


async def _first_start(settings: Settings) -> None:
    """Migrations and bootstrap, once for all the server processes."""
    from maestrale.core.db import Database
    from maestrale.core.migrate import upgrade_async
    from maestrale.services import first_start

    if settings.auto_migrate:
        await upgrade_async(settings.resolved_database_url)
    db = Database(
        settings.resolved_database_url,
        pool_size=1,
        connect_timeout=settings.database_connect_timeout,
        pool_timeout=settings.database_pool_timeout,
    )
    try:
        await first_start(db, settings)
    finally:
        await db.dispose()
