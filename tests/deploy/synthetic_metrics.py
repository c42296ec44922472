"""A stand-in for the service's ``/metrics``: every series of the contract, made by prometheus-client,
and prometheus-client's process and platform series as the service exports them in single-process mode.

Each :meth:`SyntheticService.render` (one scrape) moves the counters and histograms by fixed
steps, so rates and ratios over any window have known values:

- anomaly share of predictions: ``ANOMALY_SHARE`` (1 anomaly for 3 normal);
- errors per label by class: ``ERROR_RATE`` (positive 1 of 2, negative 1 of 10).
"""

from __future__ import annotations

import itertools

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.exposition import choose_encoder

from .metric_names import CONTRACT, LABEL_VALUES, Metric

PREDICTIONS_PER_SCRAPE = {"anomaly": 1, "normal": 3}
ANOMALY_SHARE = 0.25
LABELS_PER_SCRAPE = {"positive": 2, "negative": 10}
MISTAKES_PER_SCRAPE = {"positive": 1, "negative": 1}
ERROR_RATE = {"positive": 0.5, "negative": 0.1}
GAUGE_VALUE = 0.75


def label_sets(metric: Metric) -> list[dict[str, str]]:
    """Every combination of the example values of the metric's labels."""
    values = [LABEL_VALUES[label] for label in metric.labels]
    return [dict(zip(metric.labels, combination, strict=True)) for combination in itertools.product(*values)]


class SyntheticService:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        for standard in (ProcessCollector, PlatformCollector, GCCollector):  # as the service, one process
            standard(registry=self.registry)
        self.collectors: dict[str, Counter | Gauge | Histogram] = {}
        for metric in CONTRACT:
            kwargs = {"labelnames": metric.labels, "registry": self.registry}
            if metric.kind == "counter":
                self.collectors[metric.name] = Counter(metric.name, metric.help, **kwargs)
            elif metric.kind == "gauge":
                self.collectors[metric.name] = Gauge(metric.name, metric.help, **kwargs)
            else:
                self.collectors[metric.name] = Histogram(metric.name, metric.help, **kwargs)
        for metric in CONTRACT:
            if metric.kind == "gauge":
                for labels in label_sets(metric):
                    gauge = self.gauge(metric.name)
                    (gauge.labels(**labels) if labels else gauge).set(GAUGE_VALUE)

    def gauge(self, name: str) -> Gauge:
        collector = self.collectors[name]
        assert isinstance(collector, Gauge)
        return collector

    def tick(self) -> None:
        for metric in CONTRACT:
            collector = self.collectors[metric.name]
            for labels in label_sets(metric):
                child = collector.labels(**labels) if labels else collector
                if isinstance(child, Counter):
                    child.inc(self._step(metric.name, labels))
                elif isinstance(child, Histogram):
                    child.observe(0.02)
                    child.observe(0.3)

    @staticmethod
    def _step(name: str, labels: dict[str, str]) -> float:
        if name == "acog_predictions_total":
            return PREDICTIONS_PER_SCRAPE[labels["predicted"]]
        if name == "acog_labels_total":
            return LABELS_PER_SCRAPE[labels["class"]]
        if name == "acog_mistakes_total":
            return MISTAKES_PER_SCRAPE[labels["class"]]
        return 1

    def render(self, accept: str) -> tuple[bytes, str]:
        """One scrape: move the counters, then expose everything in the format ``accept`` asks for.

        Prometheus asks for OpenMetrics first; prometheus-client negotiates as the service's
        ``/metrics`` does.
        """
        self.tick()
        encoder, content_type = choose_encoder(accept)
        return encoder(self.registry), content_type
