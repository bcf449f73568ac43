"""Responses benchmark: the time `POST /v1/responses` adds over a chat completion of the same
prompt and model (target ≤ 2 ms p50), and a 100-turn `previous_response_id` chain, whose per-turn
overhead must not grow with the chain's length (issue 34).

One run starts `maestrale serve --no-worker` (one process, its own data dir, migrated first;
SQLite, and with `--postgres URL` then a scratch Postgres database too, dropped at the end) and
drives it with plain httpx on the builtin engine's `maestrale-echo`. For each backend:

1. one prompt, sequential (c=1): a chat completion, a response with `store: false` and with
   `store: true` (the default of OpenAI clients), and a new conversation `store: false` / `true`
   (the runtime responses are built on, for reference); one call of each per round, the order
   rotated every round, after a warm-up. p50/p95/p99, the difference of each p50 with the chat
   completion's, the median of the per-round differences, CPU per call of the server and the
   client. Every answer must be the chat completion's text.
2. 100-turn exchanges, one after another (so the machine's drift does not line up with the turn
   number): a `previous_response_id` chain (stored), a chat whose client resends the whole
   history (the peer practice), a conversation appended to; one turn of each per round, rotated.
   Latency at turns 1, 2, 10, 50, 100 (the median over the chains and turns t-2..t+2; turn 1
   alone: it has no previous response), over turns 2-11 and 91-100, its slope over turns
   2..100; per round, the chain minus the resent chat (the time the chain adds over a chat that
   carries the same history) and minus the conversation append (what the responses layer adds
   over the conversation it is a turn of); the server's CPU time per turn, by halves.

While `/v1/responses` does not answer 200 (before issue 34 lands it is a 501), its rows are left
out and the run says so.

    .venv/bin/python -m bench.responses.run [--quick] [--rounds N] [--chains K] [--turns T]
        [--postgres URL] [--model ID] [--json FILE]

bench/responses/README.md says how to read the tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.gateway.processes import BenchError, cpu_seconds, process_tree
from bench.gateway.targets import PostgresDatabases, Spec, migrate_maestrale
from bench.harness import Result, interleaved, paired_median, run_main
from bench.responses.paths import PROMPT, Paths, Turn, WrongAnswer
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

TARGET_ADDED_P50_MS = 2.0
MODEL = "maestrale-echo"  # the builtin engine's chat model: the model's own time is ~nothing
REPORTED_TURNS = (1, 2, 10, 50, 100)
WINDOW = 2  # turns either side of a reported turn


@dataclass(frozen=True)
class Profile:
    rounds: int  # sequential rounds of the one-prompt table
    warmup: int
    chains: int  # exchanges per path
    turns: int


FULL = Profile(rounds=1000, warmup=50, chains=10, turns=100)
QUICK = Profile(rounds=200, warmup=20, chains=3, turns=100)


async def start_maestrale(
    db_url: str, tmp: Path, label: str
) -> tuple[subprocess.Popen[bytes], str]:
    """`maestrale migrate` (bench/gateway's, in `tmp/label`), then `maestrale serve --no-worker`
    on that data dir, as tests/support/live.py starts it (its bootstrap key is API_KEY)."""
    migrate = await asyncio.to_thread(migrate_maestrale, Spec(label, "maestrale"), tmp, db_url)
    if await asyncio.to_thread(migrate.wait, 300) != 0:
        log = (tmp / label / "migrate.log").read_text(errors="replace")
        raise BenchError(f"`maestrale migrate` failed: {log[-2000:]}")
    env = {"MAESTRALE_LOG_LEVEL": "WARNING"}
    args = ("--no-worker", "--database-url", db_url)
    try:
        return await asyncio.to_thread(start_server, tmp / label / "data", *args, env=env)
    except RuntimeError as exc:
        raise BenchError(str(exc)[-3000:]) from exc


async def responses_refusal(paths: Paths) -> str:
    """Why `POST /v1/responses` cannot be measured ('' when it answers the chat's text)."""
    try:
        await paths.response("probe", store=False)(0)
    except WrongAnswer as exc:
        return str(exc)
    return ""


# ---------------------------------------------------------------------------- one prompt


def _row(r: Result, chat: Result, label_width: int) -> str:
    cpu = "".join(f"{r.cpu_ms(name):>10.2f}" for name in ("maestrale", "client"))
    added = f"{r.pct(50) - chat.pct(50):+8.2f} {paired_median(r, chat):+8.2f}"
    return (
        f"{r.label:<{label_width}} {len(r.latencies):>5} {r.pct(50):>6.2f} {r.pct(95):>6.2f} "
        f"{r.pct(99):>6.2f} {added}{cpu}"
    )


def one_prompt_table(
    results: list[Result], profile: Profile, reported: dict[str, list[float]]
) -> list[str]:
    """One row per path, each compared with the first (the chat completion)."""
    chat, w = results[0], 34
    head = (
        f"{'path':<{w}} {'calls':>5} {'p50':>6} {'p95':>6} {'p99':>6} {'+p50':>8} {'+paired':>8}"
        f"{'CPU srv':>10}{'CPU cli':>10}"
    )
    out = [
        f"One prompt, sequential (c=1), interleaved, {profile.rounds} rounds after "
        f"{profile.warmup} warm-up rounds (ms; +p50: p50 minus the chat completion's; +paired: "
        "median of the per-round differences; CPU ms per call of the server and of this client)",
        head,
        "-" * len(head),
        *(_row(r, chat, w) for r in results),
    ]
    for r in results[1:]:
        if r.label.startswith("response"):
            added = r.pct(50) - chat.pct(50)
            verdict = "met" if added <= TARGET_ADDED_P50_MS else "NOT met"
            out.append(
                f"{r.label} adds {added:+.2f} ms at p50 over the chat completion "
                f"(target <= {TARGET_ADDED_P50_MS:g} ms: {verdict})"
            )
    out += [
        f"  {r.label}: {r.errors} errors, the first: {r.first_error}" for r in results if r.errors
    ]
    sent = [(r.label, reported[r.label]) for r in results if r.label in reported]
    if sent:
        medians = ", ".join(f"{label} {statistics.median(v):.2f}" for label, v in sent)
        out.append(
            f"the server's own x-maestrale-overhead-ms, p50 of every call (where sent): {medians}"
        )
    return out


async def one_prompt(
    paths: Paths, pids: dict[str, list[int]], profile: Profile, served: bool, raw: dict[str, Any]
) -> list[str]:
    calls = [("chat completion", paths.chat("chat completion"))]
    if served:
        calls += [
            ("response, store=false", paths.response("response, store=false", store=False)),
            ("response, store=true", paths.response("response, store=true", store=True)),
        ]
    calls += [
        ("conversation, store=false", paths.conversation("conversation, store=false", False)),
        ("conversation, store=true", paths.conversation("conversation, store=true", True)),
    ]
    results = await interleaved(calls, profile.rounds, profile.warmup, pids)
    raw["one_prompt"] = {r.label: r.latencies for r in results}
    return one_prompt_table(results, profile, paths.reported)


# ---------------------------------------------------------------------------- exchanges

CHAIN = "response chain (previous_response_id)"
RESEND = "chat, client resends the history"
APPEND = "conversation append"
OVER_RESEND = "chain minus resent chat"
OVER_APPEND = "chain minus conversation append"


@dataclass
class Exchanges:
    """Per path, per turn (0-based): the latency (ms) of each chain, the server's CPU time
    (ms, whole clock ticks: only sums over many calls mean something), the input tokens, the
    server's self-reported overhead (when sent); errors by path."""

    turns: int
    server: list[int]  # the server's processes
    latency: dict[str, list[list[float]]] = field(default_factory=dict)
    cpu: dict[str, list[list[float]]] = field(default_factory=dict)
    tokens: dict[str, list[list[int]]] = field(default_factory=dict)
    reported: dict[str, list[list[float]]] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)
    # Per turn, within a round: the chain minus the resent chat, minus the conversation append.
    added: dict[str, list[list[float]]] = field(default_factory=dict)
    disagreements: list[str] = field(default_factory=list)

    def record(
        self, label: str, turn: int, ms: float, cpu: float, got: Turn, reported: float | None
    ) -> None:
        self.latency.setdefault(label, [[] for _ in range(self.turns)])[turn].append(ms)
        self.cpu.setdefault(label, [[] for _ in range(self.turns)])[turn].append(cpu)
        self.tokens.setdefault(label, [[] for _ in range(self.turns)])[turn].append(
            got.input_tokens
        )
        if reported is not None:
            self.reported.setdefault(label, [[] for _ in range(self.turns)])[turn].append(reported)

    def window(self, values: list[list[float]], turn: int) -> float:
        """The median over the chains of turn `turn` (1-based) and the turns around it (turn 1
        alone, it starts the exchange)."""
        if turn == 1:
            picked = values[0]
        else:
            low, high = max(2, turn - WINDOW), min(self.turns, turn + WINDOW)
            picked = [v for t in range(low, high + 1) for v in values[t - 1]]
        return statistics.median(picked) if picked else float("nan")

    def span(self, values: list[list[float]], low: int, high: int) -> float:
        """The median over the chains and turns `low`..`high` (1-based)."""
        picked = [v for t in range(max(1, low), min(self.turns, high) + 1) for v in values[t - 1]]
        return statistics.median(picked) if picked else float("nan")

    def mean(self, values: list[list[float]], low: int, high: int) -> float:
        """The mean over the chains and turns `low`..`high` (1-based)."""
        picked = [v for t in range(max(1, low), min(self.turns, high) + 1) for v in values[t - 1]]
        return statistics.fmean(picked) if picked else float("nan")

    def slope(self, values: list[list[float]]) -> float:
        """Least-squares slope (µs per turn) of the per-turn medians over turns 2..T."""
        points = [(t + 1, statistics.median(v)) for t, v in enumerate(values) if t and v]
        if len(points) < 2:
            return float("nan")
        return statistics.linear_regression(*zip(*points, strict=True)).slope * 1000


async def exchange(paths: Paths, chain_no: int, labels: list[str], out: Exchanges) -> None:
    """One exchange of `out.turns` turns on each path, one turn of each per round (rotated).
    A path that fails stops for this exchange (a chain cannot go on without its last id)."""
    previous: str | None = None
    history: list[dict[str, str]] = []
    conversation: str | None = None
    alive = set(labels)
    for turn in range(out.turns):
        text = f"Turn {turn + 1} of exchange {chain_no}. {PROMPT}"
        answers: dict[str, Turn] = {}
        spent: dict[str, float] = {}
        shift = turn % len(labels)
        for label in labels[shift:] + labels[:shift]:
            if label not in alive:
                continue
            seen = len(paths.reported.get(label, []))
            cpu = cpu_seconds(out.server)
            started = time.perf_counter()
            try:
                if label == CHAIN:
                    previous, got = await paths.chain_turn(label, text, previous)
                elif label == RESEND:
                    got = await paths.resend_turn(label, text, history)
                else:
                    conversation, got = await paths.append_turn(label, text, conversation)
            except (WrongAnswer, httpx.HTTPError, KeyError, ValueError) as exc:
                alive.discard(label)
                out.errors.setdefault(label, []).append(f"turn {turn + 1}: {exc}"[:300])
                continue
            ms = (time.perf_counter() - started) * 1000
            cpu = (cpu_seconds(out.server) - cpu) * 1000
            sent = paths.reported.get(label, [])
            out.record(label, turn, ms, cpu, got, sent[-1] if len(sent) > seen else None)
            answers[label], spent[label] = got, ms
        for other, name in ((RESEND, OVER_RESEND), (APPEND, OVER_APPEND)):
            if CHAIN in spent and other in spent:
                values = out.added.setdefault(name, [[] for _ in range(out.turns)])
                values[turn].append(spent[CHAIN] - spent[other])
        if len({a.text for a in answers.values()}) > 1 and len(out.disagreements) < 3:
            texts = {label: a.text[:80] for label, a in answers.items()}
            out.disagreements.append(f"exchange {chain_no} turn {turn + 1}: {texts}")


def _median_or_nan(values: list[int]) -> float:
    return statistics.median(values) if values else float("nan")


def exchanges_table(out: Exchanges, labels: list[str], chains: int) -> list[str]:
    shown = [t for t in REPORTED_TURNS if t <= out.turns]
    w, last = 38, out.turns
    early, late = (2, 11), (last - 9, last)
    head = (
        f"{'path':<{w}}"
        + "".join(f"{'t' + str(t):>8}" for t in shown)
        + "".join(f"{f't{a}-{b}':>9}" for a, b in (early, late))
        + f"{'µs/turn':>9}{'input tokens':>15}"
    )
    out_lines = [
        f"{out.turns}-turn exchanges, {chains} per path, sequential, one turn of each path per "
        f"round (ms; tN: median over the chains and turns N-{WINDOW}..N+{WINDOW}, t1 alone; "
        "tA-B: over turns A..B; µs/turn: least-squares slope of the per-turn medians over turns "
        "2..T; input tokens at turn 1 and the last; the chain minus another path: the per-round "
        "differences)",
        head,
        "-" * len(head),
    ]

    def row(name: str, values: list[list[float]], tokens: str = "") -> str:
        cells = "".join(f"{out.window(values, t):>8.2f}" for t in shown)
        cells += "".join(f"{out.span(values, *turns):>9.2f}" for turns in (early, late))
        return f"{name:<{w}}{cells}{out.slope(values):>+9.1f}{tokens:>15}"

    for label in labels:
        values = out.latency.get(label)
        if values is None:
            continue
        tok = out.tokens[label]
        tokens = f"{_median_or_nan(tok[0]):.0f} -> {_median_or_nan(tok[-1]):.0f}"
        out_lines.append(row(label, values, tokens))
        if label in out.reported:
            out_lines.append(row("  its x-maestrale-overhead-ms", out.reported[label]))
    for name, values in out.added.items():
        out_lines.append(row(name, values))
    if OVER_RESEND in out.added:
        # What the chain adds over a chat that carries the same history, early and late.
        values = out.added[OVER_RESEND]
        first, final = out.span(values, *early), out.span(values, *late)
        out_lines.append(
            f"the chain adds {first:+.2f} ms over the resent chat on turns {early[0]}-{early[1]} "
            f"and {final:+.2f} ms on turns {late[0]}-{late[1]}: {final - first:+.2f} ms"
        )
    for label, errors in out.errors.items():
        out_lines.append(f"  {label}: {len(errors)} exchanges broken, the first: {errors[0]}")
    out_lines += [f"  answers differ: {d}" for d in out.disagreements]
    return [*out_lines, "", *cpu_table(out, labels)]


def cpu_table(out: Exchanges, labels: list[str]) -> list[str]:
    """The server's CPU time per call, by halves of the exchanges: steadier than latencies on a
    busy machine, and what decides how many turns a core serves."""
    half, w = (out.turns + 1) // 2, 38
    spans = [(1, 1), (2, half), (half + 1, out.turns)]
    names = [f"t{a}" if a == b else f"t{a}-{b}" for a, b in spans]
    head = f"{'path':<{w}}" + "".join(f"{n:>10}" for n in names) + f"{'change':>10}"
    lines = [
        "The server's CPU time per turn (ms, mean over the exchanges; change: the second half "
        "minus the first, turn 1 left out; it holds the background work that ran meanwhile, "
        "such as the accounting writer's rows, which carry each model call's whole input)",
        head,
        "-" * len(head),
    ]
    means: dict[str, list[float]] = {}
    for label in labels:
        if label in out.cpu:
            means[label] = [out.mean(out.cpu[label], *span) for span in spans]
    for name, other in ((OVER_RESEND, RESEND), (OVER_APPEND, APPEND)):
        if CHAIN in means and other in means:
            means[name] = [a - b for a, b in zip(means[CHAIN], means[other], strict=True)]
    for name, row in means.items():
        cells = "".join(f"{v:>10.2f}" for v in row)
        lines.append(f"{name:<{w}}{cells}{row[2] - row[1]:>+10.2f}")
    return lines


async def exchanges(
    paths: Paths,
    server: list[int],
    profile: Profile,
    served: bool,
    label: str,
    raw: dict[str, Any],
) -> list[str]:
    labels = [CHAIN, RESEND, APPEND] if served else [RESEND, APPEND]
    out = Exchanges(profile.turns, server)
    for chain_no in range(profile.chains):
        await exchange(paths, chain_no, labels, out)
        print(f"[{label}] exchange {chain_no + 1}/{profile.chains} done", flush=True)
    raw["exchanges"] = {
        "latency_ms": out.latency,
        "server_cpu_ms": out.cpu,
        "input_tokens": out.tokens,
        "reported_overhead_ms": out.reported,
        "chain_minus_ms": out.added,
    }
    return exchanges_table(out, labels, profile.chains)


# ---------------------------------------------------------------------------- the run


async def bench_backend(label: str, db_url: str, tmp: Path, args: argparse.Namespace) -> list[str]:
    profile: Profile = args.profile
    proc, url = await start_maestrale(db_url, tmp, label)
    try:
        pids = {"maestrale": process_tree(proc.pid), "client": [os.getpid()]}
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
            paths = Paths(http, args.model)
            await paths.check()
            refusal = await responses_refusal(paths)
            lines = [f"== {label} == maestrale {url} (pid {proc.pid}), model {args.model}"]
            if refusal:
                lines.append(f"POST /v1/responses is not measured: {refusal}")
            print(f"[{label}] one prompt, {profile.rounds} rounds", flush=True)
            raw = args.raw.setdefault(label, {})
            lines += await one_prompt(paths, pids, profile, not refusal, raw)
            lines.append("")
            lines += await exchanges(paths, pids["maestrale"], profile, not refusal, label, raw)
            return lines
    finally:
        await asyncio.to_thread(stop_server, proc)


async def run(args: argparse.Namespace, tmp: Path) -> list[str]:
    databases = PostgresDatabases(args.postgres) if args.postgres else None
    try:
        lines = [f"Responses benchmark: {os.cpu_count()} CPUs, no CPU pinning, httpx client", ""]
        backends = [("sqlite", f"sqlite+aiosqlite:///{tmp}/sqlite/maestrale.db")]
        if databases is not None:
            backends.append(("postgres", await asyncio.to_thread(databases.create)))
        for label, db_url in backends:
            lines += await bench_backend(label, db_url, tmp, args)
            lines.append("")
        if args.json is not None:
            args.json.write_text(json.dumps(args.raw))
            lines.append(f"every latency, by backend, path and turn: {args.json}")
        return lines
    finally:
        if databases is not None:
            await asyncio.to_thread(databases.drop_all)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Maestrale Responses API benchmark")
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--rounds", type=int, help="sequential rounds of the one-prompt table")
    parser.add_argument("--chains", type=int, help="exchanges per path")
    parser.add_argument("--turns", type=int, help="turns of each exchange (100)")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every latency there")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="also run on Postgres, in a scratch database made on this server "
        "(e.g. postgresql://postgres@127.0.0.1:5432/test)",
    )
    args = parser.parse_args(argv)
    args.raw = {}
    base = QUICK if args.quick else FULL
    args.profile = Profile(
        args.rounds or base.rounds,
        base.warmup,
        args.chains or base.chains,
        args.turns or base.turns,
    )
    return args


def main(argv: list[str] | None = None) -> int:
    return run_main(run, _arguments(argv), "maestrale-respbench-")


if __name__ == "__main__":
    sys.exit(main())
