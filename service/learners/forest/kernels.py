"""The numba kernels of the Aggregated Mondrian Forest, over parallel node arrays per tree.

**The arrays.** Tree ``t`` holds its nodes ``0 .. n_nodes[t] - 1`` (node 0 is the root) in rows of
arrays shaped ``(T, capacity, ...)``: ``parent``, ``left``, ``right`` (``-1``: none; a leaf has
``left = -1``), ``feature`` and ``threshold`` (``x[feature] <= threshold`` goes left), ``time`` (the
node's birth time in the Mondrian process; its children are born at its split time), ``node_counts``
(``[n_+, n_-]``, the labels the node has seen), ``log_weight`` and ``log_weight_tree`` (below), and
the box ``lower``/``upper`` (``(T, capacity, D)``: the smallest box holding every point the node has
seen). ``hyper`` holds the configuration the kernels read (see :data:`HYPER`).

**Prediction** (per tree; the forest averages the trees). The leaf predictor is the Dirichlet
(Jeffreys for ``dirichlet = 0.5``, Krichevsky-Trofimov) estimate
``p_v(c) = (n_v(c) + a) / (n_v + 2 a)``. With aggregation, the tree predicts the Bayesian mixture
over every pruning of the tree (the context-tree weighting recursion), in closed form along the
path of ``x`` only::

    pred(v) = p_v                                           at the leaf of x
    pred(v) = b_v p_v + (1 - b_v) pred(child of v holding x),  b_v = 1/2 exp(w_v - W_v)

with ``w_v = -step * sum of log-losses of p_v`` over the labels ``v`` has seen (``log_weight``) and
``W_v = w_v`` at a leaf, ``W_v = log((e^{w_v} + e^{W_left + W_right}) / 2)`` above
(``log_weight_tree``). The kernel walks root to leaf once, carrying ``prod (1 - b)``.

**Learning** one labelled ``x`` (the online Mondrian process, lifetime infinite). From the root,
at node ``v`` with box ``[l, u]``: the extension is ``e = sum_j max(l_j - x_j, 0) +
max(x_j - u_j, 0)``. Unless ``v`` is pure for this label (every label it saw equals ``y``;
``split_pure`` disables this rule) or the node budget is full, draw ``E ~ Exp(e)``; when
``e > 0`` and ``time_v + E`` is earlier than the birth of ``v``'s children (always, for a leaf),
``v`` splits at that time: feature ``j`` with probability ``ext_j / e`` and a threshold uniform
between the box and ``x_j``. ``v`` keeps its statistics and becomes the parent of a copy of itself
(born at the split time, with ``v``'s old children) and of a new empty leaf, on ``x``'s side;
the walk ends at that leaf. Every node on the walk extends its box to ``x``, adds the log-loss
of its prediction *before* the label to ``w_v`` and counts the label; then ``W`` is recomputed
from the leaf up. Each label costs O(depth x D) per tree, the split included.

**The budget.** A split adds two nodes; when ``n_nodes + 2 > max_nodes`` the tree stops
splitting and keeps learning on its fixed partition: boxes, counts and weights still update, so
the aggregation keeps choosing among the prunings of the tree it has.

**The score** is the cost-sensitive decision: with ``p``, ``q`` the forest's aggregated P(+|x)
and P(-|x) and ``rho`` the model's bias (fixed, or the Laplace estimate from the labels so far),
``score = log(p / q) + log(rho)``: non-negative exactly when ``p >= 1 / (1 + rho)``, the
cost-optimal threshold (``c_n / (c_p + c_n)`` for ``rho = c_p / c_n``; the running
``alpha_n (t_p + 1) / (alpha_n (t_p + 1) + alpha_p (t_n + 1))`` for the Laplace rho).

The random draws come from each tree's SplitMix64 counter (:mod:`.rng`) in ``rng``, so a restored
state continues the same stream.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from ...jit_cache import kernel
from .rng import uniform

ForestState = namedtuple(
    "ForestState",
    [
        "counts", "hyper", "n_nodes", "rng",
        "parent", "left", "right", "feature", "threshold", "time",
        "node_counts", "log_weight", "log_weight_tree", "lower", "upper",
    ],
)  # fmt: skip
"""The learner's state: ``counts`` (the driver's ``[t_p, t_n]``), ``hyper``, per tree ``n_nodes``
and ``rng``, then the node arrays (see the module docstring)."""

NODE_ARRAYS = ("parent", "left", "right", "feature", "threshold", "time", "node_counts",
               "log_weight", "log_weight_tree", "lower", "upper")  # fmt: skip
"""The arrays with a node axis (axis 1)."""

HYPER = (
    "step", "dirichlet", "use_aggregation", "split_pure", "max_nodes", "rho_mode", "rho_fixed", "alpha_p",
)  # fmt: skip
"""The entries of ``hyper``, in order."""
STEP, DIRICHLET, AGGREGATE, SPLIT_PURE, MAX_NODES, RHO_MODE, RHO_FIXED, ALPHA_P = range(len(HYPER))


@kernel
def dense(idx: np.ndarray, val: np.ndarray, dim: int) -> np.ndarray:
    """The canonical sparse ``x`` as a dense vector of length ``dim``."""
    x = np.zeros(dim)
    for k in range(idx.shape[0]):
        x[idx[k]] = val[k]
    return x


@kernel
def bias(st: Any) -> float:
    """``rho`` for the next label: the driver's rule (:func:`service.learners.driver.current_rho`)."""
    h = st.hyper
    if h[RHO_MODE] == 1.0:
        alpha_p = h[ALPHA_P]
        return alpha_p * (st.counts[1] + 1.0) / ((1.0 - alpha_p) * (st.counts[0] + 1.0))
    return h[RHO_FIXED]


@kernel
def tree_proba(st: Any, t: int, x: np.ndarray) -> tuple[float, float]:
    """``(P(+|x), P(-|x))`` of tree ``t``: the aggregated prediction, root to leaf in one pass."""
    a = st.hyper[DIRICHLET]
    aggregate = st.hyper[AGGREGATE] != 0.0
    nc, lw, lwt = st.node_counts[t], st.log_weight[t], st.log_weight_tree[t]
    left, right, feature, threshold = st.left[t], st.right[t], st.feature[t], st.threshold[t]
    p = 0.0
    q = 0.0
    rest = 1.0  # prod over the nodes above of (1 - b)
    v = 0
    while True:
        n = nc[v, 0] + nc[v, 1]
        pv = (nc[v, 0] + a) / (n + 2.0 * a)
        qv = (nc[v, 1] + a) / (n + 2.0 * a)
        if left[v] < 0:
            return p + rest * pv, q + rest * qv
        if aggregate:
            b = 0.5 * math.exp(lw[v] - lwt[v])
            p += rest * b * pv
            q += rest * b * qv
            rest *= 1.0 - b
        v = left[v] if x[feature[v]] <= threshold[v] else right[v]


@kernel
def forest_proba(st: Any, x: np.ndarray) -> tuple[float, float]:
    """The forest's ``(P(+|x), P(-|x))``: the mean over the trees."""
    n_trees = st.n_nodes.shape[0]
    p = 0.0
    q = 0.0
    for t in range(n_trees):
        pt, qt = tree_proba(st, t, x)
        p += pt
        q += qt
    return p / n_trees, q / n_trees


@kernel
def forest_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    """``log(p / q) + log(rho)``: its sign is the cost-optimal decision ``p >= 1 / (1 + rho)``."""
    p, q = forest_proba(st, dense(idx, val, st.lower.shape[2]))
    return math.log(p) - math.log(q) + math.log(bias(st))


@kernel
def copy_node(st: Any, t: int, src: int, dst: int) -> None:
    """Node ``dst`` of tree ``t`` becomes a copy of ``src`` (children re-parented to ``dst``)."""
    st.left[t, dst] = st.left[t, src]
    st.right[t, dst] = st.right[t, src]
    st.feature[t, dst] = st.feature[t, src]
    st.threshold[t, dst] = st.threshold[t, src]
    st.node_counts[t, dst] = st.node_counts[t, src]
    st.log_weight[t, dst] = st.log_weight[t, src]
    st.log_weight_tree[t, dst] = st.log_weight_tree[t, src]
    st.lower[t, dst] = st.lower[t, src]
    st.upper[t, dst] = st.upper[t, src]
    if st.left[t, dst] >= 0:
        st.parent[t, st.left[t, dst]] = dst
        st.parent[t, st.right[t, dst]] = dst


@kernel
def new_leaf(st: Any, t: int, v: int, parent: int, time: float) -> None:
    """Node ``v`` of tree ``t``: an empty leaf under ``parent``, born at ``time``."""
    st.parent[t, v] = parent
    st.left[t, v] = -1
    st.right[t, v] = -1
    st.feature[t, v] = 0
    st.threshold[t, v] = 0.0
    st.time[t, v] = time
    st.node_counts[t, v] = 0.0
    st.log_weight[t, v] = 0.0
    st.log_weight_tree[t, v] = 0.0
    st.lower[t, v] = 0.0
    st.upper[t, v] = 0.0


@kernel
def split(st: Any, t: int, v: int, x: np.ndarray, e: float, split_time: float) -> int:
    """Split node ``v`` at ``split_time`` (see the module docstring); returns the new leaf."""
    lo, up = st.lower[t, v], st.upper[t, v]
    target = uniform(st.rng, t) * e
    j = 0
    acc = 0.0
    for k in range(x.shape[0]):  # feature k with probability ext_k / e
        ext = lo[k] - x[k] if x[k] < lo[k] else (x[k] - up[k] if x[k] > up[k] else 0.0)
        if ext > 0.0:
            j = k
            acc += ext
            if acc > target:
                break
    u = uniform(st.rng, t)
    right_side = x[j] > up[j]
    if right_side:  # threshold in [u_j, x_j): x goes right, the old points (<= u_j) left
        threshold = up[j] + u * (x[j] - up[j])
        if threshold >= x[j]:
            threshold = up[j]
    else:  # threshold in [x_j, l_j): x goes left, the old points (>= l_j) right
        threshold = x[j] + u * (lo[j] - x[j])
        if threshold >= lo[j]:
            threshold = x[j]
    copy, leaf = st.n_nodes[t], st.n_nodes[t] + 1
    st.n_nodes[t] += 2
    copy_node(st, t, v, copy)
    st.parent[t, copy] = v
    st.time[t, copy] = split_time
    new_leaf(st, t, leaf, v, split_time)
    st.feature[t, v] = j
    st.threshold[t, v] = threshold
    st.left[t, v] = copy if right_side else leaf
    st.right[t, v] = leaf if right_side else copy
    return leaf


@kernel
def log_mean_exp2(a: float, b: float) -> float:
    """``log((e^a + e^b) / 2)`` without overflow."""
    if a > b:
        return a + math.log1p(math.exp(b - a)) - math.log(2.0)
    return b + math.log1p(math.exp(a - b)) - math.log(2.0)


@kernel
def tree_learn(st: Any, t: int, x: np.ndarray, c: int) -> None:
    """Tree ``t`` learns ``(x, c)`` (``c`` = 0 for +1, 1 for -1): the walk down, then ``W`` up.

    One tree's arrays are taken once: passing the state record to a helper per node would cost
    a reference count per array per call."""
    h = st.hyper
    step, a, split_pure = h[STEP], h[DIRICHLET], h[SPLIT_PURE] != 0.0
    room = min(int(h[MAX_NODES]), st.left.shape[1])
    nc, lo, up, lw, lwt = st.node_counts[t], st.lower[t], st.upper[t], st.log_weight[t], st.log_weight_tree[t]
    left, right, parent = st.left[t], st.right[t], st.parent[t]
    feature, threshold = st.feature[t], st.threshold[t]
    time = st.time[t]
    v = 0
    at_new_leaf = False
    while True:
        n = nc[v, 0] + nc[v, 1]
        grown = -1
        if not at_new_leaf and n > 0.0 and st.n_nodes[t] + 2 <= room and (split_pure or nc[v, c] != n):
            e = 0.0  # the extension of v's box to x
            for j in range(x.shape[0]):
                if x[j] < lo[v, j]:
                    e += lo[v, j] - x[j]
                elif x[j] > up[v, j]:
                    e += x[j] - up[v, j]
            if e > 0.0:
                split_time = time[v] - math.log(1.0 - uniform(st.rng, t)) / e
                child = left[v]
                if child < 0 or split_time < time[child]:
                    grown = split(st, t, v, x, e, split_time)
        # v sees (x, c): its box grows to x, w_v takes the log-loss before the label, which is counted
        if n == 0.0:
            for j in range(x.shape[0]):
                lo[v, j] = x[j]
                up[v, j] = x[j]
        else:
            for j in range(x.shape[0]):
                if x[j] < lo[v, j]:
                    lo[v, j] = x[j]
                elif x[j] > up[v, j]:
                    up[v, j] = x[j]
        lw[v] += step * math.log((nc[v, c] + a) / (n + 2.0 * a))
        nc[v, c] += 1.0
        if at_new_leaf:
            break
        if grown >= 0:
            v = grown
            at_new_leaf = True
        elif left[v] < 0:
            break
        else:
            v = left[v] if x[feature[v]] <= threshold[v] else right[v]
    while v >= 0:
        if left[v] < 0:
            lwt[v] = lw[v]
        else:
            lwt[v] = log_mean_exp2(lw[v], lwt[left[v]] + lwt[right[v]])
        v = parent[v]


@kernel
def forest_update(st: Any, p: Any, idx: np.ndarray, val: np.ndarray, y: int, score: float,
                  rho: float) -> tuple[float, bool]:  # fmt: skip
    """Every tree learns ``(x, y)``; returns the forest's log-loss on ``y`` before the update,
    ``log(1 + exp(-y (score - log rho)))``, and ``True`` (every label moves the counts)."""
    x = dense(idx, val, st.lower.shape[2])
    c = 0 if y > 0 else 1
    for t in range(st.n_nodes.shape[0]):
        tree_learn(st, t, x, c)
    m = -y * (score - math.log(rho))
    loss = m + math.log1p(math.exp(-m)) if m > 0.0 else math.log1p(math.exp(m))
    return loss, True
