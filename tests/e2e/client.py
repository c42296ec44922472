"""Running services for the end-to-end suites, and the helpers their modules share.

Tests talk to a service through the SDK, ``Running.client`` (:class:`service.client.Client`),
and through ``Running.client.http`` (its httpx client) for raw requests a client would never
send. ``Api`` is the older assert-as-you-go wrapper, kept only for the modules not yet moved
to the SDK (test_bad_inputs, test_labels, test_models and the hardening suite);
``snapshot`` captures what "no model state changed" means (the model's ``state`` from
``GET /models/{name}`` and the scores of a probe set).
"""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from service.client import Client

from ..support.model_state import comparable
from ..support.private_redis import PrivateRedis
from ..support.service_process import ServiceProcess

Json = Any


class Api:
    """HTTP calls to one running service; every helper asserts the status it expects."""

    def __init__(self, service: ServiceProcess, probe_batch: int = 100) -> None:
        self.service = service
        self.http = httpx.Client(base_url=service.url, timeout=30.0)
        self.probe_batch = probe_batch
        """Probe rows per request of :meth:`scores` (a service with small limits needs small ones)."""

    def reconnect(self) -> None:
        self.http.close()
        self.http = httpx.Client(base_url=self.service.url, timeout=30.0)

    def close(self) -> None:
        self.http.close()

    # --- models -------------------------------------------------------------------------------

    def put_model(self, name: str, config: dict[str, Any], expect: int = 201, replace: bool = False) -> Json:
        params = {"replace": "true"} if replace else None
        response = self.http.put(f"/models/{name}", json=config, params=params)
        assert response.status_code == expect, response.text
        return response.json()

    def model(self, name: str) -> Json:
        response = self.http.get(f"/models/{name}")
        assert response.status_code == 200, response.text
        return response.json()

    def state(self, name: str) -> Json:
        return self.model(name)["state"]

    def delete_model(self, name: str) -> None:
        response = self.http.delete(f"/models/{name}")
        assert response.status_code == 204, response.text

    # --- predictions and labels ---------------------------------------------------------------

    def predict(self, model: str, instances: Sequence[Any]) -> list[Json]:
        response = self.http.post("/predict", json={"model": model, "instances": list(instances)})
        assert response.status_code == 200, response.text
        predictions: list[Json] = response.json()["predictions"]
        assert len(predictions) == len(instances)
        return predictions

    def predict_one(self, model: str, features: Any) -> Json:
        response = self.http.post("/predict", json={"model": model, "features": features})
        assert response.status_code == 200, response.text
        return response.json()

    def label(self, prediction_id: str, label: Any) -> Json:
        response = self.http.post("/feedback", json={"prediction_id": prediction_id, "label": label})
        assert response.status_code == 200, response.text
        return response.json()

    def labels(self, items: Sequence[tuple[str, Any]]) -> list[Json]:
        body = {"items": [{"prediction_id": pid, "label": y} for pid, y in items]}
        response = self.http.post("/feedback", json=body)
        assert response.status_code == 200, response.text
        results: list[Json] = response.json()["results"]
        assert len(results) == len(items)
        return results

    def learn(self, model: str, rows: Sequence[Any], labels: Sequence[int]) -> None:
        """Predict then label ``rows`` in order, so that a model has something to score with."""
        predictions = self.predict(model, rows)
        pairs = zip(predictions, labels, strict=True)
        results = self.labels([(p["prediction_id"], int(y)) for p, y in pairs])
        assert all(r["applied"] for r in results), results

    def scores(self, model: str, probe: Sequence[Any]) -> list[float]:
        step = self.probe_batch
        return [
            p["score"] for i in range(0, len(probe), step) for p in self.predict(model, probe[i : i + step])
        ]

    def post_text(self, path: str, text: str | bytes) -> httpx.Response:
        """POST a body as it is, for what a JSON encoder refuses to write (NaN, Infinity)."""
        return self.http.post(path, content=text, headers={"content-type": "application/json"})

    def snapshot(self, model: str, probe: Sequence[Any]) -> tuple[Json, list[float]]:
        """What must not change when a request is refused: the model's state (but for what a
        background checkpoint may change, see :func:`comparable`) and its probe scores."""
        return comparable(self.state(model)), self.scores(model, probe)


def detail_of(response: httpx.Response) -> list[Json]:
    """The ``detail`` list of a refusal (FastAPI's shape, which the service uses for every 4xx)."""
    assert response.headers["content-type"].startswith("application/json"), response.text
    detail: list[Json] = response.json()["detail"]
    assert isinstance(detail, list) and detail, response.text
    for item in detail:
        assert {"loc", "msg", "type"} <= set(item), item
    return detail


def assert_refused(response: httpx.Response, status: int, field: str, problem: str) -> None:
    """``status``, and a detail entry whose ``loc`` names ``field`` and whose ``msg`` says ``problem``."""
    assert response.status_code == status, response.text
    detail = detail_of(response)
    named = [d for d in detail if field in [str(part) for part in d["loc"]]]
    assert named, f"no detail names {field!r}: {json.dumps(detail)}"
    assert any(problem.lower() in d["msg"].lower() for d in named), (
        f"no detail on {field!r} says {problem!r}: {json.dumps(detail)}"
    )


# --- running the service ------------------------------------------------------------------------


@dataclass
class Running:
    """A started service, its clients and the private Redis it uses (if any)."""

    service: ServiceProcess
    api: Api
    redis: PrivateRedis | None = None
    client: Client = field(init=False)

    def __post_init__(self) -> None:
        self.client = Client(self.service.url)

    def restart(self) -> None:
        """SIGTERM (clean shutdown: checkpoints), then start again on the same port and store."""
        self.api.close()  # no idle keep-alive connection for the graceful shutdown to wait for
        self.client.close()
        code = self.service.stop()
        # uvicorn re-raises the signal once its shutdown is complete
        assert code in (0, -signal.SIGTERM), f"exit code {code}:\n{self.service.log()}"
        last = self.service.log().rstrip().splitlines()[-1]
        assert "Finished server process" in last, self.service.log()
        self.service.start()
        self.api.reconnect()
        self.client = Client(self.service.url)


def start_services(specs: Sequence[tuple[Path, dict[str, str]]]) -> list[ServiceProcess]:
    """Start several services at once (each takes a second or two to come up)."""
    services = [ServiceProcess(directory, env) for directory, env in specs]
    with ThreadPoolExecutor(len(services)) as pool:
        futures = [pool.submit(s.start) for s in services]
    failures = [error for future in futures if (error := future.exception()) is not None]
    if failures:
        for service in services:
            service.kill()
        raise failures[0]
    return services


@contextlib.contextmanager
def running(directory: Path, env: dict[str, str], redis: PrivateRedis | None = None) -> Iterator[Running]:
    """One service for the duration of the block; stopped (SIGTERM, then SIGKILL) afterwards."""
    with running_all([(directory, env)], redis) as [run]:
        yield run


@contextlib.contextmanager
def running_all(
    specs: Sequence[tuple[Path, dict[str, str]]], redis: PrivateRedis | None = None
) -> Iterator[list[Running]]:
    """Several services started at once, for the duration of the block."""
    services = start_services(specs)
    runs = [Running(service, Api(service), redis) for service in services]
    try:
        yield runs
    finally:
        for run in runs:
            run.api.close()
            run.client.close()
            stop(run.service)


def stop(service: ServiceProcess) -> None:
    try:
        service.stop(timeout=15)
    except Exception:
        service.kill()


@contextlib.contextmanager
def private_redis(directory: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(directory)
    server.start()
    try:
        yield server
    finally:
        server.close()
