"""Async SQLAlchemy: the declarative base, engines for SQLite and Postgres, sessions.

A request (or a job) owns its transaction: services only flush, the route class or the job
runner commits (`core.uow`).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import logging
import os
import sqlite3
import time
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import JSON, DateTime, MetaData, event, make_url
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, ExceptionContext
from sqlalchemy.engine.interfaces import DBAPIConnection, Dialect
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.types import TypeDecorator
from sqlalchemy.util.concurrency import await_

from maestrale.core.regex import sqlite_regexp
from maestrale.core.uow import UnitOfWork, unit_of_work

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# JSON documents: JSONB on Postgres (indexable), JSON text elsewhere.
JSONDoc = JSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Any) -> datetime | None:
        if value is None:
            return None
        from maestrale.core.clock import as_utc

        return as_utc(value)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def sqlstate_of(exc: DBAPIError) -> str | None:
    """The SQLSTATE of a driver error (Postgres), or None (SQLite has none)."""
    for candidate in (exc.orig, getattr(exc.orig, "__cause__", None)):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if isinstance(code, str):
            return code
    return None


def is_data_error(exc: BaseException) -> bool:
    """A value the database refuses (SQLSTATE class 22: NUL in text, too long, out of range)."""
    if not isinstance(exc, DBAPIError):
        return False
    state = sqlstate_of(exc)
    return state is not None and state.startswith("22")


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


# The key, in a pooled connection's `info`, that says whether it loaded sqlite-vec (the vector
# index of document libraries): `(await session.connection()).info.get(SQLITE_VEC)`.
SQLITE_VEC = "sqlite_vec"


def sqlite_vec_path() -> str | None:
    """The loadable sqlite-vec extension of the installed `sqlite-vec` package, or None.

    Found without importing the package: its module imports NumPy, which a serving process
    keeps out until something needs it."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        return None
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def sqlite_can_load_extensions() -> bool:
    """Whether this Python's sqlite3 module can load extensions (many pyenv builds cannot)."""
    return hasattr(sqlite3.Connection, "enable_load_extension")


def _load_sqlite_vec(dbapi_conn: DBAPIConnection) -> bool:
    """Load sqlite-vec into a new connection; False (and a warning) where it cannot be."""
    path = sqlite_vec_path()
    if path is None or not sqlite_can_load_extensions():
        return False
    # aiosqlite runs the sqlite3 connection on its own thread: go through its coroutines, the
    # way the dialect's adapter calls `create_function` (a greenlet-bridged await).
    driver: Any = getattr(dbapi_conn, "driver_connection", dbapi_conn)
    try:
        if isinstance(driver, sqlite3.Connection):
            driver.enable_load_extension(True)
            try:
                driver.load_extension(path)
            finally:
                driver.enable_load_extension(False)
        else:
            await_(driver.enable_load_extension(True))
            try:
                await_(driver.load_extension(path))
            finally:
                await_(driver.enable_load_extension(False))
    except Exception as exc:  # a wheel of another platform, an old SQLite: exact scans
        log.warning("sqlite-vec could not be loaded (%s): vectors are searched by exact scan", exc)
        return False
    return True


def _begin_before_savepoint(conn: Connection, name: str) -> None:
    """pysqlite opens its transaction only before a write: a SAVEPOINT sent first would open
    SQLite's own, which releasing that savepoint commits (a `begin_nested()` as the first
    statement of a unit of work committed its insert for good, whatever came after). Open the
    transaction before the first savepoint instead."""
    driver = conn.connection.driver_connection
    if driver is not None and not driver.in_transaction:
        conn.exec_driver_sql("BEGIN")


def _sqlite_pragmas(
    dbapi_conn: DBAPIConnection, record: ConnectionPoolEntry, *, load_extensions: bool = True
) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
    # REGEXP in linear time (RE2), over the dialect's own registration with Python's `re`.
    dbapi_conn.create_function("regexp", 2, sqlite_regexp(), deterministic=True)
    record.info[SQLITE_VEC] = load_extensions and _load_sqlite_vec(dbapi_conn)


def _json_dumps(value: Any) -> str:
    # JSON columns are serialised on the event loop's thread: orjson keeps that short.
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


# Connection failures that say "the server cannot be reached" (refused, reset, timed out, the
# server shutting down or starting up, too many clients): SQLSTATE class 08, 57P01-03, 53300.
_UNREACHABLE_STATES = ("08", "57P01", "57P02", "57P03", "53300")


class DatabaseUnavailable(DisconnectionError):
    """The database cannot be reached: a connection refused, cut or timed out, or a statement
    that got no answer in time. Raised in place of the driver's raw socket errors (which are no
    DBAPI errors: SQLAlchemy passes them on unwrapped), so that every layer can tell an outage
    from a bug (`is_unavailable`); a `DisconnectionError`, which callers already treat as
    transient (the accounting recorder keeps its rows and retries)."""


def _connect(dialect: Dialect, _: object, cargs: Any, cparams: Any) -> DBAPIConnection:
    """The engine's connect (`do_connect`): a socket error, a timeout or an error of the driver
    itself (asyncpg's: the server starting up, shutting down, refusing more clients, a wrong
    password) becomes `DatabaseUnavailable`."""
    try:
        return dialect.connect(*cargs, **cparams)
    except Exception as exc:
        if isinstance(exc, dialect.loaded_dbapi.Error):
            raise  # SQLAlchemy wraps it
        if isinstance(exc, (OSError, TimeoutError)) or type(exc).__module__.startswith("asyncpg"):
            raise DatabaseUnavailable(
                f"cannot connect to the database: {_first_line(exc)}"
            ) from exc
        raise


def _statement_failed(context: ExceptionContext) -> BaseException | None:
    """A statement that failed on a socket error or timed out (asyncpg's `command_timeout`):
    the connection is dropped (it may be half-way through a protocol exchange) and the error
    raised as `DatabaseUnavailable`. A timeout invalidates only its own connection."""
    original = context.original_exception
    if not isinstance(original, (OSError, TimeoutError)):
        return None
    context.is_disconnect = True
    if isinstance(original, TimeoutError):
        context.invalidate_pool_on_disconnect = False
    return DatabaseUnavailable(f"the database did not answer: {_first_line(original)}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).split("\n", 1)[0][:200]
    return text or type(exc).__name__


def is_unavailable(exc: BaseException) -> bool:
    """True when `exc` (or an error it was raised from or while handling) says the database
    cannot be reached or cannot take more work right now: refused, cut, timed out, shutting
    down, or the pool exhausted. False for errors of the request (values, constraints) and for
    bugs."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _unavailable(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _unavailable(exc: BaseException) -> bool:
    if isinstance(exc, (DatabaseUnavailable, PoolTimeout)):
        return True
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        state = sqlstate_of(exc)
        if state is None:  # SQLite's (locked, unreadable): no SQLSTATE
            return isinstance(exc, OperationalError)
        return state.startswith(_UNREACHABLE_STATES)
    return False


def create_engine(
    url: str,
    *,
    pool_size: int = 10,
    load_extensions: bool = True,
    connect_timeout: float | None = None,
    pool_timeout: float | None = None,
    statement_timeout: float | None = None,
) -> AsyncEngine:
    """The engine of `url`. Its errors never show their bound parameters (`hide_parameters`):
    they are prompts, instructions and documents, and a traceback goes to the logs.
    `load_extensions=False` keeps sqlite-vec out of SQLite connections (tests of the fallback).

    On Postgres, `connect_timeout` bounds a new connection, `pool_timeout` the wait for a free
    pooled one and `statement_timeout` each statement (asyncpg's `command_timeout`), so that
    no caller waits for ever on a database that cannot be reached; their failures are raised
    as `DatabaseUnavailable` (or the pool's `TimeoutError`), see `is_unavailable`."""
    pooling: dict[str, Any] = {} if pool_timeout is None else {"pool_timeout": pool_timeout}
    if is_sqlite(url):
        engine = create_async_engine(
            url,
            connect_args={"timeout": 30},
            json_serializer=_json_dumps,
            hide_parameters=True,
            **pooling,
        )
        event.listen(
            engine.sync_engine,
            "connect",
            functools.partial(_sqlite_pragmas, load_extensions=load_extensions),
        )
        event.listen(engine.sync_engine, "savepoint", _begin_before_savepoint)
        return engine
    connect_args: dict[str, Any] = {}
    if connect_timeout is not None:
        connect_args["timeout"] = connect_timeout
    if statement_timeout is not None:
        connect_args["command_timeout"] = statement_timeout
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        json_serializer=_json_dumps,
        # Postgres keeps JSON numbers as numerics: a float with an integral value past 64 bits
        # (1e20) comes back as an integer literal, which the stdlib would read as an integer no
        # JSON writer of ours (orjson) takes; orjson reads it as the float it was.
        json_deserializer=orjson.loads,
        hide_parameters=True,
        connect_args=connect_args,
        **pooling,
    )
    event.listen(engine.sync_engine, "checkin", _checked_in)
    event.listen(
        engine.sync_engine, "checkout", functools.partial(_ping_if_idle, timeout=connect_timeout)
    )
    event.listen(engine.sync_engine, "do_connect", _connect)
    event.listen(engine.sync_engine, "handle_error", _statement_failed)
    return engine


# Pooled connections are pinged before use only when they sat idle for longer than this. The
# pool's own `pre_ping` pings on every checkout (with asyncpg: BEGIN, a query and ROLLBACK, three
# round trips on every request). A connection used moments ago is as good as the ping would
# say; and should the database restart under busy connections, the first statement that fails
# on one of them invalidates every connection pooled before it (SQLAlchemy's disconnect
# handling), so one request sees the error, not one per connection.
PING_AFTER_IDLE_SECONDS = 5.0


def _checked_in(_: DBAPIConnection | None, record: ConnectionPoolEntry) -> None:
    record.info["idle_since"] = time.monotonic()


def _ping_if_idle(
    dbapi_conn: DBAPIConnection,
    record: ConnectionPoolEntry,
    _: object,
    *,
    timeout: float | None = None,
) -> None:
    """Ping a connection that sat idle; one that does not answer within `timeout` (a database
    cut off the network answers nothing) is replaced, which the connect timeout bounds."""
    idle_since = record.info.get("idle_since")
    if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_SECONDS:
        return
    driver: Any = getattr(dbapi_conn, "driver_connection", None)
    try:
        if timeout is not None and hasattr(driver, "fetchval"):  # asyncpg's own timeout
            await_(driver.fetchval("SELECT 1", timeout=timeout))
        else:
            dbapi_conn.ping()
    except Exception as exc:
        raise DisconnectionError(f"pooled connection failed its ping: {exc}") from exc


log = logging.getLogger("maestrale.db")


class ConnectionHeldAcrossCall(RuntimeError):
    """A model, tool or network call was about to run while its task held a database
    connection (docs/architecture.md §3). Raised where `strict` is set (the tests); logged
    elsewhere."""


class Database:
    """The engine and session factory of one process.

    It knows which tasks hold a pooled connection, so that `check_released()`, called before
    every model, tool and network call, can tell a transaction left open across the call.
    """

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        strict: bool = False,
        connect_timeout: float | None = 5.0,
        pool_timeout: float | None = 10.0,
        statement_timeout: float | None = None,
    ) -> None:
        self.url = url
        self.engine = create_engine(
            url,
            pool_size=pool_size,
            connect_timeout=connect_timeout,
            pool_timeout=pool_timeout,
            statement_timeout=statement_timeout,
        )
        self.sessionmaker = async_sessionmaker(self.engine, expire_on_commit=False)
        self.strict = strict
        self._holders: dict[asyncio.Task[Any], int] = {}
        event.listen(self.engine.sync_engine, "checkout", self._checked_out)
        event.listen(self.engine.sync_engine, "checkin", self._returned)

    def _checked_out(self, _: DBAPIConnection, record: ConnectionPoolEntry, __: object) -> None:
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no loop: a synchronous use (migrations)
            task = None
        record.info["task"] = task
        if task is not None:
            self._holders[task] = self._holders.get(task, 0) + 1

    def _returned(self, _: DBAPIConnection | None, record: ConnectionPoolEntry) -> None:
        task = record.info.pop("task", None)
        if task is not None and task in self._holders:
            left = self._holders[task] - 1
            if left > 0:
                self._holders[task] = left
            else:
                del self._holders[task]

    def holds_connection(self) -> bool:
        """True when the current task holds a pooled connection (an open transaction)."""
        task = asyncio.current_task()
        return task is not None and task in self._holders

    def check_released(self, what: str) -> None:
        """Before a remote call: the calling task must hold no connection."""
        if not self.holds_connection():
            return
        message = f"a database connection is held across {what}"
        if self.strict:
            raise ConnectionHeldAcrossCall(message)
        log.warning(message)

    @property
    def is_sqlite(self) -> bool:
        return is_sqlite(self.url)

    @property
    def sqlite_file(self) -> str | None:
        """The file of a SQLite database; None on Postgres and for an in-memory SQLite."""
        if not self.is_sqlite:
            return None
        database = make_url(self.url).database
        if not database or database == ":memory:" or database.startswith("file:"):
            return None
        return database

    def transaction(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A short unit of work of its own, outside any request's or job's (the exception
        `core.uow` documents): committed when the block succeeds, rolled back when it raises."""
        return unit_of_work(self.sessionmaker)

    async def dispose(self) -> None:
        await self.engine.dispose()
