"""The hub's wire: length-prefixed pickled frames over a Unix socket, and who may connect.

Frames are pickled because what crosses (engine requests and results, numpy images, limit checks)
is Python data of this program on both ends. Unpickling runs code, so only processes of this
user may connect: the socket lives in a 0700 directory, and the hub also checks each peer's
credentials (`SO_PEERCRED`) and drops any other user's connection before reading a byte.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import pickle
import socket
import struct
import tempfile
from pathlib import Path
from typing import Any

_HEADER = struct.Struct("!I")
# A frame past this is a bug (or not our peer): the connection is dropped.
MAX_FRAME = 1 << 30

# Message kinds, first item of every frame: (kind, request id, *payload).
CALL = "call"  # a unary request: (CALL, id, method, args)
REPLY = "reply"  # its answer: (REPLY, id, value)
FAIL = "fail"  # an error instead: (FAIL, id, RemoteError)
OPEN = "open"  # a stream request: (OPEN, id, method, args)
ITEM = "item"  # one item of a stream: (ITEM, id, value)
END = "end"  # the stream ended: (END, id)
FEED = "feed"  # one input item of a stream that reads its input: (FEED, id, value)
CANCEL = "cancel"  # the caller went away: (CANCEL, id)
PUBLISH = "publish"  # a broadcast to every other peer: (PUBLISH, 0, payload)


class HubClosed(ConnectionError):
    """The hub connection is gone."""


def encode(message: tuple[Any, ...]) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader) -> tuple[Any, ...]:
    try:
        (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
        if size <= MAX_FRAME:
            body = await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError) as exc:
        raise HubClosed("hub connection closed") from exc
    if size > MAX_FRAME:
        raise HubClosed(f"frame of {size} bytes refused")
    message: tuple[Any, ...] = pickle.loads(body)
    return message


def same_user(writer: asyncio.StreamWriter) -> bool:
    """Whether the peer of a Unix socket runs as this process's user. Where the system does not
    tell (no `SO_PEERCRED`: macOS, BSD), the socket's 0600 mode in a 0700 directory decides."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return False
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def hub_path(data_dir: Path) -> Path:
    """Where the hub of the server on this data directory listens. In the data directory (0700)
    when the path fits a Unix socket's 107 bytes, else in a 0700 directory of this user's under
    the temporary directory, named after the data directory."""
    path = data_dir.resolve() / "hub.sock"
    if len(os.fsencode(path)) <= 100:
        return path
    digest = hashlib.sha256(os.fsencode(data_dir.resolve())).hexdigest()[:20]
    folder = Path(tempfile.gettempdir()) / f"maestrale-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.getuid() or folder.stat().st_mode & 0o077:
        raise RuntimeError(f"{folder} must belong to this user and be private (0700)")
    return folder / f"{digest}.sock"
