"""Dataset import and export at volume through a live `maestrale serve` (SQLite): upload a JSONL
of N conversations, import it into a dataset (the worker's durable task: records/s), copy the
dataset into another (import from dataset), export it to JSONL (records/s) and the server's
peak resident memory growth during the export (VmHWM over the size before it; the export is
streamed page by page, so it should stay flat whatever N).

    .venv/bin/python -m bench.observability.datasets_bench [--records 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.bench_files import reset_peak, status_mb
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

DATASETS = "/v1/observability/datasets"


def wait(client: httpx.Client, dataset_id: str, task: dict[str, Any]) -> dict[str, Any]:
    while task["status"] == "RUNNING":
        time.sleep(0.2)
        task = client.get(f"{DATASETS}/{dataset_id}/tasks/{task['id']}").json()
    return task


def _start(data: Path) -> tuple[Any, str]:
    """The server; on a loaded machine its start can exceed start_server's 60 s: try again."""
    for attempt in range(3):
        try:
            return start_server(data)
        except RuntimeError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    n = parser.parse_args().records
    lines = b"".join(
        orjson.dumps(
            {
                "payload": {
                    "messages": [
                        {"role": "user", "content": f"question number {i} " + "x" * 200},
                        {"role": "assistant", "content": f"answer number {i} " + "y" * 200},
                    ]
                },
                "properties": {"i": i},
            }
        )
        + b"\n"
        for i in range(n)
    )
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        proc, url = _start(data)
        try:
            headers = {"Authorization": f"Bearer {API_KEY}"}
            with httpx.Client(base_url=url, headers=headers, timeout=600) as client:
                files = {"file": ("records.jsonl", lines, "application/octet-stream")}
                file_id = client.post("/v1/files", data={"purpose": "batch"}, files=files).json()[
                    "id"
                ]
                ds = client.post(DATASETS, json={"name": "bench", "description": ""}).json()
                started = time.perf_counter()
                task = client.post(
                    f"{DATASETS}/{ds['id']}/imports/from-file", json={"file_id": file_id}
                ).json()
                task = wait(client, ds["id"], task)
                took = time.perf_counter() - started
                print(f"import from file: {n} records in {took:.2f}s ({n / took:.0f} records/s)")
                print(f"  task: {task['status']} {task['message']}")

                ids = [
                    r["id"]
                    for page in range(1, 3)
                    for r in client.get(
                        f"{DATASETS}/{ds['id']}/records", params={"page": page, "page_size": 1000}
                    ).json()["records"]["results"]
                ]
                copy = client.post(DATASETS, json={"name": "copy", "description": ""}).json()
                started = time.perf_counter()
                task = client.post(
                    f"{DATASETS}/{copy['id']}/imports/from-dataset",
                    json={"dataset_record_ids": ids},
                ).json()
                task = wait(client, copy["id"], task)
                took = time.perf_counter() - started
                print(f"import from dataset: {len(ids)} records in {took:.2f}s ({task['status']})")

                reset_peak(proc.pid)
                before = status_mb(proc.pid, "VmRSS")
                started = time.perf_counter()
                link = client.get(f"{DATASETS}/{ds['id']}/exports/to-jsonl").json()["file_url"]
                took = time.perf_counter() - started
                peak = status_mb(proc.pid, "VmHWM")
                size = len(httpx.get(link, timeout=600).content)
                print(
                    f"export to jsonl: {n} records, {size / 1e6:.1f} MB in {took:.2f}s "
                    f"({n / took:.0f} records/s); server peak RSS +{peak - before:.1f} MB"
                )
        finally:
            stop_server(proc)


if __name__ == "__main__":
    main()
