"""The live run: a private Redis, the service, a real Prometheus and the traffic, for a while."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

from .grid import load_dashboard
from .page_data import RenderInput
from .paths import repo_on_path
from .progress import log
from .queries import SCRAPE_SECONDS, collect
from .traffic import LABEL_TTL_SECONDS, MIXES, SECOND_MODEL, BadLabels, replay


def live_run(seconds: float, workdir: Path, rate: float) -> RenderInput:
    """Service + Prometheus + traffic for ``seconds``; the dashboard's data over that run."""
    repo_on_path()
    from tests.deploy.prometheus_runner import project_config, run_prometheus
    from tests.support.private_redis import PrivateRedis
    from tests.support.service_process import ServiceProcess

    dashboard = load_dashboard()
    (workdir / "redis").mkdir(parents=True)
    (workdir / "service").mkdir()
    with ExitStack() as stack:
        store = PrivateRedis(workdir / "redis")
        store.start()
        stack.callback(store.terminate)
        log(f"private Redis on port {store.port}")
        service = ServiceProcess(
            workdir / "service",
            {
                "ACOG_REDIS_URL": store.url,
                "ACOG_DEFAULT_MODEL": '{"name":"default","n_features":24}',
                "ACOG_LABEL_TTL_SECONDS": str(LABEL_TTL_SECONDS),
                "ACOG_MAINTENANCE_INTERVAL_SECONDS": "2",
                "ACOG_API_KEYS": "",
                "ACOG_ADMIN_KEYS": "",
            },
        )
        service.start()
        stack.callback(service.stop)
        log(f"service at {service.url} (log {service.log_path})")
        config = project_config(f"127.0.0.1:{service.port}", interval=f"{SCRAPE_SECONDS}s")
        prometheus = stack.enter_context(run_prometheus(config, workdir / "prometheus"))
        prometheus.wait_for_targets_up("acog", timeout=30)
        log(f"Prometheus at {prometheus.url}, scraping every {SCRAPE_SECONDS} s")
        start = time.time()
        limit = int(rate * (seconds + 60))
        stack.enter_context(
            replay(service.url, "german", "default", rate, limit, workdir / "replay-german.log")
        )
        second_rate = max(1.0, rate * 2 / 3)
        stack.enter_context(
            replay(
                service.url,
                "sklearn:breast_cancer",
                SECOND_MODEL,
                second_rate,
                int(second_rate * (seconds + 60)),
                workdir / "replay-breast-cancer.log",
            )
        )
        prometheus.wait_for(f'acog_model_version{{model="{SECOND_MODEL}"}}', timeout=60)
        add_challenger(service.url)
        datasets = {"default": "german", SECOND_MODEL: "sklearn:breast_cancer"}
        drivers = [BadLabels(service.url, model, datasets[model], mix) for model, mix in MIXES.items()]
        for bad in drivers:
            bad.start()
            stack.callback(bad.join, 10)
            stack.callback(bad.stop_event.set)
        deadline = start + seconds
        while (left := deadline - time.time()) > 0:
            time.sleep(min(15.0, left))
            log(f"traffic: {time.time() - start:.0f}/{seconds:g} s")
        end = time.time()
        time.sleep(SCRAPE_SECONDS + 0.5)  # the last scrape lands
        data = collect(prometheus, dashboard, start, end)
        for bad in drivers:
            log(f"bad labels sent (items -> status): {dict(sorted(bad.sent.items()))}")
        return data


CHALLENGER = {"n_features": 24, "algorithm": "arow", "objective": "cost", "start": "log"}
"""The challenger the run adds to the default model (it first learns the log's history), so that the
challenger panel has a series next to the model's."""


def add_challenger(url: str) -> None:
    import httpx

    response = httpx.put(f"{url}/models/default/challengers/arow", json=CHALLENGER, timeout=60)
    response.raise_for_status()
    history = response.json()["state"]["challengers"]["arow"]["history"]
    log(f"challenger 'arow' on model 'default', started from the log ({history['labels']} labels of history)")
