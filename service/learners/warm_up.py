"""Compile (or load from the disk cache) exactly the kernels a set of learners needs.

Numba compiles a kernel the first time it is called with a new combination of argument
types. For a learner those types are fixed by its algorithm (its state and params records)
and by the input form (a dense vector is canonicalised by one kernel, a sparse pair or a
scipy row by another); the hyper-parameter *values*, the dimension, the intercept and the
``eta="auto"``/``loss="auto"`` ensembles (whose members are ordinary learners of one
algorithm) change none of them; whether an input array is writable does (the label log's
examples are read-only views of Redis's bytes). So one tiny learner per algorithm, taken through
both call paths (``score``/``learn``, and ``run``) with both input forms, writable and read-only,
compiles everything a model of that algorithm will ever run, plus
:func:`service.normalization.unit_l2_rows`, which every L2-normalised request goes through,
:func:`service.normalization.unit_l2_kernel_vector` (the ensemble's L2 form), and
:func:`service.learners.standardise.standardise_rows` with
:func:`~service.learners.standardise.standard_kernel_vector` (the ensemble's standardised input). A model
configuration also names the learners its ensemble's families run (``member_algorithms()``).

With :func:`service.jit_cache.configure` called by the process, numba loads the machine code
from the cache directory when it is there; a warm-up in a process that already ran the
kernels only re-runs the tiny learners (microseconds).

Progress: inside :func:`reporting`, every warm-up (in this context, threads started from it with
``asyncio.to_thread`` included) calls the reporter before each algorithm with ``(k, n, name)``
(algorithm ``k`` of ``n`` is being compiled or loaded) and once at the end with ``(n, n, None)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .. import jit_cache
from ..normalization import unit_l2, unit_l2_kernel_vector
from .base import Learner, OnlineLearner, read_only
from .errors import InvalidParameter
from .feature_maps import ORDERS, quadratic_scores
from .first_order import LINEAR_SCORES_WIDTH, linear_scores
from .hedge import THRESHOLDS, VoteState, chosen_threshold, hedge_steps, hedge_vote
from .inputs import max_abs
from .member_steps import MemberSteps, Outcomes, steps_together
from .selection import Tally
from .standardise import standard_kernel_vector, standardise_rows


@runtime_checkable
class ResolvesAlgorithm(Protocol):
    """A model configuration (:class:`service.model_config.ModelConfig`) that names its algorithm."""

    def resolved_algorithm(self) -> str: ...


Target = str | OnlineLearner | ResolvesAlgorithm
"""An algorithm name (``"ssacog"``, or an ensemble's ``"auto:acog"``), a learner, or a model
configuration."""


Reporter = Callable[[int, int, "str | None"], None]
"""``(k, n, algorithm)``: algorithm ``k`` (1-based) of ``n`` starts; ``(n, n, None)``: all done."""

_reporter: ContextVar[Reporter | None] = ContextVar("warm_up_reporter", default=None)


@contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    """Every :func:`warm_up` in this context reports its progress to ``reporter``."""
    token = _reporter.set(reporter)
    try:
        yield
    finally:
        _reporter.reset(token)


@dataclass(frozen=True, slots=True)
class WarmUp:
    """What :func:`warm_up` did: the algorithms it ran, the kernel specialisations numba
    compiled and those it loaded from the disk cache (``name(types)`` each), and the time."""

    algorithms: tuple[str, ...]
    compiled: tuple[str, ...]
    loaded: tuple[str, ...]
    seconds: float

    def summary(self) -> str:
        """One line: how many specialisations were compiled and loaded, for which algorithms, how fast."""
        cache = jit_cache.configured()
        return (
            f"{len(self.compiled)} kernel specialisations compiled, {len(self.loaded)} loaded from "
            f"{cache if cache is not None else 'no disk cache'}, for {len(self.algorithms)} algorithms "
            f"({', '.join(self.algorithms)}) in {self.seconds:.1f} s"
        )


def warm_up(targets: Iterable[Target] | None = None) -> WarmUp:
    """Compile or load the kernels the learners of ``targets`` need (every registered algorithm
    when ``None``); both call paths, both input forms. Raises :class:`InvalidParameter` for an
    unknown algorithm name."""
    from . import ALGORITHMS

    names = sorted({n for t in targets for n in _algorithms(t)} if targets is not None else set(ALGORITHMS))
    unknown = [n for n in names if n not in ALGORITHMS]
    if unknown:
        raise InvalidParameter(
            "algorithm", f"unknown algorithm {unknown[0]!r} (known: {', '.join(ALGORITHMS)})"
        )
    before = _specialisations()
    start = time.perf_counter()
    report = _reporter.get()
    for k, name in enumerate(names, start=1):
        if report is not None:
            report(k, len(names), name)
        _exercise(ALGORITHMS[name])
    unit_l2(np.array([3.0, 4.0]))
    max_abs(np.array([3.0, -4.0]))  # the request's bound (max_feature_value)
    unit_l2(read_only(np.array([3.0, 4.0])))  # the ensemble scales the label log's read-only values
    idx, val = np.array([0, 1]), np.array([3.0, 4.0])  # and makes a request's or an entry's forms
    count, mean, m2 = np.zeros(1, dtype=np.int64), np.zeros(2), np.zeros(2)
    for pair in ((idx, val), (read_only(idx), read_only(val)), (idx, read_only(val))):
        unit_l2_kernel_vector(*pair, 2, 1.0)
        standard_kernel_vector(*pair, count, mean, m2, True, 2, 1.0)
    standardise_rows(np.ones((1, 2)), count, mean, m2, True)
    _exercise_hedge()
    if report is not None:
        report(len(names), len(names), None)
    seconds = time.perf_counter() - start
    compiled: list[str] = []
    loaded: list[str] = []
    for dispatcher in jit_cache.kernels():
        hits = dispatcher.stats.cache_hits
        for signature in set(dispatcher.signatures) - before.get(id(dispatcher), set()):
            label = f"{dispatcher.py_func.__qualname__}{tuple(str(t) for t in signature)}"
            (loaded if hits.get(signature) else compiled).append(label)
    return WarmUp(tuple(names), tuple(sorted(compiled)), tuple(sorted(loaded)), seconds)


def _algorithms(target: Target) -> list[str]:
    """The algorithm of ``target`` and, for a configuration whose ensemble runs other learners too
    (the quadratic family, the forest), theirs."""
    members = getattr(target, "member_algorithms", None)
    return [_algorithm(target), *(members() if callable(members) else ())]


def _algorithm(target: Target) -> str:
    if isinstance(target, str):
        name = target
    elif isinstance(target, ResolvesAlgorithm):
        name = target.resolved_algorithm()
    else:
        name = target.algorithm
    return name.removeprefix("auto:")


def _exercise(cls: type[Learner]) -> None:
    """Learners of ``cls`` through ``score``/``learn`` (dense and sparse, writable and read-only)
    and ``run``: one, or one per ``update`` for the feature-map learners (OGD, ACOG-diag or ACOG over
    the map: each its own kernels)."""
    spec = cls.param_spec()
    params: dict[str, Any] = {"sketch_size": 2} if "sketch_size" in spec else {}
    if "batch_size" in spec:  # sdrogd, pegasos: a step (and a sketch shrink) per label
        params["batch_size"] = 1
    updates = tuple(ORDERS) if "update" in spec else (None,)
    for update in updates:
        _exercise_one(cls, params if update is None else {**params, "update": update})


def _exercise_one(cls: type[Learner], params: dict[str, Any]) -> None:
    learner = cls(3, fit_intercept=True, **params)
    dense, pair = np.array([0.6, 0.0, 0.8]), (np.array([1]), np.array([1.0]))
    learner.score(dense)
    learner.score(pair)
    learner.learn(dense, 1)
    learner.learn(pair, -1)
    # The label log hands examples over as read-only views of the bytes Redis returned
    # (np.frombuffer): numba types a read-only array apart from a writable one.
    learner.learn(read_only(dense), 1)
    learner.learn((read_only(pair[0]), read_only(pair[1])), -1)
    learner.learn((pair[0], read_only(pair[1])), 1)
    learner.run(np.array([[0.6, 0.0, 0.8], [0.0, 1.0, 0.0]]), np.array([1, -1]))
    _ = learner.rho
    learner.weights()
    if steps_together(cls):  # in an ensemble, a class's members step together
        group = [cls(3, fit_intercept=True, **params) for _ in range(2)]
        steps, out = MemberSteps(group, ["raw", "raw"]), Outcomes.empty(2)
        steps.step(group, {"raw": (np.array([1, 3]), np.array([1.0, 1.0]))}, 1, out)  # writable only


def _exercise_hedge() -> None:
    """The ensemble's Fixed-Share vote (its linear and its quadratic members' scores in one call each,
    on a writable and a read-only vector; a prediction's vote and threshold, and a stream of weight
    updates) and its members' counts taking a label."""
    log_w, signs, scores = np.zeros(2), np.ones((1, 2), dtype=np.int8), np.ones((1, 2))
    ws, at, idx, val = (np.zeros(2),) * LINEAR_SCORES_WIDTH, np.arange(2), np.array([1]), np.array([1.0])
    linear_scores(ws, 2, idx, val, at, scores[0])
    linear_scores(ws, 2, read_only(idx), read_only(val), at, scores[0])
    linear_scores(ws, 2, idx, read_only(val), at, scores[0])
    qs, layout = (np.zeros(3),) * LINEAR_SCORES_WIDTH, np.array([1, 2], dtype=np.int64)
    quadratic_scores(qs, 2, layout, np.array([0]), np.array([1.0]), at, scores[0])
    quadratic_scores(qs, 2, layout, read_only(np.array([0])), read_only(np.array([1.0])), at, scores[0])
    quadratic_scores(qs, 2, layout, np.array([0]), read_only(np.array([1.0])), at, scores[0])
    hedge_vote(log_w, scores[0])
    counts, labels, prior = np.zeros(2, dtype=np.int64), np.ones(1, dtype=np.int64), np.full(2, 0.5)
    mistakes = np.zeros((THRESHOLDS.shape[0], 2), dtype=np.int64)
    chosen_threshold(counts, mistakes, False, 0.5, 0.9)
    hedge_steps(log_w, counts, mistakes, signs, scores, labels, False, 0.5, 0.9, 0.3, 0.001, prior)
    VoteState(prior).learn_label(scores[0], 1, Tally(2, 2), True, False, 0.5, 0.9)


def _specialisations() -> dict[int, set[Any]]:
    return {id(d): set(d.signatures) for d in jit_cache.kernels()}
