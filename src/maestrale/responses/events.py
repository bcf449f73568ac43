"""The events of a streamed response, from the conversation runtime's: `response.created` and
`response.in_progress` first; each output item opened (`response.output_item.added`), its
content (`content_part.added`, `output_text.delta`... or `function_call_arguments.delta`) and
closed (`...done`, `response.output_item.done`) in order; then `response.completed`,
`response.incomplete` or `response.failed` with the whole response. Every event carries its
`sequence_number`, counted from 0. The runtime's own steps (tool executions, handoffs) are not
items of a response: their results reach the client in the next answer's text and annotations.
"""

from __future__ import annotations

from typing import Any

from maestrale.responses.items import call_item, citations, message_item


class ResponseEvents:
    """Turns one run's conversation events into response events, numbered in order."""

    def __init__(self, after: int = -1) -> None:
        self.seq = after + 1
        self.index = -1  # the output index of the item last opened
        self.open: dict[str, Any] | None = None  # the message item being written
        self.text: list[str] = []
        self.chunks: list[dict[str, Any]] = []

    def _event(self, type_: str, **fields: Any) -> dict[str, Any]:
        event = {"type": type_, "sequence_number": self.seq, **fields}
        self.seq += 1
        return event

    def start(self, response: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            self._event("response.created", response=response),
            self._event("response.in_progress", response=response),
        ]

    def on(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The response events of one conversation event (none for the runtime's own steps)."""
        kind = event.get("type")
        if kind == "message.output.delta":
            return self._delta(event)
        if kind == "function.call.delta":
            out = self._close()
            self.index += 1
            item = {**call_item(event), "arguments": "", "status": "in_progress"}
            where = {"item_id": item["id"], "output_index": self.index}
            return [
                *out,
                self._event("response.output_item.added", output_index=self.index, item=item),
                self._event(
                    "response.function_call_arguments.delta", delta=event["arguments"], **where
                ),
                self._event(
                    "response.function_call_arguments.done",
                    arguments=event["arguments"],
                    name=event["name"],
                    **where,
                ),
                self._event(
                    "response.output_item.done", output_index=self.index, item=call_item(event)
                ),
            ]
        return []

    def _delta(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.open is None or self.open["id"] != event["id"]:
            out += self._close()
            self.index += 1
            self.open = message_item(event["id"], "", [], "in_progress")
            self.open["content"] = []
            out.append(
                self._event("response.output_item.added", output_index=self.index, item=self.open)
            )
            out.append(
                self._event(
                    "response.content_part.added",
                    item_id=event["id"],
                    output_index=self.index,
                    content_index=0,
                    part={"type": "output_text", "text": "", "annotations": [], "logprobs": []},
                )
            )
        content = event.get("content")
        if isinstance(content, str):
            self.text.append(content)
            out.append(
                self._event(
                    "response.output_text.delta",
                    item_id=event["id"],
                    output_index=self.index,
                    content_index=0,
                    delta=content,
                    logprobs=[],
                )
            )
        elif isinstance(content, dict):
            self.chunks.append(content)  # a citation or file: an annotation of the text
        return out

    def _close(self) -> list[dict[str, Any]]:
        """Close the message item being written."""
        if self.open is None:
            return []
        item_id, text = self.open["id"], "".join(self.text)
        cited = citations(self.chunks, len(text))
        done = message_item(item_id, text, cited, "completed")
        part = done["content"][0]
        where = {"item_id": item_id, "output_index": self.index, "content_index": 0}
        self.open, self.text, self.chunks = None, [], []
        return [
            self._event("response.output_text.done", text=text, logprobs=[], **where),
            self._event("response.content_part.done", part=part, **where),
            self._event("response.output_item.done", output_index=self.index, item=done),
        ]

    def finish(self, response: dict[str, Any]) -> list[dict[str, Any]]:
        """The closing events of a run that ended: completed, incomplete, or failed (an `error`
        event first, with the failure's code and message)."""
        out = self._close()
        status = response["status"]
        if status in ("completed", "incomplete"):
            return [*out, self._event(f"response.{status}", response=response)]
        error = response.get("error") or {"code": "server_error", "message": status}
        return [
            *out,
            self._event("error", code=error["code"], message=error["message"], param=None),
            self._event("response.failed", response=response),
        ]
