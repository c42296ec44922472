"""Challengers in a model's runtime: added by a log entry, they learn the labels after it exactly as a
fresh model of their configuration would; a checkpoint carries them bit for bit; the refusals are
no-ops, the same everywhere."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from model_store import Example, LogEntry, encode_state
from service.challengers import CHALLENGER_EVENT, Challenger, put_body, replay, served_to
from service.engine.checkpoint import Snapshot
from service.engine.runtime import ModelRuntime
from service.model_config import ModelConfig
from service.normalization import unit_l2

D = 5
CHAMPION = ModelConfig.model_validate({"n_features": D}).pinned()
CHALLENGER = ModelConfig.model_validate({"n_features": D, "algorithm": "arow", "objective": "cost"}).pinned()


def labels(n: int, seed: int, first_seq: int) -> list[LogEntry]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        x = rng.normal(size=D)
        y = 1 if x[0] - 0.5 * x[1] + 0.3 * rng.normal() > 0.2 else -1
        seq = first_seq + i
        out.append(
            LogEntry(f"{1000 + seq}-0", seq, f"p{seq}", Example.sparse(np.arange(D), x), y, 0, 1.0, 2.0)
        )
    return out


def event(seq: int, body: dict) -> LogEntry:  # type: ignore[type-arg]
    return LogEntry(
        f"{1000 + seq}-0",
        seq,
        "",
        None,
        0,
        0,
        1.0,
        2.0,
        kind=CHALLENGER_EVENT,
        body=json.dumps(body).encode(),
    )


def put(seq: int, name: str, config: ModelConfig, limit: int = 2) -> LogEntry:
    return event(seq, {"op": "put", "id": name, "config": config.model_dump_json(), "limit": limit})


def test_a_challenger_learns_what_a_fresh_model_would_from_the_labels_after_it() -> None:
    runtime = ModelRuntime("m", 1, CHAMPION, 2**29, window=20)
    before, after = labels(100, 1, 1), labels(300, 2, 102)
    for e in before:
        runtime.apply(e)
    added = runtime.apply(put(101, "arow", CHALLENGER))
    assert added is not None and added.updated and added.kind == CHALLENGER_EVENT
    for e in after:
        runtime.apply(e)
    fresh = ModelRuntime("f", 1, CHALLENGER, 2**29, window=20)
    for i, e in enumerate(after):
        # what arow's own requests would have put in its log: unit rows (the ensemble's are raw)
        assert e.example is not None and e.example.indices is not None
        served = Example.sparse(e.example.indices, unit_l2(e.example.values))
        fresh.apply(LogEntry(e.stream_id, i + 1, e.prediction_id, served, e.y, e.yhat, 1.0, 2.0))
    challenger = runtime.challengers["arow"]
    assert np.array_equal(challenger.learner.weights(), fresh.learner.weights())
    assert challenger.measures.counts == fresh.measures.counts  # both prequential (yhat 0 in the log)
    assert challenger.drift.to_state() == fresh.drift.to_state()
    described = runtime.describe()["challengers"]["arow"]
    assert described["since_version"] == 101 and described["labels"] == 300
    assert described["config"]["algorithm"] == "arow"


def test_a_checkpoint_carries_the_challengers_bit_for_bit() -> None:
    runtime = ModelRuntime("m", 1, CHAMPION, 2**29, window=20)
    runtime.apply(put(1, "arow", CHALLENGER))
    stream = labels(200, 3, 2)
    for e in stream[:120]:
        runtime.apply(e)
    restored = ModelRuntime("m", 1, CHAMPION, 2**29, window=20)
    restored.restore(Snapshot.decode(runtime.snapshot().encode(), 1, restored.config_json))
    for e in stream[120:]:
        runtime.apply(e)
        restored.apply(e)
    a, b = runtime.challengers["arow"], restored.challengers["arow"]
    assert np.array_equal(a.learner.weights(), b.learner.weights())
    assert a.measures.counts == b.measures.counts and a.since == b.since == 1


def test_what_cannot_apply_changes_nothing_and_the_limit_holds() -> None:
    runtime = ModelRuntime("m", 1, CHAMPION, 2**29, window=20)
    other_shape = ModelConfig.model_validate({"n_features": D + 1}).pinned()
    assert not runtime.apply(put(1, "wide", other_shape)).updated  # type: ignore[union-attr]
    assert runtime.apply(put(2, "a", CHALLENGER, limit=1)).updated  # type: ignore[union-attr]
    assert not runtime.apply(put(3, "b", CHALLENGER, limit=1)).updated  # type: ignore[union-attr]
    assert runtime.apply(put(4, "a", CHALLENGER, limit=1)).updated  # type: ignore[union-attr]
    assert runtime.challengers["a"].since == 2  # the same configuration again: not restarted
    assert not runtime.apply(event(5, {"op": "promote", "id": "b"})).updated  # type: ignore[union-attr]
    assert runtime.apply(event(6, {"op": "delete", "id": "a"})).updated  # type: ignore[union-attr]
    assert runtime.challengers == {} and runtime.version == 6 and runtime.labels == 0


def test_an_entry_carrying_a_state_loads_it_only_right_after_the_history_it_learned() -> None:
    """``start: "log"``: the adding entry carries the replayed challenger; a runtime loads it only at
    the position it was built for (``to_version + 1``), and an undecodable one changes nothing."""
    runtime = ModelRuntime("m", 1, CHAMPION, 2**29, window=20)
    history = labels(40, 4, 1)
    for e in history:
        runtime.apply(e)
    built = Challenger.fresh(CHALLENGER, 2**29, 0)
    built.history = {"labels": 0, "from_version": None, "to_version": 40}
    replay(
        built,
        [(served_to(CHALLENGER, CHAMPION, runtime.features.known_vector(e.example)), e.y, e.seq or 0)
         for e in history[10:] if e.example is not None],
    )  # fmt: skip
    header = {"op": "put", "id": "arow", "config": CHALLENGER.model_dump_json(), "limit": 2}
    carried = LogEntry("2000-0", 41, "", None, 0, 0, 1.0, 2.0, CHALLENGER_EVENT, b"")
    early = dataclasses.replace(built, history={**(built.history or {}), "to_version": 39})
    for body in (put_body(header, encode_state(early.to_state())), put_body(header, b"not a state")):
        twin = ModelRuntime("m", 1, CHAMPION, 2**29, window=20)
        for e in history:
            twin.apply(e)
        assert not twin.apply(dataclasses.replace(carried, body=body)).updated  # type: ignore[union-attr]
        assert twin.challengers == {}
    state = encode_state(built.to_state())
    applied = runtime.apply(dataclasses.replace(carried, body=put_body(header, state)))
    assert applied is not None and applied.updated
    loaded = runtime.challengers["arow"]
    assert np.array_equal(loaded.learner.weights(), built.learner.weights())
    assert loaded.history == {"labels": 30, "from_version": 11, "to_version": 40} and loaded.since == 41
    assert runtime.describe()["challengers"]["arow"]["start"] == "log"
