"""Registry test helpers: create an object over HTTP and read back what a call answered."""

from __future__ import annotations

from typing import Any

import httpx


async def create(
    client: httpx.AsyncClient, kind: str, name: str, definition: dict[str, Any], **fields: Any
) -> dict[str, Any]:
    resp = await client.post(f"/v2/{kind}", json={"name": name, "definition": definition, **fields})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def prompt(client: httpx.AsyncClient, name: str, content: str = "Hi", **fields: Any) -> Any:
    return await create(client, "prompts", name, {"content": content}, **fields)


async def new_version(client: httpx.AsyncClient, ref: str, content: str, **fields: Any) -> Any:
    resp = await client.post(
        f"/v2/prompts/{ref}/versions", json={"definition": {"content": content}, **fields}
    )
    assert resp.status_code == 200, resp.text
    return resp.json()


async def ok(resp: Any) -> Any:
    response = await resp
    assert response.status_code == 200, response.text
    return response.json()
