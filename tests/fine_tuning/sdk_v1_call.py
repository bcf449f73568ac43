"""One call of the official `mistralai==1.12.4` SDK (the fine-tuning jobs' SDK), run as a program:

    python sdk_v1_call.py URL KEY fine_tuning.jobs.create '{"model": ...}'

prints `{"type": <the SDK's result class>, "body": <the result as JSON>}`, or on an error
`{"error": <class>, "status": <HTTP status>, "body": <response text>}`. A `file` argument
`{"file_name": N, "path": P}` is uploaded from P. It runs in its own interpreter with the 1.12.4
SDK first on its path (`sdk_v1.py`), since the venv's own mistralai is 2.8.0.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    # Imported by name: the type checker sees the venv's 2.8.0, whose layout differs.
    sdk: Any = importlib.import_module("mistralai")
    version = importlib.import_module("mistralai._version").__version__
    assert version == "1.12.4", version
    url, key, operation, raw = sys.argv[1:5]
    kwargs: dict[str, Any] = json.loads(raw)
    if isinstance(kwargs.get("file"), dict) and "path" in kwargs["file"]:
        given = kwargs["file"]
        kwargs["file"] = {
            "file_name": given["file_name"],
            "content": Path(given["path"]).read_bytes(),
        }
    target: Any = sdk.Mistral(api_key=key, server_url=url)
    *path, method = operation.split(".")
    for name in path:
        target = getattr(target, name)
    try:
        result = getattr(target, method)(**kwargs)
    except Exception as exc:  # the SDK's errors carry the HTTP answer
        status = getattr(exc, "status_code", None)
        body = getattr(exc, "body", str(exc))
        out = {"error": type(exc).__name__, "status": status, "body": body}
    else:
        dumped = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
        out = {"type": type(result).__name__, "body": dumped}
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
