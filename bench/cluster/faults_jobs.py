"""Faults of the durable jobs, under the steady load: the worker holding a batch job's lease, then
a campaign's, is killed with SIGKILL mid-way (and restarted, as a supervisor would); the other
worker takes the job over once the lease expires, and every line and event is done once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from bench.cluster.context import Bench, now, until
from bench.cluster.report import FaultReport

JUDGES = "/v1/observability/judges"
CAMPAIGNS = "/v1/observability/campaigns"


def batch_input(lines: int, run_id: str, sleep_ms: int) -> tuple[bytes, set[str], set[str]]:
    """JSONL chat lines; every 7th fails upstream (400), every 23rd is not JSON (named by its
    position). The input, the ids expected in the output file and those in the error file."""
    rows, ok, failing = [], set(), set()
    for i in range(lines):
        if i % 23 == 22:
            rows.append(b"{broken line " + str(i).encode())
            failing.add(str(i))
            continue
        custom_id = f"id-{i}"
        # Distinct texts: the campaign tells events apart by their conversation.
        content = f"/sleep {sleep_ms}\nline {i} of {run_id}"
        if i % 7 == 6:
            content = f"/fail 400\nline {i} of {run_id}"
            failing.add(custom_id)
        else:
            ok.add(custom_id)
        doc = {"custom_id": custom_id, "body": {"messages": [{"role": "user", "content": content}]}}
        rows.append(orjson.dumps(doc))
    return b"\n".join(rows) + b"\n", ok, failing


async def _kill_holder(
    bench: Bench, report: FaultReport, job_id: str, progress: Any, total: int
) -> tuple[str | None, int, float]:
    """Once a fifth of the work is done, SIGKILL the worker holding the job's lease and start
    it again; (the victim, the progress at the kill, the kill's time)."""
    cluster = bench.cluster
    holder: list[str | None] = [None]

    async def under_way() -> bool:
        job = await bench.store.job(job_id)
        holder[0] = cluster.holder(job["lease_owner"])
        return holder[0] is not None and await progress() >= total // 5

    if await until(under_way, 120, every=0.02) is None:
        report.claim("a worker was killed mid-way", False, "the job never got a fifth done")
        return None, 0, now()
    victim = holder[0]
    assert victim is not None
    t_kill = now()
    await bench.in_thread(cluster.kill, victim)
    done_at_kill = await progress()
    report.claim(
        "a worker was killed mid-way",
        done_at_kill < total,
        f"{victim} killed at {done_at_kill} of {total}",
    )
    await bench.in_thread(cluster.start, victim)  # what a supervisor does
    resumed = await until(lambda: _advanced(progress, done_at_kill), 60)
    if resumed is not None:
        report.recovery = resumed - t_kill
    return victim, done_at_kill, t_kill


async def _advanced(progress: Any, since: int) -> bool:
    return bool(await progress() > since)


async def worker_kill_batch(bench: Bench) -> FaultReport:
    params = bench.params
    n = params.batch_lines
    report = FaultReport(f"SIGKILL a worker mid-batch ({n:,} lines)")
    report.recovery_what = "kill to the next line done (the lease expires first)"
    body, ok_ids, failing_ids = batch_input(n, bench.run_id, params.line_sleep_ms)
    files = {"file": (f"batch-{bench.run_id}.jsonl", body, "application/octet-stream")}
    up = await bench.client.post("/v1/files", data={"purpose": "batch"}, files=files)
    up.raise_for_status()
    spec = {"endpoint": "/v1/chat/completions", "model": "maestrale-echo"}
    created = await bench.client.post(
        "/v1/batch/jobs", json={**spec, "input_files": [up.json()["id"]]}
    )
    created.raise_for_status()
    batch_id = str(created.json()["id"])
    started = now()
    job_id = ""

    async def job_known() -> bool:
        nonlocal job_id
        job_id = str((await bench.store.batch(batch_id))["job_id"] or "")
        return bool(job_id)

    await until(job_known, 30)

    async def progress() -> int:
        return int((await bench.store.batch(batch_id))["completed"])

    await _kill_holder(bench, report, job_id, progress, n)

    async def final() -> bool:
        return str((await bench.store.batch(batch_id))["status"]) not in ("QUEUED", "RUNNING")

    await until(final, 120 + n / 50, every=0.2)
    state = await bench.store.batch(batch_id)
    job = await bench.store.job(job_id)
    lines = await bench.store.batch_lines(batch_id)
    rows = await bench.store.batch_rows(batch_id)
    expected = ok_ids | failing_ids
    lost = sorted(expected - set(lines))
    duplicated = sorted(i for i, count in lines.items() if count > 1)
    strangers = sorted(set(lines) - expected)
    report.sent, report.lost, report.duplicated = n, len(lost), len(duplicated)
    report.claim(
        "the job is taken over and finishes",
        state["status"] == "SUCCESS" and job["attempts"] >= 2,
        f"{state['status']}, attempt {job['attempts']}, {now() - started:.1f} s",
    )
    report.claim(
        "every line written exactly once",
        not lost and not duplicated and not strangers and rows == n,
        f"{len(lines)} ids in the files, {rows} result rows; lost {lost[:5]},"
        f" duplicated {duplicated[:5]}, unknown {strangers[:5]}",
    )
    outcome = await _outcomes(bench, batch_id)
    wrong = sorted((outcome["ok"] ^ ok_ids) | (outcome["error"] ^ failing_ids))
    report.failed = len(wrong)
    report.claim(
        "each line has the outcome of its request",
        not wrong,
        f"{len(wrong)} in the wrong file: {wrong[:5]}",
    )
    calls = await bench.store.line_calls(batch_id)
    again = sum(count - 1 for count in calls.values() if count > 1)
    unrecorded = len((ok_ids | {i for i in failing_ids if i.startswith("id-")}) - set(calls))
    if unrecorded:
        report.notes.append(
            f"{unrecorded} lines' chat completion events missing: the killed worker's accounting"
            " buffer (written every 0.25 s) died with it"
        )
    report.notes.append(
        f"{n / max(0.001, now() - started):.0f} lines/s overall; {again} model calls repeated"
        " (lines in flight on the killed worker run again; their results are written once)"
    )
    return report


async def _outcomes(bench: Bench, batch_id: str) -> dict[str, set[str]]:
    job = (await bench.client.get(f"/v1/batch/jobs/{batch_id}")).json()
    out: dict[str, set[str]] = {"ok": set(), "error": set()}
    for kind, file_id in (("ok", job.get("output_file")), ("error", job.get("error_file"))):
        if file_id:
            resp = await bench.client.get(f"/v1/files/{file_id}/content")
            out[kind] = {str(orjson.loads(line)["custom_id"]) for line in resp.content.splitlines()}
    return out


async def worker_kill_campaign(bench: Bench) -> FaultReport:
    m = bench.params.campaign_events
    report = FaultReport(f"SIGKILL a worker mid-campaign ({m:,} events)")
    report.recovery_what = "kill to the next event judged (the lease expires first)"
    since = datetime.now(UTC) - timedelta(seconds=1)
    judge = await bench.client.post(JUDGES, json=_judge(f"tone-{bench.run_id}"))
    judge.raise_for_status()
    body = {
        "search_params": {"filters": None},
        "judge_id": judge.json()["id"],
        "name": f"faults {bench.run_id}",
        "description": "judged while a worker is killed",
        "max_nb_events": m,
    }
    created = await bench.client.post(CAMPAIGNS, json=body)
    if created.status_code != 201:
        report.claim("campaign created", False, created.text[:200])
        return report
    campaign_id = str(created.json()["id"])
    started = now()
    info = await bench.store.campaign(campaign_id)
    selected = info["selected"]

    async def progress() -> int:
        return int((await bench.store.campaign(campaign_id))["judged"])

    await _kill_holder(bench, report, str(info["job_id"]), progress, selected)

    async def final() -> bool:
        return str((await bench.store.campaign(campaign_id))["status"]) != "RUNNING"

    await until(final, 120 + selected / 20, every=0.2)
    info = await bench.store.campaign(campaign_id)
    job = await bench.store.job(str(info["job_id"]))
    report.sent = selected
    report.lost = selected - info["judged"]
    report.failed = info["errors"]
    report.claim(
        "the campaign is taken over and completes",
        info["status"] == "COMPLETED" and job["attempts"] >= 2,
        f"{info['status']}, attempt {job['attempts']}, {now() - started:.1f} s",
    )
    report.claim(
        "every selected event judged exactly once",
        selected == m and info["judged"] == selected and info["errors"] == 0,
        f"{info['judged']} of {selected} judged ({m} asked), {info['errors']} errors",
    )
    calls = await bench.store.judge_calls(since)
    again = sum(count - 1 for count in calls.values() if count > 1)
    report.claim(
        "no event judged twice but the one in flight at the kill",
        again <= 1,
        f"{again} judge calls repeated",
    )
    if len(calls) < selected:
        report.notes.append(
            f"judge calls recorded for {len(calls)} of {selected} events: the killed worker's"
            " accounting buffer (written every 0.25 s) died with it"
        )
    report.notes.append(
        f"{selected / max(0.001, now() - started):.0f} events/s overall; a verdict is committed"
        " once per event (the event in flight at the kill is judged again, its verdict once)"
    )
    return report


def _judge(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": "judges the tone",
        "model_name": "maestrale-echo",
        "output": {
            "type": "CLASSIFICATION",
            "options": [
                {"value": "polite", "description": "courteous"},
                {"value": "rude", "description": "impolite"},
            ],
        },
        "instructions": "Is the assistant polite?",
        "tools": [],
    }
