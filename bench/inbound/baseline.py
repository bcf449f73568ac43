"""The peer: a bare FastAPI endpoint on uvicorn (uvloop, httptools, one process, as `maestrale
serve` runs) that only verifies a GitHub-style signature (HMAC-SHA256 of the body, hex, constant
time) and answers, with nothing stored and nothing queued. What the receiver costs beyond it is
the cost of durability (replay keys, the delivery row and its job, in one transaction) and of
the platform's middleware.

    .venv/bin/python -m bench.inbound.baseline PORT SECRET

Prints `ready` once it listens, then serves until SIGTERM.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import sys

import orjson
import uvicorn
from fastapi import FastAPI, Request, Response

PREFIX = "sha256="


def app_for(secret: str) -> FastAPI:
    key = secret.encode()
    app = FastAPI()

    @app.post("/v1/webhooks/{webhook_id}/receive")
    async def receive(webhook_id: str, request: Request) -> Response:
        body = await request.body()
        sent = request.headers.get("x-hub-signature-256", "")
        expected = PREFIX + hmac.new(key, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(sent.encode(), expected.encode()):
            return Response(b'{"detail":"bad signature"}', 401, media_type="application/json")
        answer = {"status": "accepted", "delivery_id": request.headers.get("x-github-delivery")}
        return Response(orjson.dumps(answer), 200, media_type="application/json")

    return app


async def main(port: int, secret: str) -> None:
    config = uvicorn.Config(
        app_for(secret),
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.05)
    print("ready", flush=True)
    await task


if __name__ == "__main__":
    import uvloop

    uvloop.run(main(int(sys.argv[1]), sys.argv[2]))
