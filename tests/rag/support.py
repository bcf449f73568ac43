"""RAG test helpers: a deployment's registration body, and the answer of a call that must
succeed."""

from __future__ import annotations

from typing import Any

FIELD = {
    "name": "text",
    "type": "string",
    "storage": "on_disk",
    "ranking": "text",
    "index_type": "bm25",
    "multidimensional": False,
}


def index(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "fields": [dict(FIELD)], "sd": f"schema {name} {{}}", **extra}


def deployment(name: str, *indexes: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "deployment": {
            "type": "vespa",
            "vespa_version": "8.400.15",
            "query_url": "https://vespa.example.com:8080/search/",
            "indexes": [index(i) for i in indexes],
        },
        **extra,
    }


async def ok(resp: Any) -> Any:
    response = await resp
    assert response.status_code == 200, response.text
    return response.json()
