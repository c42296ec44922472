"""The SDROGD paper's protocol (Xue & Ren 2020, §5.2; docs/learners.md §8 "Reproduction").

For each of ``repeats`` (5) repeats:

1. split the rows at random, 80 % training and 20 % test (scikit-learn's ``train_test_split``,
   seeded ``seed + repeat``); the training rows keep the shuffled order the split gives them;
2. choose the hyper-parameters by 3-fold cross-validation on the training rows (``KFold``, shuffled,
   same seed): for every setting of the grid, one pass (batch 60, step 1/t, the last partial batch
   flushed) over two folds, accuracy on the third; the best mean accuracy wins (ties: the earlier
   setting of the grid);
3. train once more, with the chosen setting, on all the training rows (one pass, flushed) and
   report the test **accuracy** (``sign(w.x)`` with ``sign(0) = +1``) and the **AUC** of ``w.x``.

Features are standardised (zero mean, unit variance, over the whole set, as the paper does) except
where ``standardize`` is off (a9a); an intercept (a constant 1) is appended unless
``fit_intercept`` is off. The grids are the paper's: SDROGD ``lda_weight`` (the paper's eta) in
{0, 0.1, ..., 1}, ``lam`` in {0, 2^-3, ..., 2^3}, ``sketch_fraction`` in {0.01, 0.1, 0.2, ..., 0.5};
Pegasos ``lam`` in {2^-3, ..., 2^3} with step 1/(lam t). The SDROGD grid runs through
:func:`research.protocols.sdrogd_grid.grid_pass` (one sketch per ``sketch_fraction`` for all
``(lda_weight, lam)``); the final model is the library learner itself.

scikit-learn (the ``[bench]`` extra) provides the splits, the scaler and the AUC; it is imported
when the protocol runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from service.datasets import Dataset
from service.learners import create
from service.learners.sdrogd import sketch_size

from .sdrogd_grid import grid_pass

LDA_WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
SDROGD_LAMS = (0.0, *(2.0**k for k in range(-3, 4)))
SKETCH_FRACTIONS = (0.01, 0.1, 0.2, 0.3, 0.4, 0.5)
PEGASOS_LAMS = tuple(2.0**k for k in range(-3, 4))
ALGORITHMS = ("sdrogd", "pegasos")


@dataclass(frozen=True)
class Grid:
    """The hyper-parameter values cross-validation chooses from."""

    lda_weight: tuple[float, ...] = LDA_WEIGHTS
    lam: tuple[float, ...] = SDROGD_LAMS
    sketch_fraction: tuple[float, ...] = SKETCH_FRACTIONS
    pegasos_lam: tuple[float, ...] = PEGASOS_LAMS

    def size(self, algorithm: str) -> int:
        if algorithm == "pegasos":
            return len(self.pegasos_lam)
        return len(self.lda_weight) * len(self.lam) * len(self.sketch_fraction)


PAPER_GRID = Grid()
REDUCED_GRID = Grid(lda_weight=(0.0, 0.3, 0.6, 0.9, 1.0), lam=(0.0, 0.125, 1.0), sketch_fraction=(0.1, 0.3))
"""A cheap grid for tests and quick looks (``--grid reduced``); the reports use :data:`PAPER_GRID`."""
GRIDS = {"paper": PAPER_GRID, "reduced": REDUCED_GRID}


@dataclass(frozen=True)
class SDROGDProtocol:
    """What the protocol needs besides the data set."""

    algorithms: tuple[str, ...] = ALGORITHMS
    repeats: int = 5
    seed: int = 0
    folds: int = 3
    test_fraction: float = 0.2
    batch_size: int = 60
    fit_intercept: bool = True
    standardize: bool = True
    grid: Grid = PAPER_GRID
    eq17: str = "expanded"
    sketch_rows: str = "all"


@dataclass
class RepeatResult:
    """One repeat of one algorithm."""

    params: dict[str, Any]
    accuracy: float  # percent
    auc: float
    cv_accuracy: float  # percent, mean over the folds at the chosen setting
    all_negative: float  # percent of the test rows labelled -1
    train_seconds: float
    refused_steps: int


@dataclass
class Result:
    """Every repeat of one algorithm on one data set."""

    algorithm: str
    repeats: list[RepeatResult] = field(default_factory=list)

    def stat(self, key: str) -> tuple[float, float]:
        """Mean and sample standard deviation (ddof = 1; 0 for a single repeat) over the repeats."""
        values = np.array([getattr(r, key) for r in self.repeats], dtype=np.float64)
        std = float(values.std(ddof=1)) if values.size > 1 else 0.0
        return float(values.mean()), std

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"algorithm": self.algorithm}
        for key in ("accuracy", "auc", "cv_accuracy", "all_negative", "train_seconds"):
            mean, std = self.stat(key)
            out[key] = {"mean": mean, "std": std}
        out["repeats"] = [vars(r) for r in self.repeats]
        return out


def sklearn() -> Any:
    """The scikit-learn modules the protocol uses, or a one-line ``SystemExit`` when it is absent."""
    try:
        from sklearn import metrics, model_selection, preprocessing
    except ImportError:  # pragma: no cover - depends on the environment
        raise SystemExit(
            "the sdrogd protocol needs scikit-learn: pip install 'acog-service[bench]'"
        ) from None
    return metrics, model_selection, preprocessing


def prepared(data: Dataset, settings: SDROGDProtocol) -> tuple[sp.csr_matrix, np.ndarray]:
    """``X`` standardised over the whole set (when asked), as canonical CSR, and ``y``."""
    _, _, preprocessing = sklearn()
    X = data.X
    if settings.standardize:
        dense = preprocessing.StandardScaler().fit_transform(X.toarray())
        X = sp.csr_matrix(dense)
    X = sp.csr_matrix(X, dtype=np.float64)
    X.eliminate_zeros()
    X.sort_indices()
    return X, np.asarray(data.y, dtype=np.int64)


def with_intercept(X: sp.csr_matrix, settings: SDROGDProtocol) -> sp.csr_matrix:
    if not settings.fit_intercept:
        return X
    out = sp.hstack([X, np.ones((X.shape[0], 1))], format="csr")
    out.sort_indices()
    return out


def accuracy(scores: np.ndarray, y: np.ndarray) -> float:
    """Percent of rows where ``sign(score)`` (``sign(0) = +1``) is the label."""
    return float(100.0 * np.mean(np.where(scores >= 0.0, 1, -1) == y))


def sdrogd_settings(grid: Grid) -> list[dict[str, float]]:
    """The SDROGD grid in its order of preference for ties: sketch_fraction, lda_weight, lam."""
    return [
        {"sketch_fraction": f, "lda_weight": e, "lam": lam}
        for f in grid.sketch_fraction
        for e in grid.lda_weight
        for lam in grid.lam
    ]


def cv_accuracies(
    algorithm: str, X: sp.csr_matrix, y: np.ndarray, folds: list[tuple[np.ndarray, np.ndarray]],
    settings: SDROGDProtocol,
) -> tuple[list[dict[str, float]], np.ndarray]:  # fmt: skip
    """Every grid setting and its mean validation accuracy (percent) over the folds."""
    Xa = with_intercept(X, settings)
    grid = settings.grid
    if algorithm == "pegasos":
        candidates = [{"lam": lam} for lam in grid.pegasos_lam]
    else:
        candidates = sdrogd_settings(grid)
    scores = np.zeros((len(folds), len(candidates)))
    for f, (train, valid) in enumerate(folds):
        Xt, yt, Xv, yv = Xa[train], y[train], Xa[valid], y[valid]
        if algorithm == "pegasos":
            for c, params in enumerate(candidates):
                learner = final_learner("pegasos", X.shape[1], params, settings)
                learner.run(X[train], yt)
                learner.flush()
                scores[f, c] = accuracy(Xv @ learner.weights(), yv)
            continue
        etas = np.array([e for e in grid.lda_weight for _ in grid.lam])
        lams = np.array([lam for _ in grid.lda_weight for lam in grid.lam])
        per_fraction = len(etas)
        for i, fraction in enumerate(grid.sketch_fraction):
            W, _, _ = grid_pass(
                Xt, yt, etas, lams, sketch_size(Xa.shape[1], fraction), batch_size=settings.batch_size,
                printed=settings.eq17 == "printed", upper=settings.sketch_rows == "upper",
            )  # fmt: skip
            predictions = np.asarray(Xv @ W.T)
            for j in range(per_fraction):
                scores[f, i * per_fraction + j] = accuracy(predictions[:, j], yv)
    return candidates, scores.mean(axis=0)


def final_learner(algorithm: str, n_features: int, params: dict[str, float], settings: SDROGDProtocol) -> Any:
    extra: dict[str, Any] = {"batch_size": settings.batch_size, "fit_intercept": settings.fit_intercept}
    if algorithm == "sdrogd":
        extra.update(eq17=settings.eq17, sketch_rows=settings.sketch_rows, memory_budget=2**40)
    return create(algorithm, n_features, **params, **extra)


def run_repeat(
    algorithm: str, X: sp.csr_matrix, y: np.ndarray, repeat: int, settings: SDROGDProtocol
) -> RepeatResult:
    """Split, cross-validate, train on the 80 %, test on the 20 %."""
    metrics, model_selection, _ = sklearn()
    seed = settings.seed + repeat
    train, test = model_selection.train_test_split(
        np.arange(X.shape[0]), test_size=settings.test_fraction, random_state=seed
    )
    kfold = model_selection.KFold(n_splits=settings.folds, shuffle=True, random_state=seed)
    folds = [(train[a], train[b]) for a, b in kfold.split(train)]
    candidates, cv = cv_accuracies(algorithm, X, y, folds, settings)
    best = int(np.argmax(cv))  # the first of equal means
    params = candidates[best]
    learner = final_learner(algorithm, X.shape[1], params, settings)
    start = time.perf_counter()
    learner.run(X[train], y[train])
    learner.flush()
    seconds = time.perf_counter() - start
    scores = np.asarray(with_intercept(X[test], settings) @ learner.weights()).ravel()
    y_test = y[test]
    auc = float(metrics.roc_auc_score(y_test, scores)) if np.unique(y_test).size == 2 else float("nan")
    return RepeatResult(
        params=params,
        accuracy=accuracy(scores, y_test),
        auc=auc,
        cv_accuracy=float(cv[best]),
        all_negative=float(100.0 * np.mean(y_test == -1)),
        train_seconds=seconds,
        refused_steps=int(learner.describe()["batch"]["refused_steps"]),
    )


def evaluate(
    data: Dataset, settings: SDROGDProtocol, progress: Callable[[int], object] | None = None
) -> list[Result]:
    """The whole protocol for every algorithm of ``settings``.

    BLAS runs one thread: the sketch's SVDs and products are small, and on a shared machine a second
    OpenBLAS thread mostly spins (measured: a 76 x 124 SVD 30 times slower with two threads under load).
    """
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency

    X, y = prepared(data, settings)
    results = []
    with threadpool_limits(limits=1, user_api="blas"):
        for algorithm in settings.algorithms:
            result = Result(algorithm)
            for repeat in range(settings.repeats):
                result.repeats.append(run_repeat(algorithm, X, y, repeat, settings))
                if progress is not None:
                    progress(1)
            results.append(result)
    return results


def parse_algorithms(spec: str) -> tuple[str, ...]:
    """``"paper"`` (SDROGD and Pegasos) or a comma list of them."""
    if spec == "paper":
        return ALGORITHMS
    names = tuple(s.strip().lower() for s in spec.split(",") if s.strip())
    unknown = [n for n in names if n not in ALGORITHMS]
    if unknown or not names:
        raise ValueError(f"the sdrogd protocol runs {', '.join(ALGORITHMS)}; got {spec!r}")
    return names


def format_table(results: Sequence[Result]) -> str:
    """One line per algorithm: accuracy and AUC (mean ± std over repeats) and the chosen settings."""
    lines = [f"{'algorithm':<10} {'accuracy %':>16} {'AUC':>16} {'train s':>8}  chosen (per repeat)"]
    for r in results:
        acc, acc_sd = r.stat("accuracy")
        auc, auc_sd = r.stat("auc")
        sec, _ = r.stat("train_seconds")
        chosen = "; ".join(",".join(f"{k}={v:g}" for k, v in rep.params.items()) for rep in r.repeats)
        cells = f"{acc:>8.2f} ± {acc_sd:<5.2f} {auc:>8.4f} ± {auc_sd:<6.4f} {sec:>8.3f}"
        lines.append(f"{r.algorithm:<10} {cells}  {chosen}")
    return "\n".join(lines)


__all__ = ["GRIDS", "PAPER_GRID", "REDUCED_GRID", "Grid", "Result", "SDROGDProtocol", "evaluate"]
