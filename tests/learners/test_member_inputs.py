"""The ensemble's input forms: online standardisation (Welford, warm-up, clip) against a plain
re-computation, the L2 form against the service's kernel, and the defaults' members by ``d``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from service.learners import EtaGrid, InvalidInput, InvalidParameter, create
from service.learners.member_inputs import MemberInputs
from service.learners.roster import STANDARD_MAX_FEATURES, forms_for
from service.learners.standardise import CLIP, WARM_UP
from service.model_config import ModelConfig
from service.normalization import unit_l2


def expected_standardised(X: np.ndarray) -> np.ndarray:
    """Each row by the mean and population std of the rows before it (plain numpy, two passes); 0 in the
    warm-up and for a feature without spread so far."""
    out = np.empty_like(X)
    for i in range(X.shape[0]):
        past = X[:i]
        mean = past.mean(axis=0) if i else np.zeros(X.shape[1])
        std = past.std(axis=0) if i else np.zeros(X.shape[1])
        known = (i >= WARM_UP) & (std > 0)
        out[i] = np.where(known, np.clip((X[i] - mean) / np.where(known, std, 1.0), -CLIP, CLIP), 0.0)
    return out


def test_standardisation_uses_the_statistics_before_each_example() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(5.0, 3.0, size=(60, 4)) * np.array([1.0, 100.0, 0.01, 1.0])
    X[:, 3] = 2.0  # a constant feature maps to 0
    inputs = MemberInputs(["standard"], 4)
    got = inputs.streams(sp.csr_matrix(X), np.ones(60))["standard"].toarray()
    np.testing.assert_allclose(got, expected_standardised(X), rtol=1e-9, atol=1e-9)
    assert np.all(got[:, 3] == 0.0)  # no spread: the feature reads its mean
    assert np.all(got[:WARM_UP] == 0.0)  # warm-up: every feature reads its mean
    assert np.any(got[WARM_UP:] != 0.0)
    assert int(inputs.arrays["std_count"][0]) == 60


def test_one_example_at_a_time_gives_the_bits_of_the_stream() -> None:
    rng = np.random.default_rng(5)
    X = sp.random(80, 6, density=0.5, random_state=1, format="csr") * 40.0
    a, b = MemberInputs(["l2", "standard"], 6), MemberInputs(["l2", "standard"], 6)
    streams = a.streams(X, np.ones(80))
    for i in range(80):
        row = b.vectors(X[i], learn=True)
        assert np.array_equal(row["standard"][1], streams["standard"][i].data)
        assert np.array_equal(row["l2"][1], unit_l2(X[i].data))
    for key in a.arrays:
        assert np.array_equal(a.arrays[key], b.arrays[key])
    del rng


def test_a_prediction_does_not_move_the_statistics_and_bad_input_changes_nothing() -> None:
    inputs = MemberInputs(["l2", "standard"], 3)
    inputs.vectors(np.array([1.0, 2.0, 3.0]), learn=True)
    before = {k: v.copy() for k, v in inputs.arrays.items()}
    inputs.vectors(np.array([10.0, 2.0, 3.0]))
    with pytest.raises(InvalidInput):
        inputs.vectors(np.array([np.nan, 2.0, 3.0]), learn=True)
    assert all(np.array_equal(before[k], inputs.arrays[k]) for k in before)


def test_forms_are_checked_by_name() -> None:
    for bad in (["raw", "l2"], ["l1"], [], ["l2", "l2"]):
        with pytest.raises(InvalidParameter, match="inputs"):
            create("acog", 3, eta="auto", inputs=bad)


def test_the_norm_reaches_the_standardised_members() -> None:
    """Two classes that differ in spread only: the L2 members cannot tell them apart, the
    standardised quadratic ones can (and lead). Over eight seeded streams: one stream's second half
    ranges from 0.67 to 0.95 of balanced accuracy, so the test holds the mean."""
    n, d, late = 1500, 6, slice(750, 1500)
    balanced, leaders = [], []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        y = np.where(rng.random(n) < 0.3, 1, -1)
        X = rng.normal(size=(n, d)) * np.where(y == 1, 3.0, 1.0)[:, None]
        learner = ModelConfig(n_features=d, auto_members="all").build_learner()
        assert isinstance(learner, EtaGrid)
        assert learner.inputs.forms == ("l2", "standard")
        pred = learner.run(sp.csr_matrix(X), y).predictions[late]
        balanced.append(0.5 * (np.mean(pred[y[late] == 1] == 1) + np.mean(pred[y[late] == -1] == -1)))
        leaders.append(learner.member_forms[learner.leader()])
    assert np.mean(balanced) > 0.85
    assert leaders == ["standard"] * 8


def test_standardised_inputs_only_for_small_d_and_only_when_the_ensemble_normalises() -> None:
    assert forms_for("auto", STANDARD_MAX_FEATURES) == ("l2", "standard")
    assert forms_for("auto", STANDARD_MAX_FEATURES + 1) == ("l2",)
    assert forms_for("l2", 3) == ("raw",)
    assert ModelConfig(n_features=5).request_normalize == "none"
    assert ModelConfig(n_features=5, eta=1.0, loss="II").request_normalize == "l2"
    assert ModelConfig(n_features=5, normalize="l2").request_normalize == "l2"
    wide = ModelConfig(n_features=STANDARD_MAX_FEATURES + 1).build_learner()
    assert isinstance(wide, EtaGrid) and wide.inputs.forms == ("l2",)


def test_the_earlier_defaults_are_one_setting_away_bit_for_bit() -> None:
    """``normalize: "l2"``, ``auto_members: "linear"`` and ``selection: "leader"``: the linear
    ensemble over the input as given, the same bits as an ensemble made without families or forms."""
    rng = np.random.default_rng(1)
    X = sp.csr_matrix(rng.normal(size=(200, 4)))
    y = np.where(rng.random(200) < 0.3, 1, -1)
    config = ModelConfig(n_features=4, normalize="l2", auto_members="linear", selection="leader")
    plain = create("acog", 4, eta="auto", loss="auto", rho="laplace", fit_intercept=True)
    assert np.array_equal(config.build_learner().run(X, y).scores, plain.run(X, y).scores)


def test_the_hedge_vote_learns_row_by_row_as_over_a_stream_and_round_trips() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(150, 4)) * 3.0
    y = np.where(rng.random(150) < 0.25, 1, -1)
    params = {"eta": "auto", "loss": "auto", "eta_grid": [0.3, 3.0], "members": "all", "selection": "hedge",
              "inputs": ["l2", "standard"], "rho": "laplace", "fit_intercept": True}  # fmt: skip
    a, b = create("acog", 4, **params), create("acog", 4, **params)
    scores = a.run(sp.csr_matrix(X[:100]), y[:100]).scores
    row = [b.learn(X[i], y[i]).score for i in range(100)]
    assert np.array_equal(scores, np.array(row))
    assert all(abs(s) <= 1.4 for s in row)  # the vote less its threshold
    c = create("acog", 4, **params)
    c.load_state(a.to_state())
    for i in range(100, 150):
        assert a.score(X[i]) == c.score(X[i])
        assert a.learn(X[i], y[i]).score == c.learn(X[i], y[i]).score
    weights = [m["weight"] for m in a.member_objectives()]
    assert abs(sum(weights) - 1.0) < 1e-9


def test_a_forest_over_standardised_features_of_large_scale_keeps_splitting() -> None:
    """The first examples read 0, not their deviation in the feature's own units: centred alone, the
    first values of an income or a loan sat at the clip and stretched the Mondrian boxes, and on this
    stream (the positives an age band, a fifth of the rows) the forest over the standardised input
    ended flagging nothing (balanced accuracy 0.5; 0.85 now)."""
    rng = np.random.default_rng(0)
    n = 3000
    income, age = rng.uniform(2e4, 1.5e5, n), rng.integers(20, 81, n).astype(float)
    loan, car, house = rng.uniform(0, 5e5, n), rng.integers(1, 21, n).astype(float), rng.uniform(5e4, 9e5, n)
    X = np.column_stack([income, age, loan, car, house])
    y = np.where((age < 40) | (age >= 60), -1, 1)
    positives, negatives = np.flatnonzero(y == 1), np.flatnonzero(y == -1)
    keep = np.sort(np.concatenate([negatives, rng.choice(positives, len(negatives) // 4, replace=False)]))
    X, y = X[keep], y[keep]
    z = MemberInputs(["standard"], 5).streams(sp.csr_matrix(X), y)["standard"]
    predicted = create("amf", 5, rho="laplace").run(z, y).predictions
    balanced = 0.5 * (np.mean(predicted[y == 1] == 1) + np.mean(predicted[y == -1] == -1))
    assert balanced > 0.8
