"""/metrics of the running service: every series of the contract, with the exact values.

A known stream (german's first rows) goes through the real service with the client's replay
loop; the expected values are computed directly from the labels and the predictions the
service returned. A real
Prometheus (Debian's package) then scrapes the service, and the ``acog_weighted_sum`` query
over its HTTP API, and every dashboard query, answer as they should.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from service.client import Client, InvalidRequest, NotFound, Prediction
from service.datasets import load
from service.measures import Measures, Objective
from service.replay_loop import replay

from ..conftest import dataset_path
from ..deploy.metric_names import required_exposed_names
from ..deploy.prometheus_runner import project_config, run_prometheus
from ..deploy.promql import dashboard_queries, load_dashboard
from ..support.private_redis import PrivateRedis
from ..support.service_process import ServiceProcess

N = 300
MODEL = "default"


@dataclass
class Run:
    service: ServiceProcess
    client: Client
    y: np.ndarray
    yhat: np.ndarray
    predict_requests: int
    extra_anomalies: int
    extra_normals: int


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(metrics: dict, name: str, **labels: str) -> float:
    return metrics[(name, frozenset({"model": MODEL, **labels}.items()))]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    dataset_path("german", "german.mat")
    tmp = tmp_path_factory.mktemp("metrics")
    redis_server = PrivateRedis(tmp)
    redis_server.start()
    service = ServiceProcess(
        tmp,
        {
            "ACOG_REDIS_URL": redis_server.url,
            # linear members: a learning rate is always in use, so acog_eta_selected is defined (it
            # is absent while a member without one, the forest, leads the default's vote)
            "ACOG_DEFAULT_MODEL": '{"name": "default", "n_features": 24, "auto_members": "linear"}',
            "ACOG_MAINTENANCE_INTERVAL_SECONDS": "0.2",
            "ACOG_LABEL_TTL_SECONDS": "3",
        },
    )
    service.start()
    client = Client(service.url, model=MODEL)
    challenger = {"n_features": 24, "algorithm": "arow"}  # so that the challenger series exist
    url = f"{service.url}/models/{MODEL}/challengers/arow"
    httpx.put(url, json=challenger, timeout=30).raise_for_status()
    data = load("german")
    X, y = data.X.toarray()[:N], data.y[:N].astype(int)
    # the first 100 rows one per request, the rest in batches of 20; each request's labels follow it
    predictions: list[Prediction] = []
    for first, batch in ((0, 1), (100, 20)):
        rows = range(first, 100 if first == 0 else N)
        for step in replay(client, X.tolist(), y.tolist(), order=rows, batch=batch, label_batch=20):
            assert all(r.ok for r in step.labelled), step.labelled
            predictions += step.predictions
    yhat = [p.label for p in predictions]
    requests = 100 + (N - 100) // 20
    assert client.feedback(predictions[-1], int(y[-1])).duplicate
    never_issued = f"default:1:{int(time.time() * 1000):x}-0000000000000000"  # recent: unknown, not expired
    with pytest.raises(NotFound):
        client.feedback(never_issued, 1)
    with pytest.raises(InvalidRequest):
        client.feedback(predictions[-2], 3)
    waiting = client.predict_batch(X[:7])  # never labelled
    requests += 1
    anomalies = sum(p.label == 1 for p in waiting)
    yield Run(service, client, y, np.array(yhat), requests, anomalies, len(waiting) - anomalies)
    client.close()
    service.kill()
    redis_server.close()


def test_every_series_of_the_contract_is_exported(run: Run) -> None:
    names = {name for name, _ in samples(run.client.metrics())}
    missing = required_exposed_names() - names
    assert not missing, f"not exported: {sorted(missing)}"


def test_values_equal_the_measures_computed_directly(run: Run) -> None:
    m = Measures.of(run.y, run.yhat, Objective(0.5, 0.9))
    info = run.client.get_model(MODEL)
    metrics = samples(run.client.metrics())
    assert value(metrics, "acog_labels_total", **{"class": "positive"}) == m.counts.t_p
    assert value(metrics, "acog_labels_total", **{"class": "negative"}) == m.counts.t_n
    assert value(metrics, "acog_mistakes_total", **{"class": "positive"}) == m.counts.m_p
    assert value(metrics, "acog_mistakes_total", **{"class": "negative"}) == m.counts.m_n
    # gauges carry the exact running values (the exposition round-trips float64)
    assert value(metrics, "acog_weighted_sum") == m.weighted_sum
    assert value(metrics, "acog_weighted_cost") == m.weighted_cost
    assert value(metrics, "acog_sensitivity") == m.sensitivity
    assert value(metrics, "acog_specificity") == m.specificity
    assert value(metrics, "acog_rho_estimate") == m.rho_estimate
    assert value(metrics, "acog_rho") == m.rho_estimate  # sum objective, rho "auto": the Laplace estimate
    assert value(metrics, "acog_model_version") == N + 1  # the labels and the entry adding the challenger
    assert value(metrics, "acog_challenger_labels_total", challenger="arow") == N
    assert info.state is not None
    assert value(metrics, "acog_updates_total") == info.state["updates"] > 0
    assert value(metrics, "acog_eta_selected") == info.state["eta"]["selected"]
    for name, expected in (("sum", m.weighted_sum), ("cost", m.weighted_cost)):
        assert (
            value(metrics, f"acog_window_weighted_{name}", window="1000") == expected
        )  # all N in the window
    assert value(metrics, "acog_window_sensitivity", window="1000") == m.sensitivity
    assert value(metrics, "acog_window_specificity", window="1000") == m.specificity
    served_anomalies = int((run.yhat == 1).sum()) + run.extra_anomalies
    assert value(metrics, "acog_predictions_total", predicted="anomaly") == served_anomalies
    assert value(metrics, "acog_predictions_total", predicted="normal") == N + 7 - served_anomalies
    assert value(metrics, "acog_labels_rejected_total", reason="duplicate") == 1
    assert value(metrics, "acog_labels_rejected_total", reason="unknown") == 1
    assert value(metrics, "acog_labels_rejected_total", reason="invalid_label") == 1
    assert value(metrics, "acog_label_delay_seconds_count") == N
    assert value(metrics, "acog_update_duration_seconds_count") == N
    assert value(metrics, "acog_request_duration_seconds_count", route="/predict") == run.predict_requests


def test_pending_predictions_then_their_expiry(run: Run) -> None:
    deadline = time.monotonic() + 10
    metrics = samples(run.client.metrics())
    while value(metrics, "acog_pending_predictions") != 7:  # counted by the maintenance loop
        assert time.monotonic() < deadline, value(metrics, "acog_pending_predictions")
        time.sleep(0.1)
        metrics = samples(run.client.metrics())
    while value(metrics, "acog_pending_expired_total") != 7:  # the label window is 3 s
        assert time.monotonic() < deadline + 5
        time.sleep(0.2)
        metrics = samples(run.client.metrics())
    assert value(metrics, "acog_pending_predictions") == 0


def test_checkpoint_age_restarts_at_a_checkpoint(run: Run) -> None:
    assert run.client.checkpoint(MODEL).written in (True, False)
    assert value(samples(run.client.metrics()), "acog_checkpoint_age_seconds") < 5


def test_a_real_prometheus_scrapes_the_service(run: Run, tmp_path: Path) -> None:
    expected = Measures.of(run.y, run.yhat).weighted_sum
    config = project_config(f"127.0.0.1:{run.service.port}")
    with run_prometheus(config, tmp_path / "prometheus") as prometheus:
        prometheus.wait_for_targets_up()
        result = prometheus.wait_for('acog_weighted_sum{model="default"}')
        assert float(result[0]["value"][1]) == expected
        queries = dashboard_queries(load_dashboard())
        run.client.predict([1.0] * 24)  # a second sample for rate()
        time.sleep(2.5)
        empty = [q.expr for q in queries if not prometheus.query(q.expr)]
        assert not empty, f"dashboard queries without data against the live service: {empty}"
