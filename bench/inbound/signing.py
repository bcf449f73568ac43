"""Deliveries signed as GitHub signs them: HMAC-SHA256 of the body, hex, in
`X-Hub-Signature-256: sha256=<hex>`, with `X-GitHub-Event` and a fresh `X-GitHub-Delivery` id.
Every body is distinct (a counter and a random id), so none is a replay of another."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import uuid

import orjson

SECRET = "bench-inbound-secret"
# A push event of realistic size (~1.3 KB), shaped like GitHub's (trimmed).
_COMMIT = {
    "message": "Fix the retry of the nightly export when the bucket is throttled",
    "author": {"name": "Ada Lovelace", "email": "ada@example.com", "username": "ada"},
    "added": [],
    "removed": [],
    "modified": ["src/export/nightly.py", "tests/export/test_nightly.py"],
}


class Deliveries:
    """Signed GitHub `push` deliveries, each body and delivery id new."""

    def __init__(self, secret: str = SECRET) -> None:
        self.key = secret.encode()
        self.counter = itertools.count()

    def next(self) -> tuple[bytes, dict[str, str]]:
        n = next(self.counter)
        delivery_id = str(uuid.uuid4())
        body = orjson.dumps(
            {
                "ref": "refs/heads/main",
                "before": f"{n:040x}",
                "after": uuid.uuid4().hex + f"{n:08x}",
                "repository": {"id": 1296269, "full_name": "octo/dashboard", "private": False},
                "pusher": {"name": "ada", "email": "ada@example.com"},
                "sender": {"login": "ada", "id": 583231, "type": "User"},
                "commits": [{**_COMMIT, "id": f"{n:040x}"}] * 3,
                "bench": {"n": n, "delivery": delivery_id},
            }
        )
        signature = hmac.new(self.key, body, hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/bench",
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": delivery_id,
            "X-Hub-Signature-256": f"sha256={signature}",
        }
        return body, headers
