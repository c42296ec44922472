"""The river adapter: river's progressive validation equals the learner library's own, bit for bit.

On river's Phishing set (it ships with river: no download), ``progressive_val_score`` drives
``ACOGClassifier`` one dict at a time. The same stream, turned into vectors here by an
independent transcription of the registry's rule (a name's index is the order in which it
was first learned, the names of one example sorted; values L2-normalised over the names
present), goes through the library learner's native ``run``: the predictions, the metric,
the final weights and the scores must all be equal.
"""

from __future__ import annotations

import doctest
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from river import datasets, evaluate, metrics
from river.checks import yield_checks

from service.adapters import river_classifier
from service.adapters.river_classifier import ACOGClassifier, plus_minus_one
from service.model_config import ModelConfig
from service.normalization import SHORT_ROW, _order, unit_l2

SETTINGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "acog-II, eta 1": {"algorithm": "acog", "loss": "II", "eta": 1.0},
    "arow, cost": {"algorithm": "arow", "objective": "cost", "c_p": 0.8},
}


def library_stream(
    stream: list[tuple[dict[str, Any], Any]], dimension: int, l2: bool = True
) -> tuple[sp.csr_matrix, np.ndarray]:
    """The stream as the library reads it: registry indices, unit rows (raw ones where the model
    normalises for its members, ``l2=False``), labels in {-1, +1}."""
    index: dict[str, int] = {}
    indptr, indices, values = [0], [], []
    for x, _ in stream:
        names = sorted(x)
        for name in names:
            index.setdefault(name, len(index))
        raw = np.array([float(x[n]) for n in names])
        unit = unit_l2(raw) if l2 else raw
        kept = [(index[n], v) for n, v in zip(names, unit, strict=True) if v != 0.0]
        kept.sort()
        indices += [i for i, _ in kept]
        values += [v for _, v in kept]
        indptr.append(len(indices))
    X = sp.csr_matrix((np.array(values), np.array(indices), np.array(indptr)), shape=(len(stream), dimension))
    return X, np.array([plus_minus_one(y) for _, y in stream])


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_progressive_validation_equals_the_library_bit_for_bit(setting: str) -> None:
    stream = list(datasets.Phishing())
    params = SETTINGS[setting]
    model = ACOGClassifier(max_features=9, **params)
    metric = metrics.BalancedAccuracy()
    steps = list(evaluate.iter_progressive_val_score(stream, model, metric, step=1, yield_predictions=True))
    river_predictions = [step["Prediction"] for step in steps]

    config = ModelConfig.model_validate({**params, "max_features": 9})
    X, y = library_stream(stream, 9, l2=config.request_normalize == "l2")
    learner = config.build_learner()
    result = learner.run(X, y)
    assert river_predictions == [bool(p == 1) for p in result.predictions]
    library_metric = metrics.BalancedAccuracy()
    for (_, truth), prediction in zip(stream, result.predictions, strict=True):
        library_metric.update(truth, bool(prediction == 1))
    assert metric.get() == library_metric.get()
    assert 0.8 < metric.get() < 1.0

    assert np.array_equal(model.learner.weights(), learner.weights())
    probe = [x for x, _ in stream[:50]]
    assert [model.score_one(x) for x in probe] == [
        learner.score((X.indices[X.indptr[i] : X.indptr[i + 1]], X.data[X.indptr[i] : X.indptr[i + 1]]))
        for i in range(50)
    ]


def test_a_name_never_learned_weighs_nothing_and_labels_are_read_like_river() -> None:
    model = ACOGClassifier(max_features=3, algorithm="pa1")
    model.learn_one({"a": 1.0, "b": 2.0}, True)
    assert model.registry == ["a", "b"]
    assert model.score_one({"a": 1.0, "b": 2.0}) == model.score_one({"a": 1.0, "b": 2.0, "c": 0.0})
    assert model.predict_one({"a": 1.0, "b": 2.0}) is True
    assert [plus_minus_one(v) for v in (True, False, 1, 0, -1)] == [1, -1, 1, -1, -1]
    with pytest.raises(ValueError, match="binary label"):
        model.learn_one({"a": 1.0}, "yes")
    with pytest.raises(ValueError, match="max_features"):
        ACOGClassifier(max_features=1).learn_one({"a": 1.0, "b": 2.0}, True)


def test_rivers_own_estimator_checks() -> None:
    for params in ACOGClassifier._unit_test_params():
        model = ACOGClassifier(**params)
        for check in yield_checks(model):
            check(model.clone())


def test_the_docstring_example_prints_what_it_shows() -> None:
    assert doctest.testmod(river_classifier, raise_on_error=True).attempted >= 1


NAMES = [f"f{k}" for k in range(12)] + ["a", "B", "z9", "é"]
VALUES = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 5e-324, 1e300]),
    st.integers(-5, 5),
)


@pytest.mark.parametrize(
    "params",
    [{"algorithm": "acog", "loss": "II", "eta": 1.0}, {}, {"algorithm": "pa1", "normalize": "none"}],
    ids=["acog-II (l2, intercept)", "defaults (ensemble)", "pa1 (raw)"],
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.dictionaries(st.sampled_from(NAMES), VALUES, min_size=1, max_size=10), min_size=1, max_size=6
    ),
    probe=st.dictionaries(st.sampled_from(NAMES), VALUES, min_size=1, max_size=12),
)
def test_the_short_path_reads_a_row_as_the_parser_does(
    params: dict[str, Any], rows: list[dict[str, Any]], probe: dict[str, Any]
) -> None:
    """A row whose names are all registered, in any order, becomes the learner's input through one
    compiled call; it is the parser's vector bit for bit (values L2-normalised in the sorted order
    of the names, entries in index order, zeros dropped, the intercept appended)."""
    model = ACOGClassifier(max_features=len(NAMES), **params)
    for row in rows:
        model.learn_one(row, True)
    for x in (probe, dict(reversed(list(probe.items()))), *rows):
        fast = model._gathered(x)
        model._last = None
        registered = all(model.space.registry.index_of(n) is not None for n in x)
        assert (fast is not None) == registered
        if fast is None:
            continue
        slow = model.space.parse(dict(x), "x")[1]
        if model._score_fast != model.learner.score_unchecked:  # a single learner: its kernel form
            slow = model.learner.kernel_vector(slow)
        assert fast[0].dtype == np.int64 and np.array_equal(fast[0], slow[0])
        assert fast[1].tobytes() == slow[1].tobytes()
        assert model.score_one(x) == model.learner.score_unchecked(model.space.parse(dict(x), "x")[1])
        if model._weights is not None:  # a linear learner: the row read and scored in one call
            model._last = None
            assert model._gathered(x, model._weights()) is not None
            assert model._margin[0] == model.score_one(x)
            model._last = None
            assert model.predict_one(x) is (model.score_one(x) >= 0.0)


@pytest.mark.parametrize("width", [SHORT_ROW - 1, SHORT_ROW, SHORT_ROW + 1, 3 * SHORT_ROW])
def test_a_long_row_takes_the_short_path_as_a_short_one_does(width: int) -> None:
    """Rows longer than ``SHORT_ROW`` are put in order by ``np.argsort`` instead of insertion sort:
    the same vector and the same margin as the parser's, and the same weights after learning."""
    rng = np.random.default_rng(width)
    names = [f"n{k:03d}" for k in rng.permutation(width)]
    rows = [{n: float(v) for n, v in zip(names, rng.normal(size=width), strict=True)} for _ in range(5)]
    model = ACOGClassifier(max_features=width, algorithm="acog", loss="II", eta=1.0)
    model.learn_one(rows[0], True)
    for x in rows[1:]:
        fast = model._gathered(x)
        model._last = None
        assert fast is not None
        slow = model.learner.kernel_vector(model.space.parse(dict(x), "x")[1])
        assert np.array_equal(fast[0], slow[0]) and fast[1].tobytes() == slow[1].tobytes()
        assert model.predict_one(x) is (model.learner.score_checked(slow) >= 0.0)
        assert model._margin[0] == model.learner.score_checked(slow)
        model.learn_one(x, x[names[0]] > 0)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.integers(0, 10**6), unique=True, max_size=3 * SHORT_ROW),
    by_rank=st.booleans(),
)
def test_the_row_order_is_argsorts(keys: list[int], by_rank: bool) -> None:
    """``_order`` sorts positions by distinct keys (a name's index, or its rank among the names)
    into the caller's buffer: ``np.argsort``'s order, for short rows and long ones."""
    index = np.arange(len(keys), dtype=np.int64)[::-1].copy() if by_rank else np.array(keys, np.int64)
    rank = np.zeros(len(keys), np.int64)
    if by_rank:
        rank[index] = keys
    out = np.full(len(keys) + 1, -7, np.int64)
    _order(index, rank, by_rank, out)
    expected = np.argsort(rank[index] if by_rank else index)
    assert out[: len(keys)].tolist() == expected.tolist()
    assert out[len(keys)] == -7


def test_a_refused_row_is_refused_by_the_parser_and_changes_nothing() -> None:
    model = ACOGClassifier(max_features=4, algorithm="acog", loss="II", eta=1.0)
    model.learn_one({"a": 1.0, "b": 2.0}, True)
    before = model.learner.to_state()
    for bad in ({"a": float("nan"), "b": 1.0}, {"a": "x"}, {"a": None}, {"a": float("inf")}):
        with pytest.raises(ValueError, match="x"):
            model.learn_one(bad, True)
    assert all(
        np.array_equal(before[k], v) for k, v in model.learner.to_state().items() if isinstance(v, np.ndarray)
    )
    assert model.registry == ["a", "b"]
    # the parse of an equal dict is reused; a changed one is read again
    x = {"b": 2.0, "a": 1.0}
    first = model.score_one(x)
    x["a"] = -3.0
    assert model.score_one(x) != first


@pytest.mark.parametrize(
    "params", [{"algorithm": "acog", "loss": "II", "eta": 1.0}, {}], ids=["acog-II", "defaults"]
)
def test_a_row_read_in_between_does_not_change_the_row_learned(params: dict[str, Any]) -> None:
    """The short path writes every row into the same buffers: a row read between the prediction
    and the label of another (scored, or refused) must not change what the label learns."""
    x, other, refused = {"a": 1.0, "b": -2.0, "c": 0.5}, {"c": 3.0, "a": -1.0}, {"a": 1.0, "b": float("nan")}
    plain, interleaved = (ACOGClassifier(max_features=3, **params) for _ in range(2))
    for model in (plain, interleaved):
        model.learn_one({"a": 0.1, "b": 0.2, "c": 0.3}, False)  # registers the names
    for model in (plain, interleaved):
        model.predict_one(x)
        if model is interleaved:
            with pytest.raises(ValueError, match="x"):
                model.predict_one(refused)
        model.learn_one(x, True)
        model.predict_one(other)
        if model is interleaved:
            model.predict_one(x)
        model.learn_one(other, False)
    for name, array in plain.learner.to_state().items():
        if isinstance(array, np.ndarray):
            assert array.tobytes() == interleaved.learner.to_state()[name].tobytes(), name


def test_memory_usage_is_the_models_own_not_numbas() -> None:
    """river's ``_memory_usage`` walks the object graph; ours stops at numba's compiled kernels and
    typed lists (shared by the process, or holding arrays counted where the learners hold them),
    which would otherwise add the whole JIT engine and its weak proxies to freed LLVM modules."""
    model = ACOGClassifier(max_features=9, algorithm="arow")
    for x, y in datasets.Phishing().take(200):
        model.learn_one(x, y)
    usage = model._raw_memory_usage
    assert model.learner.state_nbytes() < usage < 1_000_000
    assert model._memory_usage.endswith("KiB")
