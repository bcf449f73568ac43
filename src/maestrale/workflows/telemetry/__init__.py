"""Workflow executions' and deployments' telemetry: the logs and traces the official worker sends
to the telemetry store (`maestrale.telemetry`), read by execution and by deployment."""
