"""The RAG groups' errors: a deployment or a configuration that the caller's workspace does not
have is a 404 (another workspace's included)."""

from __future__ import annotations

from maestrale.core.errors import NotFound


class DeploymentNotFound(NotFound):
    code = "deployment_not_found"


class PipelineNotFound(NotFound):
    code = "pipeline_configuration_not_found"
