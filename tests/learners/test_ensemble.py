"""``eta="auto"``: the EtaGrid ensemble picks the member with the best objective so far.

Every expectation here is computed independently of :mod:`service.learners.ensemble`: the
members are re-run as ordinary single-eta learners, their online mistakes counted in plain
Python, and the objective (sum or cost) evaluated by hand.
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from research.protocols import online as ev
from service.datasets import load
from service.learners import DEFAULT_GRID, EtaGrid, InvalidInput, InvalidParameter, create
from service.model_config import ModelConfig

from ..conftest import dataset_path
from .streams import sparse_stream

D = 8
GRID = (0.01, 1.0, 100.0)


@pytest.fixture(scope="module")
def stream() -> tuple[sp.csr_matrix, np.ndarray]:
    """A stream on which the members disagree: the leader changes along the way."""
    return sparse_stream(400, D, density=0.6, seed=5)


def auto(**params: Any) -> EtaGrid:
    base: dict[str, Any] = {"eta": "auto", "eta_grid": GRID, "rho": "laplace", "fit_intercept": True}
    learner = create("acog", n_features=D, **{**base, **params})
    assert isinstance(learner, EtaGrid)
    return learner


def objective_by_hand(counts: tuple[int, int, int, int], objective: str) -> Fraction:
    """Higher is better, in exact arithmetic: ``0.5 sens + 0.5 spec`` (an unseen class counts
    as perfect), or ``-(0.9 M_p + 0.1 M_n)``; so ties are ties (nine false alarms cost what
    one missed anomaly costs)."""
    t_p, t_n, m_p, m_n = counts
    if objective == "cost":
        return -(Fraction(9, 10) * m_p + Fraction(1, 10) * m_n)
    sens = Fraction(t_p - m_p, t_p) if t_p else Fraction(1)
    spec = Fraction(t_n - m_n, t_n) if t_n else Fraction(1)
    return (sens + spec) / 2


def expected_leaders(
    X: sp.csr_matrix, y: np.ndarray, params: dict[str, Any], objective: str, window: int | None
) -> tuple[list[int], np.ndarray]:
    """For every row, the index of the member with the best objective over the labels before it
    (all of them, or the last ``window``), ties to the earlier member; and the members' scores."""
    members = [create("acog", n_features=D, eta=eta, **params) for eta in GRID]
    history: deque[list[tuple[int, int, int, int]]] = deque(maxlen=window)
    leaders, scores = [], np.empty((X.shape[0], len(GRID)))
    for i in range(X.shape[0]):
        totals = [tuple(sum(step[k][j] for step in history) for j in range(4)) for k in range(len(GRID))]
        values = [objective_by_hand(t, objective) for t in totals]  # type: ignore[arg-type]
        leaders.append(values.index(max(values)))
        step = []
        for k, member in enumerate(members):
            info = member.learn(X[i], y[i])
            scores[i, k] = info.score
            wrong = int(info.prediction != y[i])
            step.append((1, 0, wrong, 0) if y[i] == 1 else (0, 1, 0, wrong))
        history.append(step)
    return leaders, scores


@pytest.mark.parametrize("objective", ["sum", "cost"])
@pytest.mark.parametrize(("selection", "window"), [("leader", None), ("window", 60)])
def test_auto_predicts_with_the_member_that_has_the_best_objective_so_far(
    stream: tuple, objective: str, selection: str, window: int | None
) -> None:
    X, y = stream
    rho: Any = "laplace" if objective == "sum" else 9.0
    params = {"rho": rho, "fit_intercept": True, "loss": "II"}
    leaders, member_scores = expected_leaders(X, y, params, objective, window)
    assert len(set(leaders[20:])) > 1, "the stream must make the leader change for this test to mean anything"
    extra = {"window": window} if window else {}
    ensemble = auto(objective=objective, selection=selection, rho=rho, **extra)
    for i in range(X.shape[0]):
        assert ensemble.leader() == leaders[i], f"row {i}"
        assert ensemble.eta == GRID[leaders[i]]
        assert ensemble.score(X[i]) == member_scores[i, leaders[i]]
        info = ensemble.learn(X[i], y[i])
        assert info.score == member_scores[i, leaders[i]]


def test_window_and_leader_disagree_somewhere(stream: tuple) -> None:
    """The two rules are different rules on this stream (otherwise the tests above prove less)."""
    X, y = stream
    params = {"rho": "laplace", "fit_intercept": True, "loss": "II"}
    leader, _ = expected_leaders(X, y, params, "sum", None)
    window, _ = expected_leaders(X, y, params, "sum", 60)
    assert leader != window


@pytest.mark.parametrize(
    ("objective", "counts", "leader"),
    [
        # sum: member 1 has 0.5 + 0.5 * 0.7 = 0.85 against member 0's 0.5 * 0.5 + 0.5 * 0.91 = 0.705
        ("sum", [[2, 100, 1, 9], [2, 100, 0, 30]], 1),
        # cost on the same counts: member 0 pays 0.9 + 0.9 = 1.8, member 1 pays 3.0
        ("cost", [[2, 100, 1, 9], [2, 100, 0, 30]], 0),
        # sum before any positive: sensitivity counts as perfect, so fewer false alarms wins
        ("sum", [[0, 10, 0, 5], [0, 10, 0, 1]], 1),
        # ties go to the earlier member of the grid
        ("cost", [[5, 5, 1, 1], [5, 5, 1, 1]], 0),
        # ... also when the tie is exact only in the counts: 9 false alarms (9 * 0.1 rounds to
        # 0.8999999999999998 with c_n = 1 - 0.9) against one missed anomaly (0.9)
        ("cost", [[5, 50, 1, 0], [5, 50, 0, 9]], 0),
        ("cost", [[5, 50, 0, 9], [5, 50, 1, 0]], 0),
    ],
)
def test_the_objective_that_decides_sum_against_cost_and_ties(
    objective: str, counts: list[list[int]], leader: int
) -> None:
    ensemble = create("acog", n_features=2, eta="auto", eta_grid=[1.0, 10.0], objective=objective, rho=2.0)
    state = ensemble.to_state()
    state["member_counts"] = np.array(counts, dtype=np.int64)
    ensemble.load_state(state)
    assert ensemble.leader() == leader
    assert ensemble.eta == [1.0, 10.0][leader]


@pytest.mark.parametrize("selection", ["leader", "window"])
def test_run_equals_learn_row_by_row_bit_for_bit_state_included(stream: tuple, selection: str) -> None:
    X, y = stream
    batch, one = auto(selection=selection, window=70), auto(selection=selection, window=70)
    scores = []
    for lo, hi in ((0, 130), (130, 400)):  # two calls to run: the window ring carries over
        scores.append(batch.run(X[lo:hi], y[lo:hi]).scores)
    singles = np.array([one.learn(X[i], y[i]).score for i in range(X.shape[0])])
    assert np.array_equal(np.concatenate(scores), singles)
    assert_same_state(batch.to_state(), one.to_state())
    assert batch.member_objectives() == one.member_objectives()


@pytest.mark.parametrize("selection", ["leader", "window"])
def test_state_round_trip_is_exact_with_auto_and_the_intercept(stream: tuple, selection: str) -> None:
    X, y = stream
    original = auto(selection=selection, window=50)
    original.run(X[:170], y[:170])
    state = original.to_state()
    clone = auto(selection=selection, window=50)
    clone.load_state(state)
    assert clone.leader() == original.leader()
    assert np.array_equal(clone.weights(), original.weights())
    assert original.weights().shape == (D + 1,)  # the intercept weight is part of the state
    later = [(original.learn(X[i], y[i]), clone.learn(X[i], y[i])) for i in range(170, 400)]
    assert all(a == b for a, b in later)
    assert_same_state(original.to_state(), clone.to_state())
    state["members"]["0"]["w"][:] = 7.0  # to_state hands out copies
    assert not np.array_equal(original.members[0].weights(), state["members"]["0"]["w"])


def test_a_state_from_another_grid_is_refused_and_changes_nothing(stream: tuple) -> None:
    X, y = stream
    learner = auto()
    learner.run(X[:50], y[:50])
    before = learner.to_state()
    other = create(
        "acog", n_features=D, eta="auto", eta_grid=[0.5, 5.0, 50.0], rho="laplace", fit_intercept=True
    )
    with pytest.raises(ValueError, match="grid"):
        learner.load_state(other.to_state())
    assert_same_state(learner.to_state(), before)


def test_memory_budget_counts_k_copies_of_sigma_for_full_acog() -> None:
    d = 100  # 101 with the intercept: one Sigma is 101^2 * 8 = 81,608 bytes
    one = (d + 1) ** 2 * 8
    budget = 3 * one  # room for three copies, not for the five of the default grid
    assert len(DEFAULT_GRID) == 5
    create("acog", n_features=d, eta=1.0, fit_intercept=True, memory_budget=budget)  # one copy fits
    with pytest.raises(InvalidParameter, match=r"5 copies"):
        create("acog", n_features=d, eta="auto", fit_intercept=True, memory_budget=budget)
    create(
        "acog",
        n_features=d,
        eta="auto",
        eta_grid=[1.0, 10.0, 100.0],
        fit_intercept=True,
        memory_budget=budget,
    )
    with pytest.raises(InvalidParameter, match=r"4 copies"):  # the intercept's row and column count too
        create(
            "acog",
            n_features=d,
            eta="auto",
            eta_grid=[1, 2, 3, 4],
            fit_intercept=True,
            memory_budget=4 * d * d * 8,
        )
    # the service then picks the O(d) learner rather than refusing the model
    config = ModelConfig(n_features=d, loss="II")
    assert config.resolved_algorithm(memory_budget=budget) == "ssacog"
    assert config.resolved_algorithm(memory_budget=5 * one) == "acog"
    assert ModelConfig(n_features=d, eta=1.0, loss="II").resolved_algorithm(memory_budget=budget) == "acog"
    # the default, loss "auto", runs members for both losses: ten copies
    assert ModelConfig(n_features=d).members == 10
    assert ModelConfig(n_features=d).resolved_algorithm(memory_budget=5 * one) == "ssacog"
    assert ModelConfig(n_features=d).resolved_algorithm(memory_budget=10 * one) == "acog"
    with pytest.raises(InvalidParameter, match=r"10 copies"):
        create("acog", n_features=d, eta="auto", loss="auto", fit_intercept=True, memory_budget=9 * one)


def test_german_reproduction_is_unchanged_with_the_intercept_off() -> None:
    """One ACOG row of the paper's Table II, to the printed digit, through research.protocols.online with
    ``fit_intercept=False`` said explicitly (the service's default is on)."""
    dataset_path("german", "german.mat")
    german = load("german")
    settings = ev.OnlineProtocol(eta=(100.0,), fit_intercept=False)
    orders = ev.permutations(german, 20, seed=None)  # german.mat's ID_ALL
    [(_, _, best, _)] = list(ev.evaluate(german, [ev.Variant("acog", "II")], ["sum"], settings, orders))
    s = best.summary()
    assert best.params["fit_intercept"] is False
    cells = [f"{s[k]['mean']:.3f} ± {s[k]['std']:.3f}" for k in ("sum_percent", "sensitivity_percent",
                                                                    "specificity_percent")]  # fmt: skip
    assert cells == ["62.511 ± 1.190", "63.000 ± 2.052", "62.021 ± 1.408"]


def assert_same_state(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            assert_same_state(a[key], b[key])
        elif isinstance(a[key], np.ndarray):
            assert a[key].dtype == np.asarray(b[key]).dtype
            assert np.array_equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


def test_loss_auto_runs_both_losses_and_follows_the_best() -> None:
    """``loss="auto"``: members for loss II then loss I over the grid; the leader is the best
    member of all ten, and run() equals learn() bit for bit, state included."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] + 0.2 * rng.normal(size=600) > 0.5, 1, -1)
    spec: dict[str, Any] = {
        "n_features": 5,
        "eta": "auto",
        "rho": 9.0,
        "objective": "cost",
        "fit_intercept": True,
    }
    a, b = create("acog", loss="auto", **spec), create("acog", loss="auto", **spec)
    assert [m["loss"] for m in a.member_objectives()] == ["II"] * 5 + ["I"] * 5
    ra = a.run(X, y)
    rb = np.array([b.learn(x, int(label)).score for x, label in zip(X, y, strict=True)])
    assert np.array_equal(ra.scores, rb)
    costs = [m["objective"] for m in a.member_objectives()]
    assert costs[a.leader()] == min(costs)
    assert (a.loss, a.eta) == a.configs[a.leader()]
    clone = create(
        "acog", n_features=5, eta="auto", loss="auto", rho=9.0, objective="cost", fit_intercept=True
    )
    clone.load_state(a.to_state())
    assert np.array_equal(clone.run(X[:50], y[:50]).scores, a.run(X[:50], y[:50]).scores)
    fixed = create("acog", loss="II", **spec)
    with pytest.raises(InvalidInput, match="losses"):
        fixed.load_state(clone.to_state())
