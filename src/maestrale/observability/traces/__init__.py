"""Traces, spans and logs of the telemetry store: search, get and aggregate."""
