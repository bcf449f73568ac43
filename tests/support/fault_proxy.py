"""A TCP proxy that injects network faults between the server and a backend (Postgres, Redis),
so that outage tests never touch the machine's shared servers.

It runs on an event loop of its own thread, so that sync tests, async tests and server
subprocesses can all use it. Its faults:
- `refuse()`: stop listening; new connections are refused (a stopped server);
- `cut()`: reset every open connection (a crashed server, a cable pulled);
- `down()`: both (what `pg_ctl stop` looks like from a client);
- `blackhole()`: accept connections but never answer, and swallow what the open ones send (a
  network partition: only timeouts tell);
- `up()`: forward again (connections swallowed by a blackhole are reset: they lost bytes).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.engine import make_url

T = TypeVar("T")
CHUNK = 65536


@dataclass(eq=False)
class _Link:
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def reset(self) -> None:
        for writer in (self.client, self.upstream):
            if writer is not None:
                writer.transport.abort()
        for task in self.tasks:
            task.cancel()


class FaultProxy:
    def __init__(self, target_host: str, target_port: int, port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.port = port
        self.mode = "up"
        self.accepted = 0
        self._links: set[_Link] = set()
        self._server: asyncio.Server | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FaultProxy:
        self._thread.start()
        self._call(self._listen())
        return self

    def close(self) -> None:
        self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    @contextlib.contextmanager
    def of_url(cls, url: str) -> Iterator[tuple[FaultProxy, str]]:
        """A proxy in front of the server of `url` (a SQLAlchemy or Redis URL), and the same
        URL through the proxy."""
        parsed = make_url(url)
        proxy = cls(parsed.host or "127.0.0.1", parsed.port or _default_port(parsed.drivername))
        with proxy:
            through = parsed.set(host="127.0.0.1", port=proxy.port)
            yield proxy, through.render_as_string(hide_password=False)

    # -- faults ----------------------------------------------------------------------------

    def refuse(self) -> None:
        self._call(self._set("refuse"))

    def cut(self) -> None:
        self._call(self._cut())

    def down(self) -> None:
        self.refuse()
        self.cut()

    def blackhole(self) -> None:
        self._call(self._set("blackhole"))

    def up(self) -> None:
        self._call(self._set("up"))

    @property
    def open_links(self) -> int:
        return len(self._links)

    # -- on the proxy's loop ---------------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    async def _listen(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        self._server = await asyncio.start_server(self._accept, sock=sock)

    async def _stop_listening(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _close(self) -> None:
        await self._stop_listening()
        await self._cut()

    async def _cut(self) -> None:
        for link in list(self._links):
            link.reset()
        self._links.clear()
        await asyncio.sleep(0)

    async def _set(self, mode: str) -> None:
        previous, self.mode = self.mode, mode
        if mode == "refuse":
            await self._stop_listening()
            return
        if self._server is None:
            await self._listen()
        if previous == "blackhole" and mode == "up":
            await self._cut()  # bytes were swallowed: these connections are beyond repair

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        link = _Link(writer)
        self._links.add(link)
        if self.mode == "blackhole":
            return  # held open, never answered
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            self._links.discard(link)
            return
        link.upstream = up_writer
        link.tasks = [
            asyncio.create_task(self._pump(reader, up_writer, link)),
            asyncio.create_task(self._pump(up_reader, writer, link)),
        ]

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, link: _Link
    ) -> None:
        try:
            while data := await reader.read(CHUNK):
                if self.mode == "blackhole":
                    continue  # swallowed
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            if link in self._links:
                self._links.discard(link)
                link.reset()


def _default_port(driver: str) -> int:
    return 6379 if driver.startswith("redis") else 5432
