"""deploy/kubernetes, checked without a cluster: every manifest against Kubernetes' own schemas
(kubernetes-validate, strict: a misspelt field fails), the kustomization rendered by kubectl,
and what the Operations section promises — liveness on /health, readiness on /ready, a preStop
pause and a termination grace longer than pause + shutdown grace, unprivileged pods, budgets and
a Service that select the pods, a migration Job, settings the code knows."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.support import (
    DOCKERFILE,
    KUBERNETES,
    cli_error,
    find_tool,
    load_yaml_documents,
    require_tool,
    run,
    unknown_env_names,
)

MANIFESTS = sorted(p for p in KUBERNETES.glob("*.yaml") if p.name != "kustomization.yaml")
# The oldest Kubernetes release the manifests are checked against, and the newest the tool knows.
OLDEST = "1.30.0"


@functools.cache
def resources() -> list[dict[str, Any]]:
    return [doc for path in MANIFESTS for doc in load_yaml_documents(path)]


def one(kind: str, name: str) -> dict[str, Any]:
    (found,) = [r for r in resources() if r["kind"] == kind and r["metadata"]["name"] == name]
    return found


def config() -> dict[str, str]:
    data: dict[str, str] = one("ConfigMap", "maestrale-config")["data"]
    return data


def pod_spec(kind: str, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = one(kind, name)["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("version", [OLDEST, None], ids=["oldest", "newest"])
def test_manifests_match_the_kubernetes_schema(version: str | None) -> None:
    validate = require_tool("kubernetes-validate", "PyPI kubernetes-validate, in the dev extra")
    # Options first: every argument after the first file name is taken for a file.
    versions = ["-k", version] if version else []
    result = run([validate, "--strict", "--no-warn", *versions, *map(str, MANIFESTS)])
    assert result.returncode == 0, result.stdout + result.stderr
    # One line per resource checked: none was skipped as unknown.
    assert result.stdout.count(" passed ") == len(resources()), result.stdout


def test_kustomization_renders_every_manifest_but_the_secret_example(tmp_path: Path) -> None:
    (kustomization,) = load_yaml_documents(KUBERNETES / "kustomization.yaml")
    listed = set(kustomization["resources"])
    assert listed == {p.name for p in MANIFESTS} - {"secret.example.yaml"}
    kubectl = find_tool("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (renders the kustomization)")
    rendered = run([kubectl, "kustomize", str(KUBERNETES)])
    assert rendered.returncode == 0, rendered.stderr
    out = tmp_path / "rendered.yaml"
    out.write_text(rendered.stdout, encoding="utf-8")
    documents = load_yaml_documents(out)
    assert len(documents) == len([r for r in resources() if r["kind"] != "Secret"])
    namespaced = [d for d in documents if d["kind"] != "Namespace"]
    assert {d["metadata"].get("namespace") for d in namespaced} == {kustomization["namespace"]}
    validate = find_tool("kubernetes-validate")
    if validate is not None:
        result = run([validate, "--strict", "--no-warn", str(out)])
        assert result.returncode == 0, result.stdout + result.stderr


def _probe(container: dict[str, Any], kind: str) -> dict[str, Any]:
    probe: dict[str, Any] = container[kind]["httpGet"]
    return probe


def test_api_probes_and_graceful_termination() -> None:
    pod = pod_spec("Deployment", "maestrale-api")
    (api,) = pod["containers"]
    port_names = {p["name"]: p["containerPort"] for p in api["ports"]}
    assert _probe(api, "livenessProbe")["path"] == "/health"
    assert _probe(api, "startupProbe")["path"] == "/health"
    assert _probe(api, "readinessProbe")["path"] == "/ready"
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert _probe(api, kind)["port"] in port_names, kind
    assert port_names["http"] == 8000, "the image's MAESTRALE_PORT"
    # The workflows workers' way to Temporal: the worker proxy, on the port the pods are given.
    assert port_names["worker-proxy"] == int(config()["MAESTRALE_TEMPORAL_PROXY_PORT"]) == 7233
    pause = api["lifecycle"]["preStop"]["exec"]["command"]
    assert pause[0] == "sleep"
    shutdown = float(config()["MAESTRALE_SHUTDOWN_GRACE_SECONDS"])
    # The kubelet's clock runs from the preStop hook on: pause + shutdown grace, and a margin.
    assert pod["terminationGracePeriodSeconds"] >= float(pause[1]) + shutdown + 5
    assert api["args"][:2] == ["serve", "--no-worker"]


def test_worker_grace() -> None:
    pod = pod_spec("Deployment", "maestrale-worker")
    (worker,) = pod["containers"]
    assert worker["args"][0] == "worker"
    assert (
        pod["terminationGracePeriodSeconds"]
        >= float(config()["MAESTRALE_WORKER_GRACE_SECONDS"]) + 5
    )


def _dockerfile_uid() -> int:
    users = re.findall(r"^USER (\d+)", DOCKERFILE.read_text(encoding="utf-8"), re.M)
    return int(users[-1])


WORKLOADS = [
    ("Deployment", "maestrale-api"),
    ("Deployment", "maestrale-worker"),
    ("Job", "maestrale-migrate"),
]


@pytest.mark.parametrize(("kind", "name"), WORKLOADS, ids=[w[1] for w in WORKLOADS])
def test_workload_is_unprivileged_and_configured(kind: str, name: str) -> None:
    pod = pod_spec(kind, name)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == _dockerfile_uid()
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"]["drop"] == ["ALL"]
        # A read-only root: the data dir and /tmp are volumes.
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert {"/var/lib/maestrale", "/tmp"} <= mounts
        refs = {
            next(iter(ref.values()))["name"]
            for ref in container["envFrom"]
            if "configMapRef" in ref or "secretRef" in ref
        }
        assert refs == {"maestrale-config", "maestrale-secrets"}
        assert cli_error(list(container["args"])) is None, container["args"]
        assert container["image"].split(":")[0] == "maestrale"


def test_migration_job() -> None:
    pod = pod_spec("Job", "maestrale-migrate")
    assert pod["containers"][0]["args"] == ["migrate"]
    assert pod["restartPolicy"] in ("OnFailure", "Never")
    # The replicas leave migrating to the Job (not three at once at a rollout).
    assert config()["MAESTRALE_AUTO_MIGRATE"] == "false"


def _selects(selector: dict[str, str], kind: str, name: str) -> bool:
    labels = one(kind, name)["spec"]["template"]["metadata"]["labels"]
    return all(labels.get(k) == v for k, v in selector.items())


def test_service_and_budgets_select_the_right_pods() -> None:
    service = one("Service", "maestrale")
    assert _selects(service["spec"]["selector"], "Deployment", "maestrale-api")
    assert not _selects(service["spec"]["selector"], "Deployment", "maestrale-worker")
    (api,) = pod_spec("Deployment", "maestrale-api")["containers"]
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= {p["name"] for p in api["ports"]}
    for name in ("maestrale-api", "maestrale-worker"):
        budget = one("PodDisruptionBudget", name)["spec"]
        assert _selects(budget["selector"]["matchLabels"], "Deployment", name)
        replicas = one("Deployment", name)["spec"]["replicas"]
        assert budget.get("maxUnavailable", 0) < replicas


def test_settings_exist_and_secrets_stay_in_the_secret() -> None:
    secret = one("Secret", "maestrale-secrets")["stringData"]
    assert not unknown_env_names(set(config())), unknown_env_names(set(config()))
    assert not unknown_env_names(set(secret)), unknown_env_names(set(secret))
    sensitive = {"MAESTRALE_DATABASE_URL", "MAESTRALE_REDIS_URL", "MAESTRALE_SECRET_KEY"}
    assert sensitive <= set(secret) and not sensitive & set(config())
    assert all(value_is_placeholder(v) for v in secret.values())


def value_is_placeholder(value: str) -> bool:
    return "change-me" in value
