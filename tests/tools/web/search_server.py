"""A SearxNG-compatible search server for the web_search tests, serving the pages its results
point at, and hostile backends under `/hostile/<mode>` (huge, deep, not JSON, slow, dripping,
failing answers). Served on the loopback interface from a background thread."""

from __future__ import annotations

import asyncio
import io
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from PIL import Image
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

ARTICLE = """<!doctype html><html><head><title>The Maestrale wind</title>
<link rel="shortcut icon" href="/static/favicon.ico">
<script>var hidden = "script text that is not read";</script><style>p { color: red }</style>
</head><body><nav>Home | About | Contact</nav>
<article><h1>Maestrale</h1><p>The maestrale is a north-westerly <b>wind</b> of the
Mediterranean.</p><p>It blows over Sardinia and Corsica.</p></article>
<footer>Copyright footer</footer></body></html>"""

LATIN1 = (
    '<html><head><meta charset="windows-1252"><title>Caf\xe9</title></head>'
    "<body><p>Un caf\xe9 cr\xe8me, s'il vous pla\xeet.</p></body></html>"
).encode("cp1252")


@dataclass
class SearchProbe:
    """What the server saw (written by its thread, read by the tests)."""

    hits: Counter[str] = field(default_factory=Counter)
    queries: list[str] = field(default_factory=list)


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 120, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


def results_for(query: str, base: str, port: int) -> list[Any]:
    """The results of each query the tests send."""
    secret = f"http://[::ffff:127.0.0.1]:{port}/pages/secret"
    if query == "maestrale wind":
        return [
            {
                "url": f"{base}/pages/article",
                "title": "Maestrale - a wind",
                "content": "The maestrale is a wind.",
                "engine": "test",
            },
            {"url": f"{base}/pages/plain", "title": "Plain", "content": "A plain page."},
            {"url": f"{base}/pages/article", "title": "Duplicate", "content": "dup"},
            {"url": "javascript:alert(1)", "title": "Script", "content": "x"},
            "not an object",
            {"title": "No URL", "content": "nothing"},
            {"url": f"{base}/pages/image", "title": "A picture", "content": "An image."},
            {"url": f"{base}/pages/missing", "title": "Gone", "content": "A 404."},
            {"url": f"{base}/pages/latin1", "content": "Café"},
        ]
    if query == "cloud metadata":
        return [
            {"url": "http://169.254.169.254/latest/meta-data/", "title": "Metadata"},
            {"url": secret, "title": "Mapped loopback"},
            {"url": "http://[::ffff:a9fe:a9fe]/latest/meta-data/", "title": "Mapped metadata"},
            {"url": f"http://localhost:{port}/pages/secret", "title": "Named loopback"},
            {"url": f"{base}/pages/redirect-secret", "title": "Redirect"},
        ]
    if query == "redirect":
        return [
            {"url": f"{base}/pages/article", "title": "Article", "content": "a"},
            {"url": f"{base}/pages/redirect-secret", "title": "Redirect", "content": "r"},
        ]
    if query == "many":
        return [{"url": f"{base}/pages/n{i}", "title": f"Page {i}"} for i in range(40)]
    if query == "long strings":
        return [
            {"url": f"{base}/pages/plain", "title": "T" * 1_000_000, "content": "C\x00" * 10**5}
        ]
    return []


def search_app(probe: SearchProbe) -> Starlette:
    async def search(request: Request) -> Response:
        probe.hits["search"] += 1
        if request.query_params.get("format") != "json":
            return PlainTextResponse("format not enabled", status_code=403)
        query = request.query_params.get("q", "")
        probe.queries.append(query)
        base = str(request.base_url).rstrip("/")
        port = request.url.port or 80
        return JSONResponse({"query": query, "results": results_for(query, base, port)})

    async def page(request: Request) -> Response:
        name = request.path_params["name"]
        probe.hits[name] += 1
        if name == "article":
            return Response(ARTICLE, media_type="text/html; charset=utf-8")
        if name == "plain":
            return PlainTextResponse("A plain text page about the mistral and the maestrale.")
        if name == "latin1":
            return Response(LATIN1, media_type="text/html")
        if name == "image":
            return Response(png(), media_type="image/png")
        if name == "secret":
            return PlainTextResponse("the secret of the private network")
        if name == "redirect-secret":
            port = request.url.port or 80
            return RedirectResponse(f"http://[::ffff:127.0.0.1]:{port}/pages/secret", 302)
        if name.startswith("n"):
            return PlainTextResponse(f"page {name}")
        return PlainTextResponse("not found", status_code=404)

    async def hostile(request: Request) -> Response:
        mode = request.path_params["mode"]
        probe.hits[f"hostile:{mode}"] += 1
        if mode == "huge":
            return StreamingResponse(_huge(), media_type="application/json")
        if mode == "deep":
            body = '{"results": ' + "[" * 200_000 + "]" * 200_000 + "}"
            return Response(body, media_type="application/json")
        if mode == "html":
            return Response("<html><body>Hello</body></html>", media_type="text/html")
        if mode == "slow":
            for _ in range(1200):  # until the client gives up
                if await request.is_disconnected():
                    break
                await asyncio.sleep(0.1)
            return JSONResponse({"results": []})
        if mode == "drip":
            return StreamingResponse(_drip(), media_type="application/json")
        if mode == "error":
            return JSONResponse({"error": {"message": "the engines exploded"}}, status_code=500)
        if mode == "not-a-list":
            return JSONResponse({"results": {"url": "http://example.com/"}})
        if mode == "list":
            return JSONResponse([{"url": "http://example.com/"}])
        return PlainTextResponse("unknown mode", status_code=404)

    return Starlette(
        routes=[
            Route("/search", search),
            Route("/pages/{name}", page),
            Route("/hostile/{mode}/search", hostile),
        ]
    )


async def _huge() -> AsyncIterator[bytes]:
    yield b'{"results": ['
    item = b'{"url": "http://example.com/x", "title": "' + b"x" * 1000 + b'"},'
    for _ in range(2_000):  # ~20 MB
        yield item * 10
    yield b"{}]}"


async def _drip() -> AsyncIterator[bytes]:
    for _ in range(600):
        yield b" "
        await asyncio.sleep(0.2)
