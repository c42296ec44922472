"""``SklearnACOGClassifier``: the library's learners as a scikit-learn estimator.

>>> from sklearn.datasets import load_breast_cancer
>>> from sklearn.model_selection import train_test_split
>>> from service.adapters.sklearn_estimator import SklearnACOGClassifier
>>> X, y = load_breast_cancer(return_X_y=True)
>>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
>>> model = SklearnACOGClassifier(class_weight="balanced").fit(X_train, y_train)
>>> round(model.score(X_test, y_test), 3)  # accuracy on rows it never saw
0.937

An online learner: ``partial_fit`` runs one online round per row, in order (predict, then
learn: the paper's protocol); ``fit`` starts afresh and makes ``max_iter`` such passes over
``X``. Each row is scaled to unit L2 norm (``normalize="l2"``) by the kernel the service uses,
so a model fed the same rows here and through the service holds the same bits.
``decision_function`` is the margin ``mu . x``; ``predict`` answers ``classes_[1]`` (the
positive class, the anomaly) when it is ``>= 0``, else ``classes_[0]``. Binary only.

**Class weights are the cost-sensitive objective.** With weights ``w_p`` (``classes_[1]``)
and ``w_n`` (``classes_[0]``) a mistake costs ``w_y``, so the weighted error is
``w_p M_p + w_n M_n = (w_p + w_n) (c_p M_p + c_n M_n)`` with ``c_p = w_p / (w_p + w_n)``:
minimising it is the paper's *cost* objective with that ``c_p``, and its bias
``rho = c_p / c_n = w_p / w_n``. So:

- ``class_weight=None`` (every mistake costs 1): ``objective="cost"``, ``c_p = 1/2``, ``rho = 1``;
- ``class_weight={neg: w_n, pos: w_p}`` (a missing class weighs 1): ``objective="cost"``,
  ``c_p = w_p / (w_p + w_n)``, ``rho = w_p / w_n``;
- ``class_weight="balanced"``: scikit-learn's weights ``n / (2 n_y)`` make the weighted
  error ``n (M_p / 2 T_p + M_n / 2 T_n) = n (1 - (sens + spec) / 2)``: minimising it is
  maximising the paper's *sum* ``alpha_p sens + alpha_n spec`` with ``alpha_p = 1/2``, whose
  bias is the online Laplace estimate of ``T_n / T_p`` (``rho="auto"``): the weights are
  learned from the stream's own class counts, not fixed from ``y`` in advance.

``eta="auto"`` (the default) selects, online, the learning rate with the best value of that
same objective so far.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target, unique_labels
from sklearn.utils.validation import check_is_fitted, validate_data

from ..learners import ALGORITHMS, OnlineLearner
from ..model_config import ModelConfig
from ..normalization import unit_l2_rows

CONFIG_FIELDS = ("algorithm", "loss", "eta", "eta_grid", "gamma", "sketch_size", "C", "r", "fit_intercept")


def objective_of(class_weight: Any, classes: np.ndarray) -> dict[str, Any]:
    """The cost-sensitive objective that ``class_weight`` asks for (see the module docstring)."""
    if class_weight is None:
        return {"objective": "cost", "c_p": 0.5}
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f'class_weight must be None, "balanced" or a dict, got {class_weight!r}')
        return {"objective": "sum", "alpha_p": 0.5}
    if not isinstance(class_weight, Mapping):
        raise ValueError(f'class_weight must be None, "balanced" or a dict, got {class_weight!r}')
    w_n, w_p = (float(class_weight.get(c, 1.0)) for c in classes)
    if not (np.isfinite(w_n) and np.isfinite(w_p) and w_n > 0 and w_p > 0):
        raise ValueError(f"class_weight: both weights must be finite and > 0, got {w_n} and {w_p}")
    return {"objective": "cost", "c_p": w_p / (w_p + w_n)}


class SklearnACOGClassifier(ClassifierMixin, BaseEstimator):
    """A cost-sensitive online linear classifier (ACOG and the paper's baselines).

    Parameters
    ----------
    algorithm : str or None
        ``acog``, ``acog-diag``, ``ssacog``, ``arow``, ``pa1``, ... (None: acog, or ssacog
        when its covariances exceed the memory budget).
    loss, eta, eta_grid, gamma, sketch_size, C, r, fit_intercept
        As in the service's model configuration.
    class_weight : None, "balanced" or dict
        The cost of a mistake on each class, mapped to the cost-sensitive objective.
    normalize : "l2" or "none"
        Scale each row to unit L2 norm before scoring and learning.
    max_iter : int
        Passes over ``X`` made by ``fit``.
    """

    def __init__(
        self,
        algorithm: str | None = None,
        loss: str = "auto",
        eta: float | str = "auto",
        eta_grid: list[float] | None = None,
        gamma: float = 1.0,
        sketch_size: int = 5,
        C: float = 1.0,
        r: float = 1.0,
        fit_intercept: bool = True,
        class_weight: Any = None,
        normalize: str = "l2",
        max_iter: int = 1,
    ) -> None:
        self.algorithm = algorithm
        self.loss = loss
        self.eta = eta
        self.eta_grid = eta_grid
        self.gamma = gamma
        self.sketch_size = sketch_size
        self.C = C
        self.r = r
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.normalize = normalize
        self.max_iter = max_iter

    # --- fitting --------------------------------------------------------------------------

    def fit(self, X: Any, y: Any) -> SklearnACOGClassifier:
        """A fresh model, then ``max_iter`` online passes over the rows of ``X`` in order."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, reset=True)
        self._start(unique_labels(y), y)
        if not isinstance(self.max_iter, int) or self.max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, got {self.max_iter!r}")
        for _ in range(self.max_iter):
            self._learn(X, y)
        self.n_iter_ = self.max_iter
        return self

    def partial_fit(self, X: Any, y: Any, classes: Any = None) -> SklearnACOGClassifier:
        """One online pass over the rows of ``X`` in order. The first call needs ``classes``
        (both of them), as for every scikit-learn ``partial_fit``."""
        first = not hasattr(self, "learner_")
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, reset=first)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            self._start(unique_labels(classes), y)
        elif classes is not None and not np.array_equal(unique_labels(classes), self.classes_):
            raise ValueError(
                f"classes {list(classes)} differ from those of the first call {list(self.classes_)}"
            )
        self._learn(X, y)
        return self

    def _start(self, classes: np.ndarray, y: np.ndarray) -> None:
        check_classification_targets(y)
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind != "binary":
            raise ValueError(f"Only binary classification is supported. The type of the target is {kind}.")
        if len(classes) != 2:
            count = f"{len(classes)} class" + ("es" if len(classes) != 1 else "")
            raise ValueError(f"SklearnACOGClassifier is binary: y must hold 2 classes, got {count}")
        self.classes_ = classes
        self.config_ = self._config(classes)
        self.learner_: OnlineLearner = self.config_.build_learner()

    def _config(self, classes: np.ndarray) -> ModelConfig:
        """The service's model configuration of these parameters. As in the service, a parameter
        the algorithm does not take is refused, not ignored: so are class weights for the
        algorithms that are not cost-sensitive (perceptron, pa1, romma, arow)."""
        fields = ModelConfig.model_fields
        defaults = {n: fields[n].get_default(call_default_factory=True) for n in CONFIG_FIELDS}
        given = {n: v for n in CONFIG_FIELDS if (v := getattr(self, n)) is not None and v != defaults[n]}
        config = ModelConfig.model_validate(
            {**given, **objective_of(self.class_weight, classes), "n_features": self.n_features_in_,
             "normalize": self.normalize}
        )  # fmt: skip
        refused = config.inapplicable()
        if refused:
            raise ValueError(f"{refused[0]} is not a parameter of {config.resolved_algorithm()}")
        if self.class_weight is not None and not ALGORITHMS[config.resolved_algorithm()].cost_sensitive:
            raise ValueError(f"class_weight: {config.resolved_algorithm()} is not cost-sensitive")
        return config

    def _learn(self, X: Any, y: np.ndarray) -> None:
        known = np.isin(y, self.classes_)
        if not known.all():
            unknown = list(np.unique(y[~known]))
            raise ValueError(f"y holds labels outside classes_ {list(self.classes_)}: {unknown}")
        labels = np.where(y == self.classes_[1], 1, -1)
        self.learner_.run(self._rows(X), labels)

    # --- predicting -----------------------------------------------------------------------

    def decision_function(self, X: Any) -> np.ndarray:
        """``mu . x`` for each row: ``>= 0`` means ``classes_[1]``."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        rows = self._rows(X)
        return np.array(
            [
                self.learner_.score((rows.indices[a:b], rows.data[a:b]))
                for a, b in zip(rows.indptr[:-1], rows.indptr[1:], strict=True)
            ],
            dtype=np.float64,
        )

    def predict(self, X: Any) -> np.ndarray:
        positive = self.decision_function(X) >= 0.0
        out: np.ndarray = self.classes_[positive.astype(int)]
        return out

    def _rows(self, X: Any) -> sp.csr_matrix:
        """The rows as the service reads them: non-zeros in index order, unit L2 norm."""
        rows = sp.csr_matrix(X, dtype=np.float64, copy=True)
        rows.sum_duplicates()
        rows.eliminate_zeros()
        rows.sort_indices()
        rows.indptr = rows.indptr.astype(np.int64)
        rows.indices = rows.indices.astype(np.int64)
        if self.normalize == "l2":
            rows.data = unit_l2_rows(rows.indptr, rows.data)
        return rows

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags
