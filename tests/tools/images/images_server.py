"""An OpenAI-compatible images API for the image_generation tests: `POST /<mode>/v1/images/
generations` answers as `mode` says (a base64 PNG, a URL to one, not an image, an error...), and
records the requests it received. Served on the loopback interface from a background thread."""

from __future__ import annotations

import asyncio
import base64
import io
from dataclasses import dataclass, field
from typing import Any

from PIL import Image
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route


def png(width: int = 64, height: int = 48) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def jpeg(width: int = 32, height: int = 32) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (30, 200, 30)).save(buffer, format="JPEG")
    return buffer.getvalue()


@dataclass
class ImagesProbe:
    """What the server saw (written by its thread, read by the tests)."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    downloads: int = 0


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def images_app(probe: ImagesProbe) -> Starlette:
    async def generations(request: Request) -> Response:
        mode = request.path_params["mode"]
        body = await request.json()
        probe.requests.append(
            {"mode": mode, "authorization": request.headers.get("authorization"), "body": body}
        )
        base = str(request.base_url).rstrip("/")
        port = request.url.port or 80
        created = 1_700_000_000
        if mode == "b64":
            item = {"b64_json": b64(png()), "revised_prompt": "A red rectangle, flat colour."}
            return JSONResponse({"created": created, "data": [item]})
        if mode == "jpeg":
            return JSONResponse({"created": created, "data": [{"b64_json": b64(jpeg())}]})
        if mode == "url":
            return JSONResponse({"created": created, "data": [{"url": f"{base}/files/image.png"}]})
        if mode == "data-url":
            return JSONResponse({"data": [{"url": "data:image/png;base64," + b64(png(8, 8))}]})
        if mode == "mapped-url":
            mapped = f"http://[::ffff:127.0.0.1]:{port}/files/image.png"
            return JSONResponse({"data": [{"url": mapped}]})
        if mode == "metadata-url":
            return JSONResponse({"data": [{"url": "http://169.254.169.254/latest/meta-data/"}]})
        if mode == "text":
            return JSONResponse({"data": [{"b64_json": b64(b"this is not an image at all")}]})
        if mode == "html-url":
            return JSONResponse({"data": [{"url": f"{base}/files/page.html"}]})
        if mode == "fake-png":
            fake = b"\x89PNG\r\n\x1a\n" + b"\x00garbage" * 100
            return JSONResponse({"data": [{"b64_json": b64(fake)}]})
        if mode == "huge":
            return JSONResponse({"data": [{"b64_json": b64(png() + b"\x00" * 3_000_000)}]})
        if mode == "not-base64":
            return JSONResponse({"data": [{"b64_json": "***not base64***"}]})
        if mode == "empty":
            return JSONResponse({"created": created, "data": []})
        if mode == "neither":
            return JSONResponse({"data": [{"revised_prompt": "nothing"}]})
        if mode == "unauthorized":
            key = (request.headers.get("authorization") or "").removeprefix("Bearer ")
            message = f"Incorrect API key provided: {key}. Find your key in your account."
            return JSONResponse({"error": {"message": message}}, status_code=401)
        if mode == "slow":
            for _ in range(1200):  # until the client gives up
                if await request.is_disconnected():
                    break
                await asyncio.sleep(0.1)
            return JSONResponse({"data": []})
        return PlainTextResponse("unknown mode", status_code=404)

    async def files(request: Request) -> Response:
        probe.downloads += 1
        if request.path_params["name"] == "image.png":
            return Response(png(), media_type="image/png")
        return Response("<html>not an image</html>", media_type="text/html")

    return Starlette(
        routes=[
            Route("/{mode}/v1/images/generations", generations, methods=["POST"]),
            Route("/files/{name}", files),
        ]
    )
