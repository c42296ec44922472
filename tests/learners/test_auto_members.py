"""``members="all"``: nonlinear families join the ``eta="auto"`` ensemble for small ``d``, and
``ModelConfig.feature_map`` runs ACOG over a map.

Expectations come from the members re-run as ordinary learners (made with :func:`create`, not by the
ensemble), their online mistakes counted in plain Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from pydantic import ValidationError

from service.learners import NONLINEAR_MAX_FEATURES, EtaGrid, InvalidInput, InvalidParameter, create
from service.model_config import ModelConfig

from .streams import sparse_stream

D = 3
GRID = (0.3, 3.0)
BASE: dict[str, Any] = {"rho": "laplace", "fit_intercept": True}


@pytest.fixture(scope="module")
def xor() -> tuple[sp.csr_matrix, np.ndarray]:
    """Not linearly separable: the label is the sign of ``x_0 x_1``."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    return sp.csr_matrix(X), y


def auto_all(d: int = D, **params: Any) -> EtaGrid:
    learner = create("acog", d, eta="auto", eta_grid=GRID, loss="auto", members="all", **BASE, **params)
    assert isinstance(learner, EtaGrid)
    return learner


def test_the_families_follow_the_linear_members_in_order_and_the_leader_is_the_best_so_far(
    xor: tuple,
) -> None:
    X, y = xor
    learner = auto_all()
    configs = [(loss, eta) for loss in ("II", "I") for eta in GRID]
    expected = [("acog", {}), ("quadratic", {"update": "acog-diag"})]
    singles = [
        create(name, D, eta=eta, loss=loss, **BASE, **options)
        for name, options in expected
        for loss, eta in configs
    ]
    assert [m.algorithm for m in learner.members] == [s.algorithm for s in singles]
    preds = np.stack([s.run(X, y).predictions for s in singles], axis=1)
    got = learner.run(X, y).predictions
    wrong = np.zeros((len(singles), 2))  # mistakes on positives, on negatives
    seen = np.zeros(2)
    for i, label in enumerate(y):
        with np.errstate(invalid="ignore", divide="ignore"):
            sens = np.where(seen[0] > 0, 1 - wrong[:, 0] / max(seen[0], 1), 1.0)
            spec = np.where(seen[1] > 0, 1 - wrong[:, 1] / max(seen[1], 1), 1.0)
        value = 0.5 * sens + 0.5 * spec
        leader = int(np.argmax(value >= value.max() - 1e-12))
        assert got[i] == preds[i, leader], i
        side = 0 if label == 1 else 1
        seen[side] += 1
        wrong[:, side] += preds[i] != label
    final = learner.member_objectives()
    assert [m["algorithm"] for m in final[:: len(configs)]] == ["acog", "quadratic/acog-diag"]
    # the point of the families: on XOR a nonlinear member leads at the end
    assert learner.member_algorithms[learner.leader()] != "acog"


def test_run_equals_learn_and_the_state_round_trips(xor: tuple) -> None:
    X, y = xor
    a, b = auto_all(), auto_all()
    a.run(X[:150], y[:150])
    for i in range(150):
        b.learn(X[i].toarray()[0], int(y[i]))
    sa, sb = a.to_state(), b.to_state()
    assert sa["families"] == ["quadratic/acog-diag"]
    for k in range(len(a.members)):
        for key, arr in sa["members"][str(k)].items():
            assert np.array_equal(arr, sb["members"][str(k)][key]), (k, key)
    c = auto_all()
    c.load_state(sa)
    assert np.array_equal(c.run(X[150:], y[150:]).scores, a.run(X[150:], y[150:]).scores)
    linear = create("acog", D, eta="auto", eta_grid=GRID, loss="auto", **BASE)
    with pytest.raises(InvalidInput, match="families"):
        linear.load_state(sa)


def test_above_the_threshold_all_is_the_linear_ensemble_bit_for_bit() -> None:
    d = NONLINEAR_MAX_FEATURES + 1
    X, y = sparse_stream(200, d, density=0.5, seed=2)
    everything = auto_all(d)
    linear = create("acog", d, eta="auto", eta_grid=GRID, loss="auto", **BASE)
    assert len(everything.members) == len(linear.members) and not everything.families
    assert np.array_equal(everything.run(X, y).scores, linear.run(X, y).scores)
    with pytest.raises(InvalidParameter, match="members"):
        create("acog", d, eta="auto", members="some")
    with pytest.raises(InvalidParameter, match='only applies with eta="auto"'):
        create("acog", d, eta=1.0, members="all")


def test_the_default_config_spans_the_families_and_linear_narrows_it() -> None:
    assert ModelConfig(n_features=D).learner_params()["members"] == "auto"
    assert "members" not in ModelConfig(n_features=D, auto_members="linear").learner_params()
    learner = ModelConfig(n_features=D, auto_members="all", normalize="l2").build_learner()
    assert isinstance(learner, EtaGrid) and len(learner.members) == 20
    assert learner.params["members"] == "all"
    default = ModelConfig(n_features=D).build_learner()
    # two input forms, and the nearest neighbours over the standardised one
    assert isinstance(default, EtaGrid) and len(default.members) == 2 * (20 + 1) + 1
    assert set(default.member_algorithms) == {"acog", "quadratic/acog-diag", "amf", "knn"}
    assert "auto_members" in ModelConfig(n_features=D, eta=1.0, auto_members="all").inapplicable()


def test_feature_map_runs_acog_over_the_map_with_its_seed(xor: tuple) -> None:
    X, y = xor
    config = ModelConfig(n_features=D, feature_map={"kind": "rff", "n_components": 40, "seed": 9})
    assert config.resolved_algorithm() == "acog" and config.learner_name() == "fogd"
    learner = config.build_learner()
    same = create(
        "fogd", D, eta="auto", loss="auto", update="acog", n_components=40, seed=9, bandwidth=1.0,
        selection="hedge", **BASE,
    )  # fmt: skip
    assert np.array_equal(learner.run(X, y).scores, same.run(X, y).scores)
    assert learner.describe()["feature_map"] == {"kind": "fogd", "dimension": 40, "update": "acog"}
    diag = ModelConfig(n_features=D, algorithm="acog-diag", feature_map={"kind": "nystrom", "budget": 12})
    member = diag.build_learner().members[0]
    assert (member.algorithm, member.params["update"], member.params["budget"]) == ("nogd", "acog-diag", 12)


def test_the_memory_budget_reads_the_mapped_dimension() -> None:
    d = 20  # quadratic: D = 230, with the intercept 231; ten full Sigmas = 4.27 MB
    one = 231 * 231 * 8
    config = ModelConfig(n_features=d, feature_map={"kind": "quadratic"})
    assert config.resolved_algorithm(memory_budget=10 * one) == "acog"
    assert config.resolved_algorithm(memory_budget=10 * one - 1) == "acog-diag"
    explicit = ModelConfig(n_features=d, algorithm="acog", feature_map={"kind": "quadratic"})
    with pytest.raises(InvalidParameter, match="10 copies"):
        explicit.build_learner(memory_budget=10 * one - 1)
    assert ModelConfig(n_features=d, feature_map={"kind": "none"}).resolved_algorithm() == "acog"


@pytest.mark.parametrize(
    ("fields", "field", "problem"),
    [
        ({"feature_map": {"kind": "quadratic", "seed": 3}}, "feature_map", "seed does not apply"),
        ({"feature_map": {"kind": "rff", "budget": 3}}, "feature_map", "budget does not apply"),
        ({"feature_map": {"kind": "cubic"}}, "kind", "'quadratic'"),
        ({"feature_map": {"kind": "rff", "n_components": 0}}, "n_components", "greater than or equal to 1"),
        ({"feature_map": {"kind": "rff"}, "algorithm": "ssacog"}, "feature_map", "not ssacog"),
        ({"feature_map": {"kind": "rff"}, "auto_members": "all"}, "auto_members", "feature_map"),
    ],
)
def test_bad_maps_are_refused_by_name(fields: dict, field: str, problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ModelConfig(n_features=D, **fields)
    error = caught.value.errors()[0]
    assert field in [str(p) for p in error["loc"]] and problem in error["msg"], error


def test_quadratic_over_64_features_is_refused_when_built() -> None:
    with pytest.raises(InvalidParameter, match="d <= 64"):
        ModelConfig(n_features=65, feature_map={"kind": "quadratic"}).build_learner()


@pytest.mark.parametrize(
    "fields",
    [
        {"feature_map": {"kind": "rff", "n_components": 30, "seed": 5}},
        {"feature_map": {"kind": "nystrom", "budget": 20, "bandwidth": 0.5}, "algorithm": "acog-diag"},
        {"feature_map": {"kind": "quadratic"}},
        {"auto_members": "all"},
    ],
)
def test_a_stored_configuration_loads_back_as_itself(fields: dict) -> None:
    """The store keeps ``pinned().model_dump()``: every field, defaults included."""
    pinned = ModelConfig(n_features=D, **fields).pinned()
    assert ModelConfig.model_validate(pinned.model_dump(mode="json")) == pinned


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_the_default_works_for_any_d_when_the_budget_makes_it_a_sketch(d: int) -> None:
    """A tiny memory budget resolves the default to ssacog: its default sketch (5) is capped at
    the dimension (intercept included), stored so, and loads back; a sketch the client set is not."""
    budget = 8  # bytes: no covariance fits
    config = ModelConfig(n_features=d)
    assert config.resolved_algorithm(budget) == "ssacog"
    learner = config.build_learner(budget)
    assert learner.params["sketch_size"] == min(5, d + 1)
    pinned = config.pinned(budget)
    assert pinned.sketch_size == min(5, d + 1)
    ModelConfig.model_validate(pinned.model_dump(mode="json")).build_learner(budget)
    assert ModelConfig(n_features=40).pinned().sketch_size == 5
    if d + 1 < 5:
        with pytest.raises(InvalidParameter, match="sketch_size"):
            ModelConfig(n_features=d, algorithm="sacog", sketch_size=5).build_learner(budget)


def test_the_maps_arrays_count_against_the_memory_budget() -> None:
    """FOGD keeps ``D x (d + 1)`` floats, NOGD ``B x (d + B + 1)``: per member, times the members."""
    one = 8 * 50 * (1000 + 1)  # fogd, D = 50, d = 1000
    create("fogd", 1000, n_components=50, memory_budget=one)
    with pytest.raises(InvalidParameter, match="map arrays"):
        create("fogd", 1000, n_components=50, memory_budget=one - 1)
    with pytest.raises(InvalidParameter, match="10 copies"):
        create("fogd", 1000, n_components=50, eta="auto", loss="auto", memory_budget=10 * one - 1)
    with pytest.raises(InvalidParameter, match="map arrays"):
        create("nogd", 1000, budget=20, memory_budget=8 * 20 * (1000 + 20 + 1) - 1)
    with pytest.raises(InvalidParameter, match="n_features"):
        ModelConfig(n_features=100_000, feature_map={"kind": "rff", "n_components": 4096}).build_learner()
