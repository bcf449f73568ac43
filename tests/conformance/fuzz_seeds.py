"""Resources for the schema fuzzer to find: one of each kind, made through the API before the
run, so that generated requests reach the handlers behind the ids (not only their 404s)."""

from __future__ import annotations

import time
from typing import Any

import requests

from tests.support.app_fixtures import ADMIN_KEY, API_KEY

MODEL = "maestrale-echo"
BATCH_LINE = b'{"custom_id": "1", "body": {"messages": [{"role": "user", "content": "hi"}]}}\n'
JUDGE = {
    "name": "tone",
    "description": "judges the tone",
    "model_name": MODEL,
    "output": {
        "type": "CLASSIFICATION",
        "options": [{"value": "polite", "description": "courteous"}],
    },
    "instructions": "Is the assistant polite?",
    "tools": [],
}


def _created(response: requests.Response) -> dict[str, Any]:
    assert response.status_code in (200, 201), (response.request.url, response.text)
    body: dict[str, Any] = response.json()
    return body


def _recorded_event(client: requests.Session, headers: dict[str, str]) -> str:
    """The id of the first chat completion event, once the accounting has written it."""
    deadline = time.monotonic() + 10
    while True:
        found = _created(
            client.post(
                "/v1/observability/chat-completion-events/search-ids",
                json={"search_params": {"filters": None}},
                headers=headers,
            )
        )["completion_event_ids"]
        if found:
            return str(found[0])
        assert time.monotonic() < deadline, "the chat completion event was not recorded"
        time.sleep(0.05)


# The deployment of the seeded workflows; a plain temporalio worker serves it during the fuzz.
WORKFLOW_DEPLOYMENT = "fuzz"


def _workflow_seeds(post: Any) -> dict[str, str]:
    """A registered workflow (`counter`, which runs until signalled), one execution of it, and
    a schedule of it."""
    from tests.workflows.plain_worker import definitions

    registered = post(
        "/v1/workflows/register",
        {
            "definitions": definitions(WORKFLOW_DEPLOYMENT),
            "deployment_name": WORKFLOW_DEPLOYMENT,
            "worker_name": "fuzz-worker",
        },
    )
    execution = post("/v1/workflows/counter/execute", {"input": {"start": 1}})
    schedule = post(
        "/v1/workflows/schedules",
        {"workflow_identifier": "counter", "schedule": {"intervals": [{"every": "PT1H"}]}},
    )
    return {
        "workflow_identifier": "counter",
        "workflow_registration_id": registered["workflow_registration_ids"][0],
        "execution_id": execution["execution_id"],
        "run_id": execution["run_id"],
        "schedule_id": schedule["schedule_id"],
        "name": WORKFLOW_DEPLOYMENT,
    }


def _connector_seeds(post: Any, mcp_url: str) -> dict[str, str]:
    """A connector to a real MCP server, with user credentials."""
    connector = post("/v1/connectors", {"name": "fuzz", "description": "", "server": mcp_url})
    post(
        f"/v1/connectors/{connector['id']}/user/credentials",
        {"name": "fuzz", "credentials": {"bearer_token": "fuzz-token"}},
    )
    return {
        "connector_id": connector["id"],
        "connector_id_or_name": connector["id"],
        "tool_name": "echo",
        "credentials_name": "fuzz",
    }


def _trigger_seeds(post: Any, agent_id: str) -> dict[str, str]:
    """A webhook (GitHub's preset) and a trigger starting the agent on its deliveries."""
    webhook = post("/v1/webhooks", {"provider": "github", "name": "fuzz", "secret": "fuzz"})
    action = {"primitive_id": agent_id, "type": "start_agent_session"}
    trigger = post(
        "/v1/triggers",
        {"event_source_id": webhook["id"], "handler": "agents", "action": action,
         "owner_type": "workspace", "title": "fuzz"},
    )  # fmt: skip
    return {"trigger_id": trigger["id"]}


def seed(client: requests.Session, mcp_url: str) -> dict[str, str]:
    """The ids of the made resources, by the name of the path parameter that takes them."""
    std = {"Authorization": f"Bearer {API_KEY}"}
    adm = {"x-api-key": ADMIN_KEY}

    def post(path: str, body: Any, headers: dict[str, str] = std) -> dict[str, Any]:
        return _created(client.post(path, json=body, headers=headers))

    file_id = _created(
        client.post(
            "/v1/files",
            files={"file": ("batch.jsonl", BATCH_LINE)},
            data={"purpose": "batch"},
            headers=std,
        )
    )["id"]
    agent = post("/v1/agents", {"model": MODEL, "name": "fuzz", "instructions": "be brief"})
    conversation = post("/v1/conversations", {"model": MODEL, "inputs": "hello"})
    job = post(
        "/v1/batch/jobs",
        {"input_files": [file_id], "endpoint": "/v1/chat/completions", "model": MODEL},
    )
    post("/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
    event_id = _recorded_event(client, std)
    dataset = post("/v1/observability/datasets", {"name": "fuzz", "description": ""})
    record = post(
        f"/v1/observability/datasets/{dataset['id']}/records",
        {"payload": {"messages": [{"role": "user", "content": "hi"}]}, "properties": {}},
    )
    judge = post("/v1/observability/judges", JUDGE)
    campaign = post(
        "/v1/observability/campaigns",
        {
            "search_params": {"filters": None},
            "judge_id": judge["id"],
            "name": "fuzz",
            "description": "",
            "max_nb_events": 1,
        },
    )
    obs = "/v1/observability"
    post(f"{obs}/projects", {"name": "fuzz"})
    post(f"{obs}/projects/fuzz/evaluations_v2", {"name": "fuzz", "evaluators": [judge["id"]]})
    # No run seeded: `run_id` names a workflow run in these seeds.
    spec = {"evaluator": JUDGE["name"]}
    body = {"name": "fuzz", "evaluation": "fuzz", "objective_spec": spec}
    optimization = post(f"{obs}/optimizations", body)
    users = post(
        "/v1/admin/users",
        [{"email": "fuzz@example.com", "first_name": "F", "last_name": "Z"}],
        adm,
    )
    user_id = users["email_to_user_id"]["fuzz@example.com"]
    workspace = post("/v1/admin/workspaces", {"name": "fuzz", "admin_user_id": user_id}, adm)
    group = post("/v1/admin/user-groups", {"name": "fuzz"}, adm)
    key = post("/v1/admin/api-keys", {"user_id": user_id, "workspace_uuid": workspace["uuid"]}, adm)
    own_workspace = client.get("/v1/users/me", headers=std).json()["workspace"]["id"]
    account = post("/v1/service-accounts", {"name": "fuzz", "workspace_id": own_workspace})
    return {
        **_workflow_seeds(post),
        **_connector_seeds(post, mcp_url),
        **_trigger_seeds(post, agent["id"]),
        "file_id": file_id,
        "agent_id": agent["id"],
        "version": "0",
        "conversation_id": conversation["conversation_id"],
        "job_id": job["id"],
        "model_id": MODEL,
        "dataset_id": dataset["id"],
        "dataset_record_id": record["id"],
        "judge_id": judge["id"],
        "campaign_id": campaign["id"],
        "project_slug": "fuzz",
        "evaluation_slug": "fuzz",
        "optimization_id": optimization["id"],
        "event_id": event_id,
        "field_name": "model",
        "user_id": user_id,
        "workspace_uuid": workspace["uuid"],
        "group_uuid": group["uuid"],
        "key_id": key["key_id"],
        "service_account_id": account["id"],
    }
