"""yamllint over the deployment YAML: syntax, duplicate keys (which YAML loaders and so kubectl
and docker compose accept silently, the last one winning), indentation, truthy values."""

from __future__ import annotations

from tests.deploy.support import COMPOSE, KUBERNETES, require_tool, run

CONFIG = """\
extends: default
rules:
  document-start: disable
  line-length:
    max: 100
    allow-non-breakable-inline-mappings: true
  comments:
    min-spaces-from-content: 1
"""


def test_yamllint() -> None:
    yamllint = require_tool("yamllint", "PyPI yamllint, in the dev extra")
    files = [str(COMPOSE), *sorted(str(p) for p in KUBERNETES.glob("*.yaml"))]
    result = run([yamllint, "--strict", "-f", "parsable", "-d", CONFIG, *files])
    assert result.returncode == 0, result.stdout + result.stderr
