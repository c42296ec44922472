"""The paper's reproduction protocol: replay a data set as a stream, many times.

For each permutation of the rows: scale every example to unit L2 norm, then for each row
predict ``sign(mu . x)`` and learn the label at once (progressive validation). Report the
mean and sample standard deviation (ddof = 1) over permutations of

- **sum** runs (``alpha_p``, rho = ``alpha_p T_n / (alpha_n T_p)`` from the true class
  counts, or the online Laplace estimate): sum %, sensitivity %, specificity %, seconds;
- **cost** runs (``c_p``, rho = ``c_p / c_n``): cost (in units of 100 mistakes, as the
  paper's Table II prints it), sensitivity %, specificity %, seconds.

A hyper-parameter given several values (``eta``, ``C`` or ``r``) is swept and the value
with the best mean is kept, separately for each measure. Rows are named as in the paper:
``ACOG-II``, ``ACOG-Idiag``, ``SSACOG-I``, ``PA-I``, ...
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from service.datasets import Dataset, l2_normalize
from service.learners import ALGORITHMS, create
from service.measures import Measures, Objective, complement

Metric = Literal["sum", "cost"]


@dataclass(frozen=True, slots=True)
class Variant:
    """One row of a results table: an algorithm with a loss."""

    algorithm: str
    loss: str | None = None

    @property
    def label(self) -> str:
        base = {"pa1": "PA-I", "cpapb": "CPAPB", "acog-diag": "ACOG", "perceptron": "Perceptron"}.get(
            self.algorithm, self.algorithm.upper()
        )
        if self.loss is None:
            return base
        suffix = "diag" if self.algorithm == "acog-diag" else ""
        return f"{base}-{self.loss}{suffix}"


PAPER_TABLE = (
    Variant("perceptron"),
    Variant("romma"),
    Variant("pa1"),
    Variant("paum"),
    Variant("cpapb"),
    Variant("arow"),
    Variant("cog", "I"),
    Variant("cog", "II"),
    Variant("acog", "I"),
    Variant("acog", "II"),
    Variant("acog-diag", "I"),
    Variant("acog-diag", "II"),
)
SKETCHES = (Variant("sacog", "I"), Variant("sacog", "II"), Variant("ssacog", "I"), Variant("ssacog", "II"))


def parse_variants(spec: str) -> list[Variant]:
    """``"paper"``, ``"all"``, or a comma list such as ``"acog-II,acog-diag-I,perceptron"``."""
    if spec == "paper":
        return list(PAPER_TABLE)
    if spec == "all":
        return [*PAPER_TABLE, *SKETCHES]
    variants = []
    for item in (s.strip() for s in spec.split(",") if s.strip()):
        name, loss = item.lower(), None
        for suffix in ("-ii", "-i"):
            if name.endswith(suffix) and name[: -len(suffix)] in ALGORITHMS:
                name, loss = name[: -len(suffix)], suffix[1:].upper()
                break
        if name not in ALGORITHMS:
            raise ValueError(f"algorithms: unknown algorithm {item!r} (known: {', '.join(ALGORITHMS)})")
        takes_loss = "loss" in ALGORITHMS[name].param_spec()
        if takes_loss and loss is None:
            variants += [Variant(name, "I"), Variant(name, "II")]
        elif not takes_loss and loss is not None:
            raise ValueError(f"algorithms: {name} has no loss variants, got {item!r}")
        else:
            variants.append(Variant(name, loss))
    return variants


@dataclass(frozen=True, slots=True)
class OnlineProtocol:
    """Hyper-parameters of a run. Tuples are swept; the best mean wins per measure."""

    eta: tuple[float, ...] = (100.0,)
    C: tuple[float, ...] = (10.0,)
    r: tuple[float, ...] = (0.1,)
    gamma: float = 1.0
    sketch_size: int = 5
    alpha_p: float = 0.5
    c_p: float = 0.9
    rho: float | Literal["true", "laplace"] = "true"
    """For sum runs: ``"true"`` (from the class counts), ``"laplace"``, or a number. Cost
    runs use ``c_p / c_n`` unless a number is given."""
    fit_intercept: bool = False
    normalize: bool = True
    oli2ds: Mapping[str, Any] = field(default_factory=dict)
    """OLI2DS's hyper-parameters (its own defaults for those not given); ``C`` is not swept for it."""


@dataclass(slots=True)
class Runs:
    """Per-permutation results of one variant, one measure, one hyper-parameter choice."""

    params: dict[str, Any]
    sums: list[float] = field(default_factory=list)
    sensitivities: list[float] = field(default_factory=list)
    specificities: list[float] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def score(self, metric: Metric) -> float:
        """Higher is better."""
        return float(np.mean(self.sums)) if metric == "sum" else -float(np.mean(self.costs))

    def summary(self) -> dict[str, Any]:
        def stat(values: list[float]) -> dict[str, float]:
            std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
            return {"mean": float(np.mean(values)), "std": std}

        return {
            "params": self.params,
            "sum_percent": stat(self.sums),
            "sensitivity_percent": stat(self.sensitivities),
            "specificity_percent": stat(self.specificities),
            "cost_hundreds": stat(self.costs),
            "seconds": stat(self.seconds),
        }


def permutations(data: Dataset, count: int, seed: int | None) -> np.ndarray:
    """The data set's own permutations (german.mat's ``ID_ALL``) unless a seed is given."""
    if seed is None and data.permutations is not None:
        return data.permutations[:count]
    rng = np.random.default_rng(0 if seed is None else seed)
    return np.stack([rng.permutation(data.n_samples) for _ in range(count)])


def learner_params(
    variant: Variant, metric: Metric, settings: OnlineProtocol, ratio: float
) -> list[dict[str, Any]]:
    """Every hyper-parameter combination to try for ``variant`` (``ratio`` = T_n / T_p)."""
    spec = ALGORITHMS[variant.algorithm].param_spec()
    base: dict[str, Any] = {"fit_intercept": settings.fit_intercept}
    if variant.loss is not None:
        base["loss"] = variant.loss
    if "gamma" in spec:
        base["gamma"] = settings.gamma
    if "sketch_size" in spec:
        base["sketch_size"] = settings.sketch_size
    if "rho" in spec:
        base["rho"] = _rho(metric, settings, ratio)
        base["alpha_p"] = settings.alpha_p
    if variant.algorithm == "oli2ds":
        return [{**base, **settings.oli2ds}]
    for name in ("eta", "C", "r"):
        if name in spec:
            return [{**base, name: value} for value in getattr(settings, name)]
    return [base]


def _rho(metric: Metric, settings: OnlineProtocol, ratio: float) -> float | str:
    if isinstance(settings.rho, float | int):
        return float(settings.rho)
    if metric == "cost":
        return settings.c_p / complement(settings.c_p)
    if settings.rho == "laplace":
        return "laplace"
    return settings.alpha_p * ratio / complement(settings.alpha_p)


def run_once(
    X: sp.csr_matrix, y: np.ndarray, variant: Variant, params: dict[str, Any], objective: Objective
) -> tuple[Measures, float]:
    """One pass over the stream; returns the measures and the wall time of the learning loop."""
    learner = create(variant.algorithm, n_features=X.shape[1], **params)
    start = time.perf_counter()
    result = learner.run(X, y)
    elapsed = time.perf_counter() - start
    return Measures.of(y, result.predictions, objective), elapsed


def evaluate(
    data: Dataset,
    variants: Sequence[Variant],
    metrics: Sequence[Metric],
    settings: OnlineProtocol,
    orders: np.ndarray,
    progress: Callable[[int], Any] | None = None,
) -> Iterator[tuple[Variant, Metric, Runs, list[Runs]]]:
    """For each variant and measure: the best hyper-parameters' runs, and all that were tried."""
    X = l2_normalize(data.X) if settings.normalize else sp.csr_matrix(data.X)
    y = np.asarray(data.y, dtype=np.int64)
    ratio = data.n_negative / max(data.n_positive, 1)
    objective = Objective(settings.alpha_p, settings.c_p)
    for variant in variants:
        for metric in metrics:
            tried = []
            for params in learner_params(variant, metric, settings, ratio):
                run_once(X[:2], y[:2], variant, params, objective)  # load the compiled code untimed
                runs = Runs(params)
                for order in orders:
                    measures, seconds = run_once(X[order], y[order], variant, params, objective)
                    runs.sums.append(100.0 * measures.weighted_sum)
                    runs.sensitivities.append(100.0 * measures.sensitivity)
                    runs.specificities.append(100.0 * measures.specificity)
                    runs.costs.append(measures.weighted_cost / 100.0)
                    runs.seconds.append(seconds)
                    if progress is not None:
                        progress(1)
                tried.append(runs)
            best = max(tried, key=lambda r: r.score(metric))
            yield variant, metric, best, tried


def total_runs(
    variants: Sequence[Variant], metrics: Sequence[Metric], settings: OnlineProtocol, n_orders: int
) -> int:
    return sum(len(learner_params(v, m, settings, 1.0)) * n_orders for v in variants for m in metrics)


def format_table(results: Sequence[tuple[Variant, Metric, Runs]], metrics: Sequence[Metric]) -> str:
    """The paper's columns, one row per algorithm, ``mean ± std``."""

    def pm(stat: dict[str, float]) -> str:
        return f"{stat['mean']:.3f} ± {stat['std']:.3f}"

    def tuned(runs: Runs) -> str:
        return next((f"{k}={runs.params[k]:g}" for k in ("eta", "C", "r") if k in runs.params), "")

    by_variant: dict[Variant, dict[Metric, Runs]] = {}
    for variant, metric, runs in results:
        by_variant.setdefault(variant, {})[metric] = runs
    header, rule = ["algorithm"], ["---"]
    if "sum" in metrics:
        header += ["sum %", "sens %", "spec %", "time s", "param"]
    if "cost" in metrics:
        header += ["cost", "sens %", "spec %", "time s", "param"]
    rule = ["---"] * len(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    for variant, per_metric in by_variant.items():
        cells = [variant.label]
        for metric in metrics:
            runs = per_metric[metric]
            s = runs.summary()
            first = s["sum_percent"] if metric == "sum" else s["cost_hundreds"]
            cells += [
                pm(first),
                pm(s["sensitivity_percent"]),
                pm(s["specificity_percent"]),
                f"{s['seconds']['mean']:.3f}",
                tuned(runs),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
