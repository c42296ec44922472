"""The systems being compared, one table row each: ours (service and create() defaults), the peers
and the hindsight references, each as a function that predicts a stream online."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from bench.peers import run_peer
from bench.peers_scaled import run_scaled_peer
from bench.quality.protocol import COST_RHO, Stream
from service.datasets import l2_normalize
from service.learners import ALGORITHMS, EtaGrid, create
from service.learners.roster import NEIGHBOURS, Family, families_for, forests_for
from service.model_config import ModelConfig

Predict = Callable[[sp.csr_matrix, np.ndarray, Stream, str], np.ndarray]


@dataclass(frozen=True)
class System:
    """One row of the tables: how it predicts a stream, for one measure."""

    key: str
    label: str
    group: str  # "service" | "create" | "peer" | "candidate" (run only when --only names it)
    predict: Predict
    metric_free: bool = False  # the same predictions serve both measures (no weight to set)
    sklearn: bool = False  # runs on the first --sklearn-permutations orders only
    note: str = ""
    raw: bool = False  # reads the rows as loaded (it normalises by itself), not the L2-normalised ones
    passes: int = 0  # > 0: one call with metric "both" returns {metric: predictions} in that many passes


def service_config(stream: Stream, metric: str, **fields: Any) -> ModelConfig:
    """What a client gets with ``PUT /models`` setting only ``fields`` (and the objective)."""
    return ModelConfig(n_features=stream.d, objective=metric, **fields)


def _service(fields: dict[str, Any], extra: dict[str, Any] | None = None) -> Predict:
    """``extra``: learner parameters ModelConfig does not carry (the learner over a feature map)."""

    def predict(X: sp.csr_matrix, y: np.ndarray, stream: Stream, metric: str) -> np.ndarray:
        config = service_config(stream, metric, **fields)
        if config.request_normalize == "l2":  # what the service does to a request (the raw rows come in)
            X = l2_normalize(X)
        if extra:
            learner = create(config.resolved_algorithm(), stream.d, **config.learner_params(), **extra)
        else:
            learner = config.build_learner()
        return learner.run(X, y).predictions

    return predict


STD: dict[str, Any] = {"inputs": ("standard",), "weighting": "uniform"}
NEIGHBOUR_ROWS: tuple[tuple[str, str, dict[str, Any] | None], ...] = (
    ("knn-none", "defaults without kNN members", None),
    ("knn-std", "defaults, kNN (k = 5, window 1000, plain vote) over standardised input", STD),
    ("knn-std-distance", "defaults, kNN distance-weighted vote over standardised input",
     {**STD, "weighting": "distance"}),
    ("knn-both", "defaults, kNN plain vote over L2 and standardised inputs",
     {**STD, "inputs": ("l2", "standard")}),
    ("knn-std-k10", "defaults, kNN (k = 10) plain vote over standardised input", {**STD, "k": 10}),
)  # fmt: skip
"""Candidate rosters (the kNN family with these options in place of the roster's, or none), for the
study of whether the nearest neighbours join the default; opt-in rows (``--only``)."""


ENSEMBLE_OPTIONS = (
    "objective", "c_p", "selection", "window", "inputs", "members", "eta_grid", "eta", "loss", "alpha_p",
)  # fmt: skip
"""The learner parameters of a default model that are the ensemble's, not its members'."""


def default_ensemble(
    config: ModelConfig, forests: Sequence[Family], inputs: Sequence[str] | None = None
) -> EtaGrid:
    """The ensemble :meth:`ModelConfig.build_learner` builds for ``config`` (eta and loss ``"auto"``),
    with ``forests`` as its families without a rate and, given ``inputs``, those input forms."""
    params = dict(config.learner_params())
    members, grid, alpha_p = params.pop("members"), params.pop("eta_grid"), params.pop("alpha_p")
    del params["eta"], params["loss"]  # "auto", "auto": both losses
    if inputs is not None:
        params["inputs"] = tuple(inputs)
    return EtaGrid(
        ALGORITHMS[config.learner_name()], config.dimension, grid=grid, alpha_p=alpha_p,
        losses=("II", "I"), families=families_for(members, config.dimension), forests=tuple(forests),
        **params,
    )  # fmt: skip


def with_neighbours(config: ModelConfig, neighbours: dict[str, Any] | None) -> EtaGrid:
    """The default ensemble of ``config`` (as :func:`service.learners.create` builds it) with the kNN
    family of the roster replaced by one with ``neighbours`` as options, or left out (``None``)."""
    params = dict(config.learner_params())
    member_params = {k: v for k, v in params.items() if k not in ENSEMBLE_OPTIONS}
    forms = params.get("inputs", ["raw"])
    roster = forests_for(params["members"], config.dimension, member_params, len(forms))
    forests = [f for f in roster if f[0].algorithm != NEIGHBOURS]
    if neighbours is not None:
        forests.append((ALGORITHMS[NEIGHBOURS], dict(neighbours)))
    return default_ensemble(config, forests)


def _neighbour_candidate(neighbours: dict[str, Any] | None) -> Predict:
    def predict(X: sp.csr_matrix, y: np.ndarray, stream: Stream, metric: str) -> np.ndarray:
        return with_neighbours(service_config(stream, metric), neighbours).run(X, y).predictions

    return predict


def _create(name: str) -> Predict:
    def predict(X: sp.csr_matrix, y: np.ndarray, stream: Stream, metric: str) -> np.ndarray:
        params: dict[str, Any] = {}
        if "rho" in ALGORITHMS[name].param_spec():
            params["rho"] = "laplace" if metric == "sum" else COST_RHO
        return create(name, stream.d, **params).run(X, y).predictions

    return predict


def peer_rho(stream: Stream, metric: str) -> float:
    """The positive-class weight a peer gets: the true ``T_n / T_p`` for sum, ``c_p / c_n`` for cost."""
    return stream.ratio if metric == "sum" else COST_RHO


def _peer(name: str, weighted: bool) -> Predict:
    def predict(X: sp.csr_matrix, y: np.ndarray, stream: Stream, metric: str) -> np.ndarray:
        rho = peer_rho(stream, metric) if weighted else 1.0
        return run_peer(name, X, y, rho=rho).predictions

    return predict


L2_LINEAR: dict[str, Any] = {"auto_members": "linear", "normalize": "l2"}
"""The single-family rows: linear members over L2-normalised requests (the defaults before the
members spanned families and input forms)."""
SERVICE_ROWS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("defaults", "defaults (members and inputs auto)", {}),
    ("defaults-l2-linear", "defaults, linear members over L2 input (the earlier defaults)", L2_LINEAR),
    (
        "defaults-linear",
        "defaults, auto_members linear (L2 and standardised inputs)",
        {"auto_members": "linear"},
    ),
    ("defaults-all", "defaults, auto_members all (no forest)", {"auto_members": "all"}),
    ("acog-I", "ACOG-I", {"algorithm": "acog", "loss": "I", **L2_LINEAR}),
    ("acog-Idiag", "ACOG-Idiag", {"algorithm": "acog-diag", "loss": "I", **L2_LINEAR}),
    ("acog-IIdiag", "ACOG-IIdiag", {"algorithm": "acog-diag", "loss": "II", **L2_LINEAR}),
    ("ssacog-I", "SSACOG-I", {"algorithm": "ssacog", "loss": "I", **L2_LINEAR}),
    ("ssacog-II", "SSACOG-II", {"algorithm": "ssacog", "loss": "II", **L2_LINEAR}),
    ("cog-II", "COG-II", {"algorithm": "cog", "loss": "II", **L2_LINEAR}),
    ("quadratic", "quadratic OGD (eta, loss auto)", {"algorithm": "quadratic", **L2_LINEAR}),
    ("fogd", "FOGD, D = 200 (eta, loss auto)", {"algorithm": "fogd", **L2_LINEAR}),
    ("nogd", "NOGD, B = 100 (eta, loss auto)", {"algorithm": "nogd", **L2_LINEAR}),
)
MAPPED_ROWS: tuple[tuple[str, str, dict[str, Any], dict[str, Any]], ...] = (
    ("quadratic-acogdiag", "ACOG-diag over quadratic features", {"algorithm": "quadratic", **L2_LINEAR},
     {"update": "acog-diag"}),
    ("fogd-acogdiag", "ACOG-diag over random Fourier features", {"algorithm": "fogd", **L2_LINEAR},
     {"update": "acog-diag"}),
    ("nogd-acog", "ACOG over Nystrom features", {"algorithm": "nogd", **L2_LINEAR}, {"update": "acog"}),
)  # fmt: skip
"""The nonlinear members: the feature maps under ACOG (the ``update`` learner parameter; opt-in)."""
PEER_ROWS = (
    ("river-pa", "river PA-I", False),
    ("river-alma", "river ALMA", False),
    ("river-perceptron", "river Perceptron (w)", True),
    ("river-logreg", "river LogReg (w)", True),
    ("vw", "VW (classweight)", True),
    ("vw-ojanewton", "VW OjaNewton (classweight)", True),
    ("vw-q", "VW -q :: (classweight)", True),
    ("vw-nn", "VW --nn 10 (classweight)", True),
    ("sklearn-sgd", "sklearn SGD hinge (w)", True),
)


SCALED_PEER_ROWS = (
    ("river-amf", "river AMF, 10 trees (std)", 1),
    ("river-arf", "river ARF, 10 trees (std)", 1),
    ("river-hat", "river HAT (std)", 1),
    ("river-knn", "river kNN, k = 5 (std)", 1),
    ("vw-q-std", "VW -q :: on standardised features (Laplace w)", 2),
)
"""Peers over the raw rows through online standardisation, thresholded for each measure
(:mod:`bench.peers_scaled`); ``passes``: model runs per order (VW weighs each measure apart)."""


def _scaled_peer(name: str) -> Predict:
    def predict(X: sp.csr_matrix, y: np.ndarray, stream: Stream, metric: str) -> Any:
        result = run_scaled_peer(name, X, y)
        return result.predictions if metric == "both" else result.predictions[metric]

    return predict


def systems() -> list[System]:
    """Every system of the tables, in table order."""
    rows = [
        System(f"service:{key}", label, "service", _service(fields), raw=True)
        for key, label, fields in SERVICE_ROWS
    ]
    rows += [
        System(f"service:{key}", label, "service", _service(fields, extra), raw=True)
        for key, label, fields, extra in MAPPED_ROWS
    ]
    rows += [
        System(f"service:{key}", label, "candidate", _neighbour_candidate(options), raw=True)
        for key, label, options in NEIGHBOUR_ROWS
    ]
    rows += [System(f"create:{name}", name, "create", _create(name)) for name in ALGORITHMS]
    rows += [
        System(
            f"peer:{name}",
            label,
            "peer",
            _peer(name, weighted),
            metric_free=not weighted,
            sklearn=name.startswith("sklearn"),
        )
        for name, label, weighted in PEER_ROWS
    ]
    rows += [
        System(f"peer:{name}", label, "peer", _scaled_peer(name), raw=True, passes=passes)
        for name, label, passes in SCALED_PEER_ROWS
    ]
    return rows


HINDSIGHT = {
    "hindsight:paper": ("ACOG-II, hindsight eta, paper protocol", {"fit_intercept": False, "rho": "true"}),
    "hindsight:defaults": (
        "ACOG-II, hindsight eta, defaults' config",
        {"fit_intercept": True, "rho": "laplace"},
    ),
}


def hindsight_predict(kind: str, eta: float) -> Predict:
    options = HINDSIGHT[kind][1]

    def predict(X: sp.csr_matrix, y: np.ndarray, stream: Stream, metric: str) -> np.ndarray:
        if metric == "cost":
            rho: float | str = COST_RHO
        else:
            rho = stream.ratio if options["rho"] == "true" else "laplace"
        learner = create(
            "acog", stream.d, loss="II", eta=eta, rho=rho, fit_intercept=options["fit_intercept"]
        )
        return learner.run(X, y).predictions

    return predict


def labels_of() -> dict[str, tuple[str, str]]:
    """``{system key: (label, group)}`` of every row, the hindsight references included."""
    out = {s.key: (s.label, s.group) for s in systems()}
    out.update({k: (v[0], "hindsight") for k, v in HINDSIGHT.items()})
    return out


GROUP_NAMES = {
    "service": "ours, service defaults",
    "create": "ours, create() defaults",
    "peer": "peer",
    "hindsight": "hindsight (not online)",
    "candidate": "ours, candidate default",
}
