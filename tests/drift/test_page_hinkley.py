"""The drift detector (service.drift): its statistic against the textbook form, its state round
trip, and its place in a model's runtime (the same bits from a checkpoint, from replay, and from the
learner's progressive-validation path)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model_store import Example, LogEntry
from service.drift import DELTA, LAMBDA, MIN_LABELS, POLICY_EVENT, DriftMonitor, PageHinkley, class_weights
from service.engine.checkpoint import Snapshot
from service.engine.runtime import ModelRuntime
from service.model_config import ModelConfig

losses = st.lists(st.sampled_from([0.0, 0.1111111111111111, 1.0, 0.5]), min_size=1, max_size=400)


def reference(xs: list[float], delta: float, threshold: float, min_labels: int) -> list[int]:
    """Page-Hinkley as m_t - min_{i<=t} m_i over segments restarted at each alarm (1-based positions)."""
    alarms, start = [], 0
    while start < len(xs):
        seg = np.asarray(xs[start:], dtype=np.float64)
        n = np.arange(1, seg.size + 1)
        means = np.cumsum(seg) / n
        m = np.cumsum(seg - means - delta)
        stat = m - np.minimum.accumulate(np.minimum(m, 0.0))
        hits = np.flatnonzero((n >= min_labels) & (stat > threshold + 1e-9))
        if hits.size == 0:
            break
        alarms.append(start + int(hits[0]) + 1)
        start += int(hits[0]) + 1
    return alarms


@settings(max_examples=200, deadline=None)
@given(losses, st.floats(0.0, 0.2), st.floats(0.5, 5.0), st.integers(1, 40))
def test_the_statistic_is_m_t_less_its_running_minimum(
    xs: list[float], delta: float, threshold: float, min_labels: int
) -> None:
    detector = PageHinkley(delta=delta, threshold=threshold, min_labels=min_labels)
    found = [t for t, x in enumerate(xs, start=1) if detector.update(x, t)]
    expected = reference(xs, delta, threshold, min_labels)
    # the recursion and the cumulative form differ only in rounding: compare away from the threshold
    if found != expected:
        assert abs(len(found) - len(expected)) <= 1
    assert detector.detections == len(found)
    assert detector.last_detection == (found[-1] if found else 0)


@settings(max_examples=100, deadline=None)
@given(losses, st.integers(0, 400))
def test_a_restored_state_carries_on_bit_for_bit(xs: list[float], cut: int) -> None:
    cut = min(cut, len(xs))
    whole, first = PageHinkley(), PageHinkley()
    for t, x in enumerate(xs[:cut], start=1):
        whole.update(x, t)
        first.update(x, t)
    second = PageHinkley()
    second.load_state(first.to_state())
    for t, x in enumerate(xs[cut:], start=cut + 1):
        assert whole.update(x, t) == second.update(x, t)
    assert whole == second


def test_an_abrupt_rise_is_found_within_lambda_over_the_rise_and_a_flat_loss_never() -> None:
    rng = np.random.default_rng(7)
    detector = PageHinkley()
    before = (rng.random(20_000) < 0.1).astype(float)
    assert not any(detector.update(x, t) for t, x in enumerate(before.tolist(), start=1))
    after = (rng.random(2_000) < 0.5).astype(float)
    found = [t for t, x in enumerate(after.tolist(), start=1) if detector.update(x, 20_000 + t)]
    assert found and found[0] <= 2 * LAMBDA / (0.4 - DELTA)
    assert detector.last_detection == 20_000 + found[0]
    quiet = PageHinkley()
    assert not any(quiet.update(0.0, t) for t in range(1, 10_000))
    assert MIN_LABELS >= 1


def test_class_weights_scale_the_costlier_mistake_to_one() -> None:
    assert class_weights("sum", 0.5, 0.9) == (1.0, 1.0)
    w_pos, w_neg = class_weights("cost", 0.5, 0.9)
    assert w_pos == 1.0 and w_neg == pytest.approx(1 / 9)
    monitor = DriftMonitor("cost", 0.5, 0.9)
    assert (monitor.loss(1, 1), monitor.loss(1, -1), monitor.loss(-1, 1)) == (0.0, 1.0, w_neg)


def test_bad_states_are_refused() -> None:
    state = PageHinkley().to_state()
    with pytest.raises(ValueError):
        PageHinkley().load_state({**state, "g": -1.0})
    with pytest.raises(ValueError):
        PageHinkley().load_state({**state, "g": float("nan")})


def _stream(n: int, seed: int, change: int) -> list[LogEntry]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        x = rng.normal(size=4)
        w = np.array([1.0, -1.0, 0.5, 0.0]) if i < change else np.array([-1.0, 1.0, 0.0, 0.5])
        y = 1 if x @ w > 0 else -1
        out.append(LogEntry(f"{1000 + i}-0", i + 1, f"p{i}", Example.sparse(np.arange(4), x), y, 0, 1.0, 2.0))
    return out


def test_the_runtime_detects_on_its_prequential_loss_as_the_stream_path_does() -> None:
    config = ModelConfig.model_validate({"n_features": 4, "normalize": "none"}).pinned()
    stream = _stream(3_000, seed=3, change=2_000)
    runtime = ModelRuntime("m", 1, config, 2**29, window=50)
    flagged = [a.seq for e in stream if (a := runtime.apply(e)) is not None and a.drift]
    assert flagged and flagged[0] > 2_000
    assert runtime.drift.detections == len(flagged)
    assert runtime.describe()["drift"]["detections"] == len(flagged)

    # the learner's compiled stream path gives the same predictions, so the same detections
    X = np.array([e.example.values for e in stream if e.example is not None])
    y = np.array([e.y for e in stream])
    predictions = config.build_learner().run(X, y).predictions
    monitor = DriftMonitor(config.objective, config.alpha_p, config.c_p)
    pairs = zip(y.tolist(), predictions.tolist(), strict=True)
    again = [t for t, (yt, p) in enumerate(pairs, start=1) if monitor.observe(yt, p, t)]
    assert again == flagged
    assert monitor.detector == runtime.drift.detector


def test_checkpoint_and_replay_end_in_the_same_detector() -> None:
    config = ModelConfig.model_validate({"n_features": 4, "normalize": "none"}).pinned()
    stream = _stream(2_500, seed=4, change=1_200)
    straight = ModelRuntime("m", 1, config, 2**29, window=50)
    for e in stream:
        straight.apply(e)
    first = ModelRuntime("m", 1, config, 2**29, window=50)
    for e in stream[:1_300]:
        first.apply(e)
    restored = ModelRuntime("m", 1, config, 2**29, window=50)
    restored.restore(Snapshot.decode(first.snapshot().encode(), 1, restored.config_json))
    for e in stream[1_300:]:
        restored.apply(e)
    assert restored.drift.detector == straight.drift.detector
    assert straight.drift.detections >= 1


def _policy(seq: int, policy: str) -> LogEntry:
    body = json.dumps({"on_drift": policy}).encode()
    return LogEntry(f"{1000 + seq - 1}-1", seq, "", None, 0, 0, 1.0, 2.0, kind=POLICY_EVENT, body=body)


def test_the_reset_policy_restarts_the_learner_at_the_same_label_after_a_restore() -> None:
    config = ModelConfig.model_validate({"n_features": 4, "normalize": "none"}).pinned()
    labels = _stream(3_000, seed=5, change=2_000)
    stream = [_policy(1, "reset")] + [
        LogEntry(e.stream_id, (e.seq or 0) + 1, e.prediction_id, e.example, e.y, e.yhat, 1.0, 2.0)
        for e in labels
    ]
    straight = ModelRuntime("m", 1, config, 2**29, window=50)
    flagged = [a.seq for e in stream if (a := straight.apply(e)) is not None and a.drift]
    assert flagged and straight.drift.resets == len(flagged) and straight.drift.policy == "reset"
    assert straight.describe()["drift"]["on_drift"] == "reset" and straight.labels == 3_000
    # a fresh learner fed the labels after the last reset holds the same weights
    fresh = config.build_learner()
    for e in stream[flagged[-1] :]:
        assert e.example is not None
        fresh.learn(straight.features.vector(e.example), e.y)
    assert np.array_equal(fresh.weights(), straight.learner.weights())
    # a checkpoint between the resets carries the policy: the restored model resets at the same labels
    first = ModelRuntime("m", 1, config, 2**29, window=50)
    for e in stream[:2_100]:
        first.apply(e)
    restored = ModelRuntime("m", 1, config, 2**29, window=50)
    restored.restore(Snapshot.decode(first.snapshot().encode(), 1, restored.config_json))
    later = [a.seq for e in stream[2_100:] if (a := restored.apply(e)) is not None and a.drift]
    assert later == [s for s in flagged if s > 2_100]
    assert np.array_equal(restored.learner.weights(), straight.learner.weights())
    assert restored.drift.to_state() == straight.drift.to_state()


def test_an_unknown_policy_entry_changes_nothing_but_the_version() -> None:
    config = ModelConfig.model_validate({"n_features": 4}).pinned()
    runtime = ModelRuntime("m", 1, config, 2**29, window=50)
    applied = runtime.apply(_policy(1, "explode"))
    assert applied is not None and not applied.updated and runtime.version == 1
    assert runtime.drift.policy == "none" and runtime.labels == 0


def test_the_challenger_policy_starts_a_fresh_challenger_after_each_detection() -> None:
    config = ModelConfig.model_validate({"n_features": 4, "normalize": "none"}).pinned()
    labels = _stream(3_000, seed=5, change=2_000)
    policy = json.dumps({"on_drift": "challenger", "limit": 1}).encode()
    stream = [LogEntry("999-1", 1, "", None, 0, 0, 1.0, 2.0, kind=POLICY_EVENT, body=policy)] + [
        LogEntry(e.stream_id, (e.seq or 0) + 1, e.prediction_id, e.example, e.y, e.yhat, 1.0, 2.0)
        for e in labels
    ]
    runtime = ModelRuntime("m", 1, config, 2**29, window=50)
    flagged = [a.seq for e in stream if (a := runtime.apply(e)) is not None and a.drift]
    assert flagged and runtime.drift.resets == len(flagged)
    challenger = runtime.challengers["drift"]
    assert challenger.since == flagged[-1] + 1
    fresh = config.build_learner()
    for e in stream[flagged[-1] :]:
        assert e.example is not None
        fresh.learn(runtime.features.vector(e.example), e.y)
    assert np.array_equal(fresh.weights(), challenger.learner.weights())
