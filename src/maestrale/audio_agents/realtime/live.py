"""The sessions whose WebSocket this process serves: one socket per session at a time, and a way
for `DELETE /v1/audio/sessions/{id}` to end a live one on whichever replica serves it (the
invalidation `audio_session`, published once the session's end committed). Kept on the app
(not the module): each app has its own."""

from __future__ import annotations

import asyncio

from starlette.requests import HTTPConnection

from maestrale.core.app_services import app_services
from maestrale.core.auth.invalidation import Invalidation

_STATE_KEY = "audio_live_sessions"


class LiveSessions:
    def __init__(self) -> None:
        self._stops: dict[str, asyncio.Event] = {}

    def claim(self, session_id: str) -> asyncio.Event | None:
        """The stop signal of the session's socket, or None when another socket serves it."""
        if session_id in self._stops:
            return None
        stop = self._stops[session_id] = asyncio.Event()
        return stop

    def release(self, session_id: str, stop: asyncio.Event) -> None:
        if self._stops.get(session_id) is stop:
            del self._stops[session_id]

    def live(self, session_id: str) -> bool:
        return session_id in self._stops

    def stop(self, session_id: str) -> None:
        stop = self._stops.get(session_id)
        if stop is not None:
            stop.set()

    def on_invalidation(self, item: Invalidation) -> None:
        if item.kind == "audio_session" and item.id:
            self.stop(item.id)


def live_sessions(connection: HTTPConnection) -> LiveSessions:
    state = connection.app.state
    found: LiveSessions | None = getattr(state, _STATE_KEY, None)
    if found is None:
        found = LiveSessions()
        setattr(state, _STATE_KEY, found)
        app_services(connection).invalidator.subscribe_local(found.on_invalidation)
    return found
