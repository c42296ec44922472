"""The scikit-learn estimator: every check of ``check_estimator``, class weights as the
cost-sensitive objective, and the same bits as the learner library (and so the service)."""

from __future__ import annotations

import doctest
from typing import Any

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from service.adapters import sklearn_estimator
from service.adapters.sklearn_estimator import SklearnACOGClassifier
from service.datasets import load
from service.model_config import ModelConfig

from ..conftest import dataset_path
from ..support.model_state import served

ESTIMATORS = [
    SklearnACOGClassifier(),  # the service's defaults: acog, eta and loss auto, intercept
    SklearnACOGClassifier(algorithm="acog-diag", eta=1.0, loss="II", class_weight={0: 1, 1: 3}, max_iter=3),
    SklearnACOGClassifier(algorithm="pa1", C=0.5, normalize="none"),
]


def expected_failed_checks(estimator: SklearnACOGClassifier) -> dict[str, str]:
    """The checks an estimator cannot pass, each with its reason (strict: they must fail)."""
    if estimator.algorithm in ("perceptron", "pa1", "romma", "arow"):
        return {
            "check_class_weight_classifiers": f"{estimator.algorithm} is not cost-sensitive: it refuses "
            "class weights (ValueError) rather than ignore them"
        }
    return {}


@parametrize_with_checks(  # type: ignore[untyped-decorator]
    ESTIMATORS, expected_failed_checks=expected_failed_checks, xfail_strict=True
)
def test_scikit_learns_estimator_checks(estimator: SklearnACOGClassifier, check: Any) -> None:
    """Every check passes but those :func:`expected_failed_checks` names."""
    check(estimator)


@pytest.mark.parametrize(
    ("class_weight", "objective", "c_p", "alpha_p", "rho"),
    [
        (None, "cost", 0.5, 0.5, 1.0),
        ({-1: 1.0, 1: 9.0}, "cost", 0.9, 0.5, 9.0),
        ({1: 4.0}, "cost", 0.8, 0.5, 4.0),  # a missing class weighs 1
        ("balanced", "sum", 0.9, 0.5, None),  # alpha_p = 1/2, the Laplace rho
    ],
)
def test_class_weights_are_the_cost_sensitive_objective(
    class_weight: Any, objective: str, c_p: float, alpha_p: float, rho: float | None
) -> None:
    dataset_path("german", "german.mat")
    data = load("german")
    model = SklearnACOGClassifier(class_weight=class_weight, eta=1.0, loss="II").fit(data.X, data.y)
    assert (model.config_.objective, model.config_.c_p, model.config_.alpha_p) == (objective, c_p, alpha_p)
    if rho is not None:
        assert model.learner_.rho == pytest.approx(rho)
    else:  # alpha_p (T_n + 1) / (alpha_n (T_p + 1)) over german's 300 positives and 700 negatives
        assert model.learner_.rho == pytest.approx(701 / 301)


def test_partial_fit_in_chunks_is_fit_and_is_the_learner_library() -> None:
    dataset_path("german", "german.mat")
    data = load("german")
    X, y = data.X.toarray(), data.y.astype(int)
    whole = SklearnACOGClassifier(class_weight="balanced").fit(X, y)  # = the service's defaults
    chunked = SklearnACOGClassifier(class_weight="balanced")
    for start in range(0, len(y), 128):
        chunked.partial_fit(X[start : start + 128], y[start : start + 128], classes=[-1, 1])
    config = {"n_features": 24, "normalize": "l2"}  # the estimator's default normalize
    library = ModelConfig.model_validate(config).build_learner()
    for row, label in zip(X, y, strict=True):
        library.learn(served(config, row), int(label))
    expected = [library.score(served(config, row)) for row in X[:100]]
    assert list(whole.decision_function(X[:100])) == list(chunked.decision_function(X[:100])) == expected
    assert list(whole.decision_function(data.X[:100])) == expected  # sparse input alike
    assert set(whole.predict(X)) == {-1, 1}


def test_weights_for_a_learner_that_is_not_cost_sensitive_are_refused() -> None:
    X, y = np.eye(4), np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="not cost-sensitive"):
        SklearnACOGClassifier(algorithm="arow", class_weight="balanced").fit(X, y)
    with pytest.raises(ValueError, match="eta is not a parameter of arow"):
        SklearnACOGClassifier(algorithm="arow", eta=1.0).fit(X, y)
    with pytest.raises(ValueError, match="classes must be passed"):
        SklearnACOGClassifier().partial_fit(X, y)


def test_the_docstring_example_prints_what_it_shows() -> None:
    assert doctest.testmod(sklearn_estimator, raise_on_error=True).attempted >= 1
