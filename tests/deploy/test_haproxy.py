"""The compose file's HAProxy configuration: `haproxy -c` (Debian's haproxy) accepts it, and it
does what the Operations section says — health checks on /health (liveness), retries only of
refused connections, and no cutting of the streams of a replica that drains."""

from __future__ import annotations

import re

from tests.deploy.support import HAPROXY_CFG, require_tool, run


def config() -> str:
    """The configuration without its comments."""
    lines = HAPROXY_CFG.read_text(encoding="utf-8").splitlines()
    return "\n".join(line.split("#", 1)[0] for line in lines)


def test_haproxy_accepts_the_configuration() -> None:
    haproxy = require_tool("haproxy", "Debian's haproxy package")
    result = run([haproxy, "-c", "-f", str(HAPROXY_CFG)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_health_checks_and_retries() -> None:
    text = config()
    assert "option httpchk GET /health" in text and "http-check expect status 200" in text
    assert re.search(r"^\s*default-server check ", text, re.M)
    assert re.search(r"^\s*retries [1-9]", text, re.M) and "option redispatch" in text
    # Retrying more than refused connections could send a request a replica started twice.
    assert "retry-on" not in text
    # on-marked-down shutdown-sessions would cut the streams a draining replica is finishing.
    assert "shutdown-sessions" not in text
    # Streams may be silent for a while: no short server or client timeout.
    for side in ("client", "server"):
        match = re.search(rf"^\s*timeout {side} (\d+)(m|s)\b", text, re.M)
        assert match, side
        assert int(match[1]) * (60 if match[2] == "m" else 1) >= 300, side
