"""Prometheus metrics of one app instance (its own registry: no process-global state)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "maestrale_http_requests_total",
            "HTTP requests by route template, method and status",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "maestrale_http_request_duration_seconds",
            "HTTP request latency by route template and method",
            ("method", "route"),
            buckets=_BUCKETS,
            registry=self.registry,
        )

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def render(self) -> bytes:
        return bytes(generate_latest(self.registry))
