"""Calls of one release of the official `mistralai` SDK, run as a program that takes them as JSON
lines on stdin (`tests/support/sdks.py` starts it with that release first on its path):

    {"url": U, "key": K, "operation": "beta.connectors.list", "kwargs": {...}}

and answers each with one line: `{"type": <result class>, "types": [every model class in it],
"body": <the result as JSON>}`, or `{"error": <class>, "status": <HTTP status>, "body": <text>}`.
A streamed result is read to its end (`body` is the list of its events). A kwarg given as
`{"file_name": N, "path": P}` is uploaded from P.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any


def _plain(value: Any, types: set[str]) -> Any:
    """`value` as JSON, noting the class name of every SDK model met on the way."""
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        types.add(type(value).__name__)
        # A paginated answer carries its `next` page as a function: not part of the answer.
        pages = {name for name, item in vars(value).items() if callable(item)}
        for item in vars(value).values():
            if not callable(item):
                _plain(item, types)
        return dump(mode="json", by_alias=True, exclude=pages or None)
    if isinstance(value, dict):
        return {str(k): _plain(v, types) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, types) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, bytes):
        return {"bytes": len(value)}
    if hasattr(value, "iter_bytes") and hasattr(value, "status_code"):  # a download
        return {"bytes": len(value.read())}
    if hasattr(value, "__iter__"):  # an event stream
        with value if hasattr(value, "__enter__") else _Nothing():
            return [_plain(v, types) for v in value]
    return repr(value)


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


def _files(kwargs: dict[str, Any]) -> dict[str, Any]:
    for name, given in kwargs.items():
        if isinstance(given, dict) and set(given) == {"file_name", "path"}:
            content = Path(given["path"]).read_bytes()
            kwargs[name] = {"file_name": given["file_name"], "content": content}
    return kwargs


def _say(answer: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(answer, default=str) + "\n")
    sys.stdout.flush()


def main() -> None:
    sdk: Any = importlib.import_module("mistralai.client")
    version = importlib.import_module("mistralai.client._version").__version__
    _say({"version": version})
    clients: dict[tuple[str, str], Any] = {}
    for line in sys.stdin:
        request = json.loads(line)
        where = (request["url"], request["key"])
        if where not in clients:
            clients[where] = sdk.Mistral(api_key=request["key"], server_url=request["url"])
        target = clients[where]
        *path, method = request["operation"].split(".")
        try:
            for name in path:
                target = getattr(target, name)
            result = getattr(target, method)(**_files(request.get("kwargs") or {}))
            types: set[str] = set()
            body = _plain(result, types)
            answer = {"type": type(result).__name__, "types": sorted(types), "body": body}
        except Exception as exc:  # the SDK's errors carry the HTTP answer
            status = getattr(exc, "status_code", None)
            text = getattr(exc, "body", None) or str(exc)
            answer = {"error": type(exc).__name__, "status": status, "body": text}
        _say(answer)


if __name__ == "__main__":
    main()
