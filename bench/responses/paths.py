"""The calls the Responses benchmark times, over plain httpx (the wire is the contract): one
prompt as a chat completion, a response (`POST /v1/responses`) and a new conversation; and the
three ways a client holds a multi-turn exchange: a `previous_response_id` chain, a chat whose
client resends the whole history (the peer practice), a conversation appended to.

One-prompt answers are checked (the status, and the text: the chat completion's); a wrong one
raises, so it counts as an error of its path instead of a fast non-answer being timed. A turn of
an exchange must answer 200 with its id; its text and input tokens are returned, for the run to
compare across paths.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

# The same user text on every path: a sentence of ordinary length (~40 tokens).
PROMPT = (
    "Summarise in two sentences why a stored conversation lets a client send only its new "
    "message on each turn, and what the server must then read back before calling the model."
)
OVERHEAD_HEADER = "x-maestrale-overhead-ms"  # the server's own time, engine excluded (chat)

Call = Callable[[int], Awaitable[None]]


class WrongAnswer(Exception):
    """A call that did not give the answer its path must give."""


def response_text(body: dict[str, Any]) -> str:
    """The text of the `message` output items of a response (`output_text` parts)."""
    parts = [
        part.get("text", "")
        for item in body.get("output") or []
        if item.get("type") == "message"
        for part in item.get("content") or []
        if part.get("type") == "output_text"
    ]
    return "".join(parts)


def conversation_text(body: dict[str, Any]) -> str:
    """The text of the `message.output` entries of a conversation answer."""
    out = []
    for entry in body.get("outputs") or []:
        if entry.get("type") != "message.output":
            continue
        content = entry.get("content")
        if isinstance(content, str):
            out.append(content)
        else:
            out += [c.get("text", "") for c in content or [] if c.get("type") == "text"]
    return "".join(out)


@dataclass
class Turn:
    """What one call of a multi-turn exchange gave: its answer and its input tokens."""

    text: str
    input_tokens: int


@dataclass
class Paths:
    """The calls, on one keep-alive client; `reported` collects the server's self-reported
    overhead per path (when the route sends the header)."""

    http: httpx.AsyncClient
    model: str
    expected: str = ""  # the chat completion's answer to PROMPT (set by `check`)
    reported: dict[str, list[float]] = field(default_factory=dict)

    async def post(self, label: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.http.post(path, json=body)
        if response.status_code != 200:
            raise WrongAnswer(f"{path}: HTTP {response.status_code} {response.text[:300]}")
        if OVERHEAD_HEADER in response.headers:
            self.reported.setdefault(label, []).append(float(response.headers[OVERHEAD_HEADER]))
        data: dict[str, Any] = response.json()
        return data

    async def check(self) -> None:
        """One chat completion of PROMPT: the answer every path must give."""
        body = await self.post("check", "/v1/chat/completions", self.chat_body([]))
        self.expected = body["choices"][0]["message"]["content"] or ""
        if not self.expected:
            raise WrongAnswer(f"the chat completion has no text: {str(body)[:300]}")

    def chat_body(self, history: list[dict[str, str]], text: str = PROMPT) -> dict[str, Any]:
        return {"model": self.model, "messages": [*history, {"role": "user", "content": text}]}

    def _same(self, got: str, what: str) -> None:
        if got != self.expected:
            raise WrongAnswer(f"{what} answered {got[:120]!r}, the chat {self.expected[:120]!r}")

    # ------------------------------------------------------------------ one prompt

    def chat(self, label: str) -> Call:
        async def call(i: int) -> None:
            body = await self.post(label, "/v1/chat/completions", self.chat_body([]))
            self._same(body["choices"][0]["message"]["content"] or "", label)

        return call

    def response(self, label: str, store: bool) -> Call:
        async def call(i: int) -> None:
            body = {"model": self.model, "input": PROMPT, "store": store}
            answer = await self.post(label, "/v1/responses", body)
            self._same(response_text(answer), label)

        return call

    def conversation(self, label: str, store: bool) -> Call:
        async def call(i: int) -> None:
            body = {"model": self.model, "inputs": PROMPT, "store": store}
            self._same(conversation_text(await self.post(label, "/v1/conversations", body)), label)

        return call

    # ------------------------------------------------------------------ one turn of an exchange

    async def chain_turn(self, label: str, text: str, previous: str | None) -> tuple[str, Turn]:
        """A response continuing `previous` (none on the first turn), stored (the default of
        OpenAI clients, and what a chain needs): its id and what it gave."""
        body: dict[str, Any] = {"model": self.model, "input": text}
        if previous is not None:
            body["previous_response_id"] = previous
        answer = await self.post(label, "/v1/responses", body)
        usage = answer.get("usage") or {}
        return answer["id"], Turn(response_text(answer), int(usage.get("input_tokens", -1)))

    async def resend_turn(self, label: str, text: str, history: list[dict[str, str]]) -> Turn:
        """A chat completion of the whole history and `text`; both are added to `history`."""
        answer = await self.post(label, "/v1/chat/completions", self.chat_body(history, text))
        content = answer["choices"][0]["message"]["content"] or ""
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": content}]
        return Turn(content, int(answer["usage"]["prompt_tokens"]))

    async def append_turn(
        self, label: str, text: str, conversation: str | None
    ) -> tuple[str, Turn]:
        """A new conversation (first turn) or an append to `conversation`: its id and answer."""
        if conversation is None:
            body = {"model": self.model, "inputs": text}
            answer = await self.post(label, "/v1/conversations", body)
        else:
            answer = await self.post(label, f"/v1/conversations/{conversation}", {"inputs": text})
        usage = answer["usage"]
        return answer["conversation_id"], Turn(conversation_text(answer), usage["prompt_tokens"])
