"""A stream that changes abruptly: the drift detector sees it, a challenger started then learns the new
concept, and is promoted; the model's earlier state stays one rollback away.

A seeded stream of sensor readings (10 features in [0, 1], 5% label noise): an anomaly is a reading
above a hyperplane, until label 4,000, where five of the hyperplane's weights flip sign (an abrupt
change). The walk-through, all with ``service.client``:

1. create the model (``PUT /models/sensor``) and feed it labelled readings in batches
   (``POST /feedback`` with features: labelled examples never scored);
2. after each batch, read ``state.drift``: the detector signals soon after the change;
3. then add a challenger (``PUT /models/sensor/challengers/fresh``), a fresh model of the same
   configuration that learns only from there on, and feed both the next 3,000 labels;
4. compare their weighted costs since the challenger started, and promote the challenger
   (``POST /models/sensor/challengers/fresh/promote``): a new generation with its state;
5. list the retained checkpoints of the new generation (``GET /models/sensor/checkpoints``), which
   ``POST /models/sensor/rollback`` could restore.

Run a service first (``acog serve``), then::

    python examples/drift_challenger.py http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from service.client import Client

MODEL = "sensor"
CONFIG = {"n_features": 10, "normalize": "none"}
CHANGE, TOTAL, BATCH = 4_000, 8_000, 100


def stream(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Readings and labels: the hyperplane ``w . x > sum(w) / 2``, five weights flipped at ``CHANGE``."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.0, 1.0, size=10)
    w_after = w.copy()
    w_after[rng.choice(10, size=5, replace=False)] *= -1.0
    X = rng.uniform(0.0, 1.0, size=(TOTAL, 10))
    y = np.where(X[:CHANGE] @ w > w.sum() / 2, 1, -1)
    y = np.concatenate([y, np.where(X[CHANGE:] @ w_after > w_after.sum() / 2, 1, -1)])
    noise = rng.random(TOTAL) < 0.05
    return X, np.where(noise, -y, y)


def examples(X: np.ndarray, y: np.ndarray, start: int) -> list[tuple[list[float], int]]:
    rows = X[start : start + BATCH].tolist()
    return list(zip(rows, y[start : start + BATCH].tolist(), strict=True))


def cost(measures: dict[str, float]) -> float:
    """Weighted mistakes per label (the objective ``sum``: both classes' mistakes weigh the same)."""
    labels = measures["t_p"] + measures["t_n"]
    return (measures["m_p"] + measures["m_n"]) / labels if labels else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8000")
    parser.add_argument("--api-key", default=os.environ.get("ACOG_API_KEY"))
    args = parser.parse_args(argv)
    X, y = stream()

    with Client(args.url, api_key=args.api_key, model=MODEL) as client:
        client.wait_ready()
        client.put_model(MODEL, CONFIG, replace=True)
        print(f"model {MODEL!r}: {CONFIG}; the concept changes at label {CHANGE:,}")
        position, detected_at = 0, None
        while detected_at is None and position < TOTAL - 3_000:  # 1-2. learn until the detector signals
            client.learn_batch(examples(X, y, position))
            position += BATCH
            drift = client.get_model(MODEL).state["drift"]  # type: ignore[index]
            if drift["detections"]:
                detected_at = drift["last_detection_version"]
        print(f"drift detected at label {detected_at:,} ({detected_at - CHANGE:+,} after the change)")

        client.put_challenger(MODEL, "fresh", CONFIG)  # 3. a fresh model from here on
        at_start = client.get_model(MODEL).measures
        for start in range(position, position + 3_000, BATCH):
            client.learn_batch(examples(X, y, start))
        state = client.get_model(MODEL).state
        assert state is not None
        champion = {k: state["measures"][k] - at_start[k] for k in ("t_p", "t_n", "m_p", "m_n")}
        challenger = state["challengers"]["fresh"]
        print(
            f"over the {challenger['labels']:,} labels since: model {cost(champion):.3f} mistakes a label, "
            f"challenger {cost(challenger['measures']):.3f}"
        )
        if cost(challenger["measures"]) < cost(champion):  # 4. promote the better one
            promoted = client.promote_challenger(MODEL, "fresh")
            print(f"promoted: generation {promoted.generation}, version {promoted.state['version']}")  # type: ignore[index]
        kept = client.list_checkpoints(MODEL)  # 5. what a rollback could restore
        print("retained checkpoints:", [(c.generation, c.version) for c in kept])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
