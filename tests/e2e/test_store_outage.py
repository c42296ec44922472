"""The store goes away and comes back: predictions go on, labels wait, nothing is half-applied.

While Redis is down, ``/predict`` answers from memory with ``stored: false``; ``/feedback``
answers 503 with ``Retry-After`` and applies nothing; ``/readyz`` is 503. When Redis is
back, the label that was refused can be sent again and is applied once; a prediction that
was not stored is unknown (404), as its reply warned.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..support.private_redis import PrivateRedis
from .client import Running, assert_refused, running
from .conftest import N_FEATURES, German


@pytest.fixture
def outage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    directory = tmp_path_factory.mktemp("outage")
    server = PrivateRedis(directory)
    server.start()
    try:
        with running(directory, {"ACOG_REDIS_URL": server.url}, redis=server) as run:
            yield run
    finally:
        server.close()


def test_labels_wait_for_the_store_and_predictions_say_they_were_not_stored(
    outage: Running, german: German
) -> None:
    api, redis_server = outage.api, outage.redis
    assert redis_server is not None
    api.put_model("outage", {"n_features": N_FEATURES})
    api.learn("outage", german.rows[:20], german.y[:20])
    waiting = api.predict_one("outage", german.rows[20])
    assert waiting["stored"] is True
    before = api.snapshot("outage", german.probe)

    redis_server.terminate()
    during = api.predict_one("outage", german.rows[21])
    assert during["stored"] is False and during["model_version"] == 20
    assert during["score"] == api.predict_one("outage", german.rows[21])["score"]
    refused = api.http.post("/feedback", json={"prediction_id": waiting["prediction_id"], "label": 1})
    assert_refused(refused, 503, "store", "unavailable")
    assert int(refused.headers["retry-after"]) >= 1
    ready = api.http.get("/readyz")
    assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
    assert api.snapshot("outage", german.probe) == before

    redis_server.start()
    assert api.http.get("/readyz").status_code == 200
    assert api.label(waiting["prediction_id"], german.y[20])["model_version"] == 21
    assert api.label(waiting["prediction_id"], german.y[20])["duplicate"] is True
    lost = api.http.post("/feedback", json={"prediction_id": during["prediction_id"], "label": 1})
    assert_refused(lost, 404, "prediction_id", "is unknown")
    assert api.state("outage")["version"] == 21
    assert api.predict_one("outage", german.rows[22])["stored"] is True
