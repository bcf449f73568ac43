"""Whether a store of the local cluster answers: Redis, the S3 bucket (made if missing), the
Temporal frontend with Maestrale's search attributes registered."""

from __future__ import annotations

import asyncio
import socket


def redis_ready(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(64).startswith(b"+PONG")


def bucket_ready(port: int, bucket: str) -> bool:
    """The moto server answers; the bucket exists (made on its first answer: moto keeps
    everything in memory)."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    names = [b["Name"] for b in client.list_buckets().get("Buckets", [])]
    if bucket not in names:
        client.create_bucket(Bucket=bucket)
    return True


def temporal_ready(port: int, namespace: str) -> bool:
    """The namespace answers and has the search attributes (the dev server registers them
    after its port opens, as `serve`'s embedded one does)."""
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
    from temporalio.client import Client

    from maestrale.workflows.temporal.devserver import SEARCH_ATTRIBUTES

    async def check() -> bool:
        client = await asyncio.wait_for(Client.connect(f"127.0.0.1:{port}", namespace=namespace), 5)
        found = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
        return not set(SEARCH_ATTRIBUTES) - set(found.custom_attributes)

    return asyncio.run(check())
