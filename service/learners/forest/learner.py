"""``amf``: the Aggregated Mondrian Forest (Mourtada, Gaïffas & Scornet, "AMF: Aggregated Mondrian
forests for online learning", JRSS-B 2021) behind the learner contract.

The maths (the online Mondrian split sampling, the aggregation recursion, the Dirichlet leaf
predictor, the cost-optimal threshold the score carries) is in :mod:`.kernels`. Hyper-parameters,
river's ``forest.AMFClassifier`` defaults where it has them:

- ``n_estimators`` (10) trees, each drawing from its own stream of the ``seed`` (0);
- ``step`` (1.0): the learning rate of the exponential weights; ``dirichlet`` (0.5, Jeffreys):
  the prior of the leaf predictor; ``use_aggregation`` (true); ``split_pure`` (false: a node whose
  labels all equal the new one does not split);
- ``max_nodes`` (4096) per tree, the budget: a full tree stops splitting and keeps updating its
  boxes, counts and weights (:mod:`.kernels`). The forest must fit ``memory_budget`` at its full
  budget, ``n_estimators * max_nodes * (64 + 16 D)`` bytes for ``D`` coordinates (the intercept
  included): 4.6 MiB a tree at ``d = 64``, 46 MiB for the default forest;
- ``rho``/``alpha_p``: the bias of the decision ``P(+|x) >= 1 / (1 + rho)``.

The node arrays grow (doubling, up to ``max_nodes``) as the trees do, so memory, ``to_state`` and
checkpoints are proportional to the nodes in use: ``to_state`` holds the first
``max(n_nodes)`` nodes of every tree. In memory they are views of four blocks
(:data:`~.kernels.PACKS`), which the single calls pass: numba's dispatch costs about 60 ns an array
argument on every call, and a forest has fifteen; the state and checkpoints name each array as
before. The arrays are sized before each call so that no split is ever refused for room below the
budget: results do not depend on how calls are batched.

Input: a dense vector of ``d <= MAX_FEATURES`` features, or a sparse one (absent features are 0),
densified per call (O(d)); an intercept is a constant coordinate no split ever uses. There is no
linear weight vector (``weights()`` is empty) and no schema migration (the trees' boxes are
defined on their input schema).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from .. import driver
from ..base import BOOLEANS, Learner, UpdateInfo, flag, positive
from ..covariance import DEFAULT_MEMORY_BUDGET, memory_budget
from ..errors import InvalidInput, InvalidParameter
from ..inputs import FLOAT64, SparseVector
from ..interface import bump_state_epoch
from ..nonlinear import bounded_int, seed_value
from .kernels import (
    HYPER,
    NODE_ARRAYS,
    PACKS,
    ForestState,
    forest_record,
    forest_score,
    forest_step,
    forest_update,
)
from .rng import initial_counters

MAX_FEATURES = 1024
"""The widest input: each node keeps a box of ``2 D`` floats and each call densifies ``x``."""
MAX_TREES = 100
INITIAL_NODES = 64
"""Node capacity of a fresh tree; it doubles as the trees grow, up to ``max_nodes``."""


def node_nbytes(dim: int) -> int:
    """Bytes of one node: four int32 (links, feature), six float64, the box of ``2 dim`` floats."""
    return 4 * 4 + 6 * 8 + 2 * 8 * dim


def forest_nbytes(n_features: int, params: Mapping[str, Any]) -> int:
    """Bytes of a full forest (every tree at ``max_nodes``) for ``create("amf", n_features, **params)``."""
    dim = n_features + (1 if params.get("fit_intercept", False) else 0)
    trees = int(params.get("n_estimators", AMF.own_params["n_estimators"][0]))
    nodes = int(params.get("max_nodes", AMF.own_params["max_nodes"][0]))
    return trees * nodes * node_nbytes(dim)


def at_least_three(value: Any) -> int:
    n = bounded_int("max_nodes", 2**24)(value)
    if n < 3:
        raise InvalidParameter("max_nodes", f"must be >= 3 (a root and one split), got {value!r}")
    return n


def block_of(views: list[np.ndarray]) -> np.ndarray | None:
    """The block whose rows ``views`` are, in order, if they are (else None)."""
    block = views[0].base
    if not isinstance(block, np.ndarray) or block.shape[0] != len(views) or not block.flags.c_contiguous:
        return None
    for i, view in enumerate(views):
        offset = view.ctypes.data - block.ctypes.data
        if view.base is not block or view.shape != block.shape[1:] or offset != i * block.strides[0]:
            return None
    return block


class AMF(Learner):
    """The Aggregated Mondrian Forest; see the module docstring and :mod:`.kernels`."""

    algorithm = "amf"
    own_params: ClassVar[dict[str, tuple[Any, Callable[[Any], Any]]]] = {
        "n_estimators": (10, bounded_int("n_estimators", MAX_TREES)),
        "step": (1.0, positive("step")),
        "dirichlet": (0.5, positive("dirichlet")),
        "use_aggregation": (True, flag("use_aggregation")),
        "split_pure": (False, flag("split_pure")),
        "max_nodes": (4096, at_least_three),
        "seed": (0, seed_value),
        "memory_budget": (DEFAULT_MEMORY_BUDGET, memory_budget),
    }
    state_type = ForestState
    kernels = (forest_score, forest_update, forest_step)
    flat_record = forest_record

    @staticmethod
    def full_nbytes(n_features: int, params: Mapping[str, Any]) -> int:
        """The most memory a member of these parameters takes, every tree at its full node budget
        (for the ensemble's roster)."""
        return forest_nbytes(n_features, params)

    def _check_params(self) -> None:
        if self.n_features > MAX_FEATURES:
            raise InvalidParameter(
                "n_features", f"amf keeps a box per node and takes d <= {MAX_FEATURES}, got {self.n_features}"
            )
        need, budget = forest_nbytes(self.n_features, self.params), self.params["memory_budget"]
        if need > budget:
            raise InvalidParameter(
                "max_nodes",
                f"{self.params['n_estimators']} trees of {self.params['max_nodes']} nodes over {self.dim} "
                f"coordinates take {need / 2**20:.1f} MiB, over the memory budget of "
                f"{budget / 2**20:.1f} MiB: "
                "fewer nodes or trees",
            )

    def _hyper(self) -> np.ndarray:
        p, rho = self.params, self._rho_cfg
        values = {
            "step": p["step"], "dirichlet": p["dirichlet"], "use_aggregation": float(p["use_aggregation"]),
            "split_pure": float(p["split_pure"]), "max_nodes": float(p["max_nodes"]),
            "rho_mode": float(rho.mode), "rho_fixed": rho.fixed, "alpha_p": rho.alpha_p,
        }  # fmt: skip
        return np.array([values[name] for name in HYPER], dtype=np.float64)

    def _init_arrays(self) -> dict[str, np.ndarray]:
        trees = int(self.params["n_estimators"])
        arrays = {
            "hyper": self._hyper(),
            "n_nodes": np.ones(trees, dtype=np.int64),  # the root, an empty leaf
            "rng": initial_counters(int(self.params["seed"]), trees),
        }
        arrays.update(self._node_arrays(trees, min(INITIAL_NODES, int(self.params["max_nodes"]))))
        return arrays

    def _node_arrays(self, trees: int, nodes: int) -> dict[str, np.ndarray]:
        """Fresh node arrays (links -1, the rest 0), each a view of its block (:data:`PACKS`)."""
        tails = {"node_counts": (2,), "lower": (self.dim,)}
        arrays: dict[str, np.ndarray] = {}
        for names in PACKS:
            dtype = np.int32 if names[0] == "parent" else np.float64
            block = np.zeros((len(names), trees, nodes, *tails.get(names[0], ())), dtype=dtype)
            arrays.update(zip(names, block, strict=True))
        for name in ("parent", "left", "right"):
            arrays[name][...] = -1
        return arrays

    # --- the contract --------------------------------------------------------------------------

    def weights(self) -> np.ndarray:
        """Empty: a forest has no linear weight vector."""
        return np.zeros(0)

    def describe(self) -> dict[str, Any]:
        """``"forest"``: trees, the node budget, the nodes in use per tree, how many trees are full."""
        n_nodes = self._arrays["n_nodes"]
        budget = int(self.params["max_nodes"])
        return {
            "forest": {
                "trees": int(n_nodes.shape[0]),
                "max_nodes": budget,
                "nodes": [int(n) for n in n_nodes],
                "full_trees": int(np.sum(n_nodes + 2 > budget)),
            }
        }

    def __init__(self, n_features: int, **params: Any) -> None:
        super().__init__(n_features, **params)
        self._fit = self._labels_that_fit()
        self._row_shape = (self.n_features,)
        self._tail = (
            (self.n_features, float(self.params["intercept_value"]))
            if self.params["fit_intercept"]
            else (-1, 0.0)
        )

    @property
    def _st(self) -> Any:
        return self._record

    @_st.setter
    def _st(self, record: Any) -> None:
        """The record over this forest's arrays, its node arrays first packed in blocks
        (:data:`~.kernels.PACKS`): ``self._arrays`` and the record then hold views of the blocks,
        and ``_flat`` the blocks (8 arrays, not 15: numba's dispatch costs about 60 ns an array on
        every call). Called where the arrays are made (a fresh forest, a loaded state, a resize, a
        copy; packed already when made by :meth:`_node_arrays`), never per label."""
        arrays = record._asdict()
        blocks = []
        for names in PACKS:
            block = block_of([arrays[name] for name in names])
            if block is None:
                block = np.stack([arrays[name] for name in names])
                arrays.update(zip(names, block, strict=True))
            blocks.append(block)
        self._arrays.update(arrays)
        self._record = self.state_type(**arrays)
        self._flat = (arrays["counts"], arrays["hyper"], arrays["n_nodes"], arrays["rng"], *blocks)
        bump_state_epoch()

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A copy (deepcopy, pickle) packs its arrays again: copied one by one, its node arrays are
        no longer views of its blocks."""
        self.__dict__.update(state)
        self._st = self.state_type(**self._arrays)

    def score(self, x: Any) -> float:
        """:meth:`Learner.score`; a dense float64 row (C-contiguous, ``n_features`` long) is checked,
        made the kernels' vector and scored in one compiled call (:attr:`driver.Entries.score_dense`,
        the same bits as the general path, which reports bad input). The compiled call returns
        Python floats and bools already: nothing is converted again."""
        if self._is_dense_row(x):
            ok, s = self._entries.score_dense(self._flat, x, False, *self._tail)
            if ok:
                return s
        return super().score(x)

    def learn(self, x: Any, y: Any) -> UpdateInfo:
        """:meth:`Learner.learn`; a dense float64 row (C-contiguous, ``n_features`` long) is checked,
        made the kernels' vector and learned in one compiled call (:attr:`driver.Entries.learn_dense`,
        the same round and bits as the general path, which reports bad input). The room for the
        label is :meth:`_reserve`'s, its usual case (a label that fits) inline."""
        if self._is_dense_row(x) and not isinstance(y, BOOLEANS) and y in (-1, 1):
            if self._borrows:
                self._refuse_if_borrowed()
            if self._fit is not None and self._fit > 0:
                self._fit -= 1
            else:
                self._reserve(1)
            ok, s, loss, updated, rho = self._entries.learn_dense(
                self._flat, self._flat_params, self._flat_rho, x, False, *self._tail, int(y)
            )
            if ok:
                return UpdateInfo(s, loss, updated, rho)
        return super().learn(x, y)

    def _is_dense_row(self, x: Any) -> bool:
        """Whether ``x`` is a row the compiled dense entries take as it is: a float64 array of
        ``n_features``, C-contiguous (its values are checked in the compiled call)."""
        if type(x) is not np.ndarray or x.dtype is not FLOAT64:
            return False
        return x.shape == self._row_shape and x.strides == (8,)

    def learn_kernel(self, vector: SparseVector, y: int) -> tuple[Any, Any, Any, Any]:
        """:meth:`Learner.learn_kernel`, the room for the label made first (so ``learn_checked`` too)."""
        self._refuse_if_borrowed()
        self._reserve(1)
        return super().learn_kernel(vector, y)

    def _learn_stream(
        self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, ys: np.ndarray,
        scores: np.ndarray, updated: np.ndarray,
    ) -> None:  # fmt: skip
        """The stream in chunks short enough that no tree can outgrow the capacity within one
        (a label adds at most two nodes a tree); the capacity grows between chunks."""
        n, start = ys.shape[0], 0
        while start < n:
            stop = start + self._reserve(n - start)
            driver.learn_stream(
                self._st, self._kernel_params, self._rho_cfg, indptr[start:], indices, data,
                ys[start:stop], scores[start:stop], updated[start:stop],
            )  # fmt: skip
            start = stop

    def _reserve(self, labels: int) -> int:
        """Room for up to ``labels`` more labels: how many (at least one) the arrays now surely hold,
        growing them when none fits. ``self._fit`` counts the labels that surely fit (each adds at
        most two nodes a tree), ``None`` once the arrays are at the budget (the kernels then stop
        splitting): a plain counter, so that a single ``learn`` pays no array scan. When it runs
        out, the room is counted again from the nodes in use (most labels split nothing), and the
        arrays double only when that finds none."""
        if self._fit is None:
            return labels
        if self._fit < 1:
            self._fit = self._labels_that_fit()
        if self._fit is not None and self._fit < 1:
            capacity = self._arrays["left"].shape[1]
            self._resize(min(int(self.params["max_nodes"]), 2 * capacity))
        if self._fit is None:
            return labels
        taken = min(labels, self._fit)
        self._fit -= taken
        return taken

    def _labels_that_fit(self) -> int | None:
        capacity = self._arrays["left"].shape[1]
        if capacity >= int(self.params["max_nodes"]):
            return None
        return (capacity - int(self._arrays["n_nodes"].max())) // 2

    def _resize(self, capacity: int) -> None:
        trees = self._arrays["n_nodes"].shape[0]
        grown = self._node_arrays(trees, capacity)
        for name in NODE_ARRAYS:
            old = self._arrays[name]
            keep = min(old.shape[1], capacity)
            grown[name][:, :keep] = old[:, :keep]
            self._arrays[name] = grown[name]
        self._st = self.state_type(**self._arrays)
        self._fit = self._labels_that_fit()

    # --- the state: the nodes in use only ------------------------------------------------------

    def _state_dict(self, share: Callable[[np.ndarray], np.ndarray]) -> dict[str, Any]:
        used = int(self._arrays["n_nodes"].max())
        state = super()._state_dict(share)
        for name in NODE_ARRAYS:
            state[name] = share(self._arrays[name][:, :used])
        return state

    def state_nbytes(self) -> int:
        """The bytes of the state as a checkpoint holds it (the nodes in use, not the spare
        capacity), so that a restored forest reports what the one it was saved from did."""
        used = int(self._arrays["n_nodes"].max())
        return sum(
            int(array[:, :used].nbytes if name in NODE_ARRAYS else array.nbytes)
            for name, array in self._arrays.items()
        )

    def _state_templates(self, state: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
        parent = state.get("parent")
        used = parent.shape[1] if isinstance(parent, np.ndarray) and parent.ndim == 2 else 1
        if not 1 <= used <= int(self.params["max_nodes"]):
            budget = self.params["max_nodes"]
            raise InvalidInput("state", f"holds {used} nodes a tree, the budget is {budget}")
        templates = dict(self._arrays)
        for name in NODE_ARRAYS:
            current = self._arrays[name]
            templates[name] = np.empty((current.shape[0], used, *current.shape[2:]), dtype=current.dtype)
        return templates

    def load_state(self, state: Mapping[str, Any]) -> None:
        """The base checks, plus: ``hyper`` is this configuration's, and every tree is a
        well-formed tree of its ``n_nodes`` nodes (links in range), before anything changes."""
        self._refuse_if_borrowed()
        problem = self._structure_problem(state)
        if problem is not None:
            raise InvalidInput("state", problem)
        super().load_state(state)
        self._fit = self._labels_that_fit()

    def _structure_problem(self, state: Mapping[str, Any]) -> str | None:
        """What is wrong with the contents of ``state``; ``None`` also when an array is missing or
        mistyped, which the base checks report."""
        try:
            arrays = {name: np.asarray(state[name]) for name in ("hyper", "n_nodes", "parent", "left",
                                                                  "right", "feature")}  # fmt: skip
            if not np.array_equal(arrays["hyper"], self._hyper(), equal_nan=True):
                return "hyper does not match this model's configuration"
            used = arrays["parent"].shape[1]
            n_nodes = arrays["n_nodes"]
            if n_nodes.shape != (self.params["n_estimators"],) or n_nodes.min() < 1 or n_nodes.max() != used:
                return f"n_nodes must lie in [1, {used}] and reach it"
            for name in ("parent", "left", "right"):
                links = arrays[name]
                if links.min() < -1 or links.max() >= used:
                    return f"{name} links outside the {used} nodes"
            for t in range(n_nodes.shape[0]):  # a link of a used node must stay among used nodes
                n = int(n_nodes[t])
                for name in ("left", "right"):
                    if arrays[name][t, :n].max() >= n:
                        return f"{name} of tree {t} links past its {n} nodes"
            if arrays["feature"].min() < 0 or arrays["feature"].max() >= self.dim:
                return f"feature outside [0, {self.dim})"
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None
        return None
