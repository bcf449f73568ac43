"""Prometheus metrics of one app instance (its own registry: no process-global state)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

# Label values → count, read when /metrics is scraped.
CounterReader = Callable[[], Mapping[tuple[str, ...], float]]


@dataclass(frozen=True, slots=True)
class _CounterSource:
    documentation: str
    labels: tuple[str, ...]
    read: CounterReader


class _Sources(Collector):
    """Counters kept by objects of their own (the accounting recorder), read at scrape time."""

    def __init__(self) -> None:
        self.counters: dict[str, _CounterSource] = {}

    def collect(self) -> Iterator[CounterMetricFamily]:
        for name, source in self.counters.items():
            family = CounterMetricFamily(name, source.documentation, labels=source.labels)
            for values, count in sorted(source.read().items()):
                family.add_metric(list(values), count)
            yield family


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
        self._sources = _Sources()
        self.registry.register(self._sources)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def add_counter(
        self, name: str, documentation: str, labels: tuple[str, ...], read: CounterReader
    ) -> None:
        """Expose a counter that another object keeps (`name` without `_total`); adding a name
        again replaces its source (a new lifespan of the same app)."""
        self._sources.counters[name] = _CounterSource(documentation, labels, read)

    def render(self) -> bytes:
        return bytes(generate_latest(self.registry))


def merge(expositions: Iterable[bytes]) -> bytes:
    """The metrics of several processes of one server as one: counters and histograms (all this
    server has) are added up series by series; a `_created` timestamp is the earliest."""
    families: dict[str, Metric] = {}
    values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for text in expositions:
        for family in text_string_to_metric_families(text.decode()):
            merged = families.setdefault(
                family.name, Metric(family.name, family.documentation, family.type)
            )
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                if key not in values:
                    merged.samples.append(sample)
                    values[key] = sample.value
                elif sample.name.endswith("_created"):
                    values[key] = min(values[key], sample.value)
                else:
                    values[key] += sample.value
    for family in families.values():
        family.samples = [
            sample._replace(value=values[(sample.name, tuple(sorted(sample.labels.items())))])
            for sample in family.samples
        ]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(list(families.values())))
    return bytes(generate_latest(registry))


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)
