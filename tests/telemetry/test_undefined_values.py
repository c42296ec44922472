"""A ratio is exported only once it is defined: before a model has seen a label of each class, its
sensitivity, specificity and weighted sum are absent from /metrics, never NaN."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from service.client import Client

from ..support.service_process import ServiceProcess

RATIOS = ("acog_weighted_sum", "acog_sensitivity", "acog_specificity")


def series(client: Client, model: str) -> dict[str, float]:
    out = {}
    for family in text_string_to_metric_families(client.metrics()):
        for sample in family.samples:
            if sample.labels.get("model") == model:
                out[sample.name] = sample.value
    return out


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[Client]:
    directory: Path = tmp_path_factory.mktemp("undefined")
    service = ServiceProcess(directory, {"ACOG_REDIS_URL": redis_url, "ACOG_WARM_UP": "models"})
    service.start()
    with Client(service.url) as made:
        yield made
    service.stop()


def test_ratios_are_absent_until_defined_and_never_nan(client: Client) -> None:
    client.put_model("fresh", {"n_features": 2}, replace=True)
    text = client.metrics()
    assert "NaN" not in text
    before = series(client, "fresh")
    assert before["acog_model_version"] == 0  # the model is exported ...
    assert not set(RATIOS) & set(before)  # ... its undefined ratios are not
    p = client.predict([1.0, 0.0], model="fresh")
    client.feedback(p, -1)
    one_class = series(client, "fresh")
    assert "acog_specificity" in one_class and "acog_sensitivity" not in one_class
    assert "acog_weighted_sum" not in one_class and "NaN" not in client.metrics()
    q = client.predict([0.0, 1.0], model="fresh")
    client.feedback(q, 1)
    both = series(client, "fresh")
    assert set(RATIOS) <= set(both) and all(both[name] == both[name] for name in RATIOS)
