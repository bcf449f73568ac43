"""Run the official `mistralai-workflows` worker, unchanged, against a live Maestrale server.

The worker SDK needs Python >=3.12,<3.15 and `mistralai>=2.9.3,<3`, so it cannot share the
project's venv (3.11, `mistralai==2.8.0`). This module finds such an interpreter, builds a venv
for it once per machine (cached under ~/.cache/maestrale/workflows-worker/<key>/, keyed on the
interpreter and the pinned requirements), and starts `tests/workflows/official/workflows_app.py`
in it as a subprocess:

    venv = require_worker_venv()          # or pytest.skip(reason)
    proc = start_worker(venv, server_url=url, api_key=key, deployment="dep", worker_name="w1",
                        log_path=tmp_path / "worker.log")
    wait_for_log(tmp_path / "worker.log", "Starting Temporal worker", 60, proc=proc)
    ...
    kill_worker(proc)                     # SIGKILL to the whole process group

`describe_workflows(venv)` prints, without any network, the registration body the worker would
send for the app's workflows (the app's `WORKFLOW_APP_DESCRIBE=1` mode).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

WORKER_REQUIREMENTS: tuple[str, ...] = (
    "mistralai-workflows==3.16.0",
    "mistralai-workflows-plugins-mistralai==3.16.0",
)
# Versions the SDK accepts (its Requires-Python is ">=3.12,<3.15").
MIN_PYTHON = (3, 12)
MAX_PYTHON_EXCLUSIVE = (3, 15)
# Bump when the way the venv is built changes, so that old caches are not reused.
_LAYOUT_VERSION = "1"
_MARKER = "maestrale-worker-venv.json"

APP_DIR = Path(__file__).resolve().parents[1] / "workflows" / "official"
APP_PATH = APP_DIR / "workflows_app.py"

# The names the three workflows of the app register under.
WORKFLOW_NAMES = ("chat-echo", "interactive", "noop")
ECHO_MODEL = "maestrale-echo"

# Inherited variables the worker may keep; everything else (TEMPORAL_*, MISTRAL_*, OTEL_*,
# proxies, PYTHONPATH, PYTEST_*, the project venv's VIRTUAL_ENV...) is dropped so that the
# developer's environment cannot redirect it.
_INHERITED_ENV = (
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "USER",
    "LOGNAME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)
_PROBE = (
    "import sys, venv, ensurepip; "
    "print(sys.executable); print('.'.join(map(str, sys.version_info[:3])))"
)


class WorkerVenvUnavailable(RuntimeError):
    """No suitable interpreter, or the worker's packages could not be installed."""


# --- finding an interpreter ---------------------------------------------------------------------


def _probe(candidate: str) -> tuple[str, str] | None:
    """(real executable, "X.Y.Z") when `candidate` runs, is in range and can create venvs."""
    try:
        out = subprocess.run(
            [candidate, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=30,
            env=_tool_env(),
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    lines = out.stdout.split()
    if len(lines) != 2:
        return None
    executable, version = lines
    parts = tuple(int(p) for p in version.split(".")[:2])
    if not (MIN_PYTHON <= parts < MAX_PYTHON_EXCLUSIVE):
        return None
    return executable, version


def _pyenv_root() -> Path:
    pyenv = shutil.which("pyenv")
    if pyenv:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pyenv, "root"], capture_output=True, text=True, timeout=30, check=False
            )
            if out.returncode == 0 and out.stdout.strip():
                return Path(out.stdout.strip())
    if os.environ.get("PYENV_ROOT"):
        return Path(os.environ["PYENV_ROOT"])
    return Path.home() / ".pyenv"


def _version_key(path: Path) -> tuple[int, ...]:
    """Sort key for pyenv's version folders ("3.13.0", "3.12.1", "3.13.0t" ...): newest first."""
    parts: list[int] = []
    for piece in path.name.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else -1)
    return tuple(parts)


def _candidates() -> Iterator[str]:
    for name in ("python3.14", "python3.13", "python3.12"):
        found = shutil.which(name)
        if found:
            yield found
    versions = _pyenv_root() / "versions"
    if versions.is_dir():
        for folder in sorted(versions.iterdir(), key=_version_key, reverse=True):
            exe = folder / "bin" / "python3"
            if exe.exists():
                yield str(exe)
    for minor in (14, 13, 12):
        exe = Path(f"/usr/bin/python3.{minor}")
        if exe.exists():
            yield str(exe)


def _find_interpreter() -> tuple[str, str] | None:
    seen: set[str] = set()
    for candidate in _candidates():
        if candidate in seen:
            continue
        seen.add(candidate)
        found = _probe(candidate)
        if found is not None:
            return found
    return None


def find_python312() -> str | None:
    """A Python >=3.12,<3.15 interpreter that runs and has `venv` (and `ensurepip`).

    Looks at python3.14/3.13/3.12 on PATH (pyenv shims that exist but fail are skipped), then at
    `$(pyenv root)/versions/*/bin/python3`, then at /usr/bin/python3.1x. Returns the real
    executable (`sys.executable` of the interpreter, not a shim), or None.
    """
    found = _find_interpreter()
    return found[0] if found else None


# --- the venv -----------------------------------------------------------------------------------


def cache_root() -> Path:
    override = os.environ.get("MAESTRALE_WORKFLOWS_WORKER_CACHE")
    if override:
        return Path(override)
    return Path.home() / ".cache" / "maestrale" / "workflows-worker"


def venv_key(executable: str, version: str) -> str:
    material = "\n".join(
        [_LAYOUT_VERSION, os.path.realpath(executable), version, *WORKER_REQUIREMENTS]
    )
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _venv_works(venv: Path) -> bool:
    if not (venv / _MARKER).is_file():
        return False
    try:
        out = subprocess.run(
            [
                str(venv_python(venv)),
                "-c",
                "import mistralai.workflows, mistralai.workflows.plugins.mistralai",
            ],
            capture_output=True,
            timeout=120,
            env=_tool_env(),
            cwd=venv,  # the SDK reads a .env from its working directory at import
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0


def _run_step(step: str, cmd: list[str], log: Path, timeout: float) -> None:
    with open(log, "ab") as out:
        out.write(f"$ {' '.join(cmd)}\n".encode())
        out.flush()
        try:
            proc = subprocess.run(
                cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, env=_tool_env()
            )
        except subprocess.TimeoutExpired as exc:
            raise WorkerVenvUnavailable(f"{step} timed out after {timeout:.0f} s ({log})") from exc
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-15:]
        raise WorkerVenvUnavailable(
            f"{step} failed (exit {proc.returncode}, {log}):\n" + "\n".join(tail)
        )


def _build(python: str, version: str, final: Path) -> None:
    """Build the venv in a temporary folder next to `final`, then rename it into place.

    The rename is atomic, so `final` is either absent or complete. A venv moved after creation
    keeps working through `bin/python -m ...` (which is all this module uses); its console
    scripts keep the temporary folder in their shebangs and are not used.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}.tmp-", dir=final.parent))
    log = final.parent / f"{final.name}.build.log"
    log.write_text("")
    started = time.monotonic()
    try:
        _run_step("creating the venv", [python, "-m", "venv", str(tmp)], log, timeout=300)
        _run_step(
            "pip install " + " ".join(WORKER_REQUIREMENTS),
            [
                str(venv_python(tmp)),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--quiet",
                "--timeout",
                "60",
                "--retries",
                "2",
                *WORKER_REQUIREMENTS,
            ],
            log,
            timeout=1200,
        )
        marker = {
            "python": python,
            "python_version": version,
            "requirements": list(WORKER_REQUIREMENTS),
            "build_seconds": round(time.monotonic() - started, 1),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (tmp / _MARKER).write_text(json.dumps(marker, indent=2) + "\n")
        if final.exists():  # a stale, broken copy (checked under the lock by the caller)
            shutil.rmtree(final)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


_memo: dict[str, Path | WorkerVenvUnavailable] = {}


def worker_venv() -> Path:
    """The cached venv with the worker SDK, built on first use.

    Raises WorkerVenvUnavailable when no suitable Python exists or the install fails (no access to
    the package index, say). A failure is remembered for the rest of the process, so a test run
    without network tries the install once, not once per test.
    """
    cached = _memo.get("venv")
    if isinstance(cached, Path):
        return cached
    if isinstance(cached, WorkerVenvUnavailable):
        raise cached
    try:
        venv = _worker_venv()
    except WorkerVenvUnavailable as exc:
        _memo["venv"] = exc
        raise
    _memo["venv"] = venv
    return venv


def _worker_venv() -> Path:
    found = _find_interpreter()
    if found is None:
        raise WorkerVenvUnavailable(
            "no Python >=3.12,<3.15 with venv found (PATH, pyenv, /usr/bin); "
            "the official mistralai-workflows worker needs one"
        )
    python, version = found
    final = cache_root() / venv_key(python, version)
    if _venv_works(final):
        return final
    # Another pytest process may be building the same venv: wait for it, then look again.
    with _locked(final.parent / f"{final.name}.lock"):
        if _venv_works(final):
            return final
        # Half-built folders of a build that was killed: nobody else builds this key now.
        for leftover in final.parent.glob(f"{final.name}.tmp-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        _build(python, version, final)
        if not _venv_works(final):
            raise WorkerVenvUnavailable(f"the venv built at {final} cannot import the SDK")
    return final


def require_worker_venv() -> Path:
    """worker_venv(), or pytest.skip with the reason it is unavailable."""
    import pytest

    try:
        return worker_venv()
    except WorkerVenvUnavailable as exc:
        pytest.skip(f"official workflows worker unavailable: {exc}")


def venv_info(venv: Path) -> dict[str, Any]:
    """The build record of a venv (interpreter, requirements, build time)."""
    data: dict[str, Any] = json.loads((venv / _MARKER).read_text())
    return data


# --- running the worker -------------------------------------------------------------------------


def _tool_env() -> dict[str, str]:
    """The environment for probing interpreters and for pip: the caller's (proxies, PIP_*, pyenv
    settings, CA bundles stay), less what would point Python at another environment."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("PYTHON") and name not in ("VIRTUAL_ENV", "__PYVENV_LAUNCHER__")
    }


def _clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {name: os.environ[name] for name in _INHERITED_ENV if name in os.environ}
    env["PATH"] = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra or {})
    return env


def worker_env(
    venv: Path,
    *,
    server_url: str,
    api_key: str,
    deployment: str,
    worker_name: str,
    extra_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment `start_worker` gives the worker process."""
    base = {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "VIRTUAL_ENV": str(venv),
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        # What the SDK reads (mistralai.workflows.core.config).
        "SERVER_URL": server_url,
        "MISTRAL_API_KEY": api_key,
        "DEPLOYMENT_NAME": deployment,
        "WORKER_NAME": worker_name,
        # The Temporal address, namespace and TLS flag come from GET /v1/workflows/workers/whoami;
        # a TEMPORAL_SERVER_URL here would take precedence over it, so none is set.
        # Telemetry: nothing leaves the machine. OTel export would go to SERVER_URL's
        # /telemetry routes (or an OTLP endpoint); the Mistral client's own opt-in telemetry would
        # go to api.mistral.ai; OTEL_SDK_DISABLED covers any OpenTelemetry SDK left.
        "OTEL_ENABLED": "false",
        "MISTRAL_WORKFLOWS_OTEL_TRACES_EXPORT": "false",
        "MISTRAL_WORKFLOWS_OTEL_METRICS_EXPORT": "false",
        "MISTRAL_WORKFLOWS_OTEL_LOGS_EXPORT": "false",
        "OTEL_SDK_DISABLED": "true",
        "MISTRAL_SDK_TELEMETRY": "false",
        # Machine-readable logs: one JSON object per line, "event" holding the message.
        "LOG_FORMAT": "json",
        "LOG_LEVEL": "INFO",
    }
    return _clean_env({**base, **(extra_env or {})})


def start_worker(
    venv: Path,
    *,
    server_url: str,
    api_key: str,
    deployment: str,
    worker_name: str,
    log_path: Path,
    extra_env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start `workflows_app.py` (the official worker with the test workflows) in `venv`.

    stdout and stderr go to `log_path` (appended to, so a restarted worker adds to the same log).
    The process leads its own process group: `kill_worker` ends it and any children. It runs in
    a fresh folder beside the log, because the SDK reads a `.env` (`.env.test` under pytest)
    from its working directory.
    """
    env = worker_env(
        venv,
        server_url=server_url,
        api_key=api_key,
        deployment=deployment,
        worker_name=worker_name,
        extra_env=extra_env,
    )
    log_path.parent.mkdir(parents=True, exist_ok=True)
    workdir = log_path.parent / f"{worker_name}.cwd"
    workdir.mkdir(exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [str(venv_python(venv)), "-u", str(APP_PATH)],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill_worker(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> int:
    """Send `sig` to the worker's process group and wait for the worker to exit."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(timeout=30)


def stop_worker(proc: subprocess.Popen[bytes], timeout: float = 15) -> int:
    """Stop the worker gracefully (SIGINT: the SDK shuts its Temporal workers down), else kill."""
    if proc.poll() is not None:
        return proc.returncode
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return kill_worker(proc)


def log_tail(log_path: Path, lines: int = 40) -> str:
    try:
        text = log_path.read_text(errors="replace")
    except FileNotFoundError:
        return "<no log>"
    return "\n".join(text.splitlines()[-lines:])


def wait_for_log(
    log_path: Path,
    text: str,
    timeout: float,
    *,
    count: int = 1,
    proc: subprocess.Popen[bytes] | None = None,
) -> None:
    """Wait until `text` occurs `count` times in the log; TimeoutError with the log's tail.

    With `proc`, fail at once (RuntimeError) if the process exits first.
    """
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(FileNotFoundError):
            if log_path.read_text(errors="replace").count(text) >= count:
                return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(
                f"worker exited with {proc.returncode} before logging {text!r}:\n"
                + log_tail(log_path)
            )
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"{text!r} not in {log_path} after {timeout:.0f} s:\n" + log_tail(log_path)
            )
        time.sleep(0.1)


def log_events(log_path: Path) -> list[dict[str, Any]]:
    """The worker's JSON log lines, parsed (lines that are not JSON are skipped)."""
    events: list[dict[str, Any]] = []
    with contextlib.suppress(FileNotFoundError):
        for line in log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                with contextlib.suppress(json.JSONDecodeError):
                    events.append(json.loads(line))
    return events


def describe_workflows(
    venv: Path, *, deployment: str = "describe", worker_name: str = "describe"
) -> dict[str, Any]:
    """What the worker would register, computed offline by the app's DESCRIBE mode.

    Returns {"sdk_version", "register_body": <POST /v1/workflows/register body>,
    "activities": [names]}.
    """
    env = worker_env(
        venv,
        server_url="http://127.0.0.1:9",
        api_key="describe",
        deployment=deployment,
        worker_name=worker_name,
        extra_env={"WORKFLOW_APP_DESCRIBE": "1", "LOG_LEVEL": "WARNING"},
    )
    with tempfile.TemporaryDirectory(prefix="wf-describe-") as workdir:
        out = subprocess.run(
            [str(venv_python(venv)), str(APP_PATH)],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    if out.returncode != 0:
        raise RuntimeError(f"describe failed ({out.returncode}):\n{out.stderr[-4000:]}")
    # The description is the last line; the SDK may log before it.
    last = out.stdout.strip().splitlines()[-1]
    data: dict[str, Any] = json.loads(last)
    return data


if __name__ == "__main__":  # pragma: no cover - manual use: build the venv and print its path
    path = worker_venv()
    sys.stdout.write(f"{path}\n{json.dumps(venv_info(path), indent=2)}\n")
