"""A 512 MB upload and download through a live `maestrale serve`: MB/s each way, and the
server's peak resident memory growth (VmHWM, the kernel's high-water mark) over its idle size.
The target is under 64 MB whatever the file size: bodies are streamed, never held.

    .venv/bin/python -m bench.bench_files [--mb 512] [--s3]

With `--s3` the blobs go to an S3 server (moto's, started here) through the multipart upload.
The client streams too: neither side holds the file.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.support.app_fixtures import API_KEY
from tests.support.live import free_port, start_server, stop_server

CHUNK = 1024 * 1024
BOUNDARY = "maestrale-bench-boundary"


def status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field}")


def reset_peak(pid: int) -> None:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0), so the peak is the upload's own."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def body(size_mb: int, digest: hashlib._Hash) -> Iterator[bytes]:
    """A multipart body with a `size_mb` file of pseudo-random bytes, generated as it is sent."""
    yield (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    block = os.urandom(CHUNK)
    for i in range(size_mb):
        chunk = block[i % 251 :] + block[: i % 251]  # differs per MB, costs nothing to make
        digest.update(chunk)
        yield chunk
    yield f"\r\n--{BOUNDARY}--\r\n".encode()


def start_moto(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = open(tmp / "moto.log", "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    import boto3

    boto3.client("s3", endpoint_url=url, region_name="us-east-1").create_bucket(Bucket="bench")
    return proc, url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=512)
    parser.add_argument("--s3", action="store_true", help="store blobs on an S3 server (moto)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        data = tmp / "data"
        data.mkdir()
        env = {"MAESTRALE_LOG_LEVEL": "WARNING", "MAESTRALE_MAX_UPLOAD_BYTES": str(2**40)}
        moto = None
        if args.s3:
            creds = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}
            os.environ.update({**creds, "AWS_DEFAULT_REGION": "us-east-1"})
            moto, s3_url = start_moto(tmp)
            env.update(
                MAESTRALE_BLOB_BACKEND="s3",
                MAESTRALE_S3_BUCKET="bench",
                MAESTRALE_S3_ENDPOINT_URL=s3_url,
                MAESTRALE_S3_REGION="us-east-1",
            )
        proc, url = start_server(data, "--no-worker", env=env)
        headers = {"Authorization": f"Bearer {API_KEY}"}
        try:
            with httpx.Client(base_url=url, headers=headers, timeout=600) as client:
                client.get("/v1/files").raise_for_status()  # warm the routes up
                idle = status_mb(proc.pid, "VmRSS")
                reset_peak(proc.pid)
                sent = hashlib.sha256()
                started = time.perf_counter()
                resp = client.post(
                    "/v1/files",
                    content=body(args.mb, sent),
                    headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
                )
                up_seconds = time.perf_counter() - started
                resp.raise_for_status()
                file = resp.json()
                assert file["bytes"] == args.mb * CHUNK, file
                assert file["signature"] == sent.hexdigest()
                up_peak = status_mb(proc.pid, "VmHWM") - idle

                reset_peak(proc.pid)
                got = hashlib.sha256()
                size = 0
                started = time.perf_counter()
                with client.stream("GET", f"/v1/files/{file['id']}/content") as download:
                    download.raise_for_status()
                    for chunk in download.iter_bytes(CHUNK):
                        got.update(chunk)
                        size += len(chunk)
                down_seconds = time.perf_counter() - started
                assert size == args.mb * CHUNK and got.hexdigest() == sent.hexdigest()
                down_peak = status_mb(proc.pid, "VmHWM") - idle
        finally:
            stop_server(proc)
            if moto is not None:
                moto.terminate()
                moto.wait(10)
    backend = "s3 (moto)" if args.s3 else "local directory"
    print(f"{args.mb} MB file through a live server, blobs in a {backend}; idle RSS {idle:.1f} MB")
    print(
        f"  upload  : {up_seconds:6.2f} s  {args.mb / up_seconds:7.1f} MB/s  "
        f"server peak RSS growth {up_peak:+.1f} MB"
    )
    print(
        f"  download: {down_seconds:6.2f} s  {args.mb / down_seconds:7.1f} MB/s  "
        f"server peak RSS growth {down_peak:+.1f} MB"
    )


if __name__ == "__main__":
    main()
