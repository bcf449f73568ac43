"""The /v1/batch/jobs group: durable jobs running many requests of one endpoint."""
