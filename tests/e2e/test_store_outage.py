"""The store goes away and comes back: predictions go on, labels wait, nothing is half-applied.

While Redis is down, ``/predict`` answers from memory with ``stored: false``; ``/feedback``
answers 503 with ``Retry-After`` and applies nothing; ``/readyz`` is 503. When Redis is
back, the label that was refused can be sent again and is applied once; a prediction that
was not stored is unknown (404), as its reply warned.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.client import Client, NotFound, RetryPolicy, Unavailable

from ..support.model_state import learn, refused, snapshot, state
from ..support.private_redis import PrivateRedis
from .client import Running, running
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
    client, redis_server = outage.client, outage.redis
    assert redis_server is not None
    client.put_model("outage", {"n_features": N_FEATURES})
    learn(client, "outage", german.rows[:20], german.y[:20])
    waiting = client.predict(german.rows[20], model="outage")
    assert waiting.stored is True
    before = snapshot(client, "outage", german.probe)

    redis_server.terminate()
    during = client.predict(german.rows[21], model="outage")
    assert during.stored is False and during.model_version == 20
    assert during.score == client.predict(german.rows[21], model="outage").score
    once = Client(outage.service.url, retry=RetryPolicy(attempts=1))  # no retry: see the 503 itself
    with once, pytest.raises(Unavailable) as unavailable:
        once.feedback(waiting, 1)
    refused(unavailable.value, 503, "store", "unavailable")
    assert unavailable.value.retry_after is not None and unavailable.value.retry_after >= 1
    ready = client.http.get("/readyz")
    assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
    assert snapshot(client, "outage", german.probe) == before

    redis_server.start()
    assert client.ready().status == "ready"
    assert client.feedback(waiting, german.y[20]).model_version == 21
    assert client.feedback(waiting, german.y[20]).duplicate is True
    with pytest.raises(NotFound) as lost:
        client.feedback(during, 1)
    refused(lost.value, 404, "prediction_id", "is unknown")
    assert state(client, "outage")["version"] == 21
    assert client.predict(german.rows[22], model="outage").stored is True
