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
from ..posterior import bias as rho_bias
from ..posterior import decision_loss, decision_score, dense
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

PACKS = (
    ("parent", "left", "right", "feature"), ("threshold", "time", "log_weight", "log_weight_tree"),
    ("node_counts",), ("lower", "upper"),
)  # fmt: skip
"""How the learner holds the node arrays: each group stacked in one block along a new first axis
(the links, the node scalars, the counts, the boxes), each array a C-contiguous view of its block,
so that a call passes 8 arrays, not 15 (:func:`forest_record`)."""

HYPER = (
    "step", "dirichlet", "use_aggregation", "split_pure", "max_nodes", "rho_mode", "rho_fixed", "alpha_p",
)  # fmt: skip
"""The entries of ``hyper``, in order."""
STEP, DIRICHLET, AGGREGATE, SPLIT_PURE, MAX_NODES, RHO_MODE, RHO_FIXED, ALPHA_P = range(len(HYPER))


@kernel
def forest_record(
    counts: np.ndarray, hyper: np.ndarray, n_nodes: np.ndarray, rng: np.ndarray, links: np.ndarray,
    scalars: np.ndarray, node_counts: np.ndarray, boxes: np.ndarray,
) -> Any:  # fmt: skip
    """The state record of the learner's plain tuple: the first four arrays, then the node arrays
    as views of their blocks (:data:`PACKS`); the kernels see the record they always see."""
    return ForestState(
        counts, hyper, n_nodes, rng, links[0], links[1], links[2], links[3], scalars[0], scalars[1],
        node_counts[0], scalars[2], scalars[3], boxes[0], boxes[1],
    )  # fmt: skip


@kernel
def bias(st: Any) -> float:
    """``rho`` for the next label: the driver's rule (:func:`service.learners.driver.current_rho`)."""
    h = st.hyper
    return rho_bias(st.counts, h[RHO_MODE], h[RHO_FIXED], h[ALPHA_P])


@kernel
def forest_proba(st: Any, x: np.ndarray) -> tuple[float, float]:
    """The forest's ``(P(+|x), P(-|x))``: the mean over the trees of their aggregated predictions,
    each root to leaf in one pass (one loop over the trees, the arrays indexed in place)."""
    a = st.hyper[DIRICHLET]
    aggregate = st.hyper[AGGREGATE] != 0.0
    nc, lw, lwt = st.node_counts, st.log_weight, st.log_weight_tree
    left, right, feature, threshold = st.left, st.right, st.feature, st.threshold
    n_trees = st.n_nodes.shape[0]
    p_sum = 0.0
    q_sum = 0.0
    for t in range(n_trees):
        p = 0.0
        q = 0.0
        rest = 1.0  # prod over the nodes above of (1 - b)
        v = 0
        while True:
            n = nc[t, v, 0] + nc[t, v, 1]
            pv = (nc[t, v, 0] + a) / (n + 2.0 * a)
            qv = (nc[t, v, 1] + a) / (n + 2.0 * a)
            if left[t, v] < 0:
                p_sum += p + rest * pv
                q_sum += q + rest * qv
                break
            if aggregate:
                b = 0.5 * math.exp(lw[t, v] - lwt[t, v])
                p += rest * b * pv
                q += rest * b * qv
                rest *= 1.0 - b
            v = left[t, v] if x[feature[t, v]] <= threshold[t, v] else right[t, v]
    return p_sum / n_trees, q_sum / n_trees


@kernel
def tree_proba(
    st: Any, t: int, v: int, x: np.ndarray, p: float, q: float, rest: float
) -> tuple[float, float]:
    """The rest of tree ``t``'s term in :func:`forest_proba`, from node ``v`` down, given the sums
    ``p``, ``q`` and ``rest`` of the nodes above: the same operations in the same order."""
    a = st.hyper[DIRICHLET]
    aggregate = st.hyper[AGGREGATE] != 0.0
    nc, lw, lwt = st.node_counts, st.log_weight, st.log_weight_tree
    while True:
        n = nc[t, v, 0] + nc[t, v, 1]
        pv = (nc[t, v, 0] + a) / (n + 2.0 * a)
        qv = (nc[t, v, 1] + a) / (n + 2.0 * a)
        if st.left[t, v] < 0:
            return p + rest * pv, q + rest * qv
        if aggregate:
            b = 0.5 * math.exp(lw[t, v] - lwt[t, v])
            p += rest * b * pv
            q += rest * b * qv
            rest *= 1.0 - b
        v = st.left[t, v] if x[st.feature[t, v]] <= st.threshold[t, v] else st.right[t, v]


@kernel
def forest_score(st: Any, idx: np.ndarray, val: np.ndarray) -> float:
    """``log(p / q) + log(rho)``: its sign is the cost-optimal decision ``p >= 1 / (1 + rho)``
    (:mod:`service.learners.posterior`)."""
    p, q = forest_proba(st, dense(idx, val, st.lower.shape[2]))
    return decision_score(p, q, bias(st))


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
def forest_learn(st: Any, x: np.ndarray, c: int) -> tuple[float, float]:
    """Every tree learns ``(x, c)`` (``c`` = 0 for +1, 1 for -1): the walk down, then ``W`` up.
    Returns the forest's ``(P(+|x), P(-|x))`` *before* the label, :func:`forest_proba`'s sums in its
    order: the walk down is the prediction's walk, each node's term taken before the node learns,
    until a split leaves the old path, whose rest (nodes this label does not change) is then walked
    as :func:`forest_proba` walks it. So a round scores and learns in one pass.

    One loop over the trees, the arrays indexed by ``[t, v]`` in place: a view per tree, or the
    state record passed to a helper per tree or node, costs reference counting on every array."""
    h = st.hyper
    step, a, split_pure = h[STEP], h[DIRICHLET], h[SPLIT_PURE] != 0.0
    aggregate = h[AGGREGATE] != 0.0
    room = min(int(h[MAX_NODES]), st.left.shape[1])
    nc, lo, up, lw, lwt = st.node_counts, st.lower, st.upper, st.log_weight, st.log_weight_tree
    left, right, parent = st.left, st.right, st.parent
    feature, threshold, time = st.feature, st.threshold, st.time
    n_trees = st.n_nodes.shape[0]
    p_sum = 0.0
    q_sum = 0.0
    for t in range(n_trees):
        v = 0
        at_new_leaf = False
        scoring = True  # v lies on the prediction's path and its term is still to be taken
        p = 0.0
        q = 0.0
        rest = 1.0
        while True:
            n = nc[t, v, 0] + nc[t, v, 1]
            if scoring:  # forest_proba's term for v, before v learns
                pv = (nc[t, v, 0] + a) / (n + 2.0 * a)
                qv = (nc[t, v, 1] + a) / (n + 2.0 * a)
                if left[t, v] < 0:
                    p_sum += p + rest * pv
                    q_sum += q + rest * qv
                    scoring = False
                elif aggregate:
                    b = 0.5 * math.exp(lw[t, v] - lwt[t, v])
                    p += rest * b * pv
                    q += rest * b * qv
                    rest *= 1.0 - b
            grown = -1
            inside = False  # x is known to lie in v's box: the box stays
            if not at_new_leaf and n > 0.0 and st.n_nodes[t] + 2 <= room and (split_pure or nc[t, v, c] != n):
                e = 0.0  # the extension of v's box to x
                for j in range(x.shape[0]):
                    if x[j] < lo[t, v, j]:
                        e += lo[t, v, j] - x[j]
                    elif x[j] > up[t, v, j]:
                        e += x[j] - up[t, v, j]
                inside = e == 0.0
                if e > 0.0:
                    split_time = time[t, v] - math.log(1.0 - uniform(st.rng, t)) / e
                    child = left[t, v]
                    if child < 0 or split_time < time[t, child]:
                        if scoring:  # the prediction goes on below v, in the subtree the split keeps
                            below = left[t, v] if x[feature[t, v]] <= threshold[t, v] else right[t, v]
                            pt, qt = tree_proba(st, t, below, x, p, q, rest)
                            p_sum += pt
                            q_sum += qt
                            scoring = False
                        grown = split(st, t, v, x, e, split_time)
            # v sees (x, c): its box grows to x, w_v takes the log-loss before the label, which is counted
            if n == 0.0:
                for j in range(x.shape[0]):
                    lo[t, v, j] = x[j]
                    up[t, v, j] = x[j]
            elif not inside:
                for j in range(x.shape[0]):
                    if x[j] < lo[t, v, j]:
                        lo[t, v, j] = x[j]
                    elif x[j] > up[t, v, j]:
                        up[t, v, j] = x[j]
            lw[t, v] += step * math.log((nc[t, v, c] + a) / (n + 2.0 * a))
            nc[t, v, c] += 1.0
            if at_new_leaf:
                break
            if grown >= 0:
                v = grown
                at_new_leaf = True
            elif left[t, v] < 0:
                break
            else:
                v = left[t, v] if x[feature[t, v]] <= threshold[t, v] else right[t, v]
        while v >= 0:
            if left[t, v] < 0:
                lwt[t, v] = lw[t, v]
            else:
                lwt[t, v] = log_mean_exp2(lw[t, v], lwt[t, left[t, v]] + lwt[t, right[t, v]])
            v = parent[t, v]
    return p_sum / n_trees, q_sum / n_trees


@kernel
def forest_update(st: Any, p: Any, idx: np.ndarray, val: np.ndarray, y: int, score: float,
                  rho: float) -> tuple[float, bool]:  # fmt: skip
    """Every tree learns ``(x, y)``; returns the forest's log-loss on ``y`` before the update,
    ``log(1 + exp(-y (score - log rho)))``, and ``True`` (every label moves the counts). The
    driver runs :func:`forest_step`, which is this with the score taken on the way."""
    x = dense(idx, val, st.lower.shape[2])
    forest_learn(st, x, 0 if y > 0 else 1)
    return decision_loss(y, score, rho), True


@kernel
def forest_step(st: Any, p: Any, idx: np.ndarray, val: np.ndarray, y: int,
                rho: float) -> tuple[float, float, bool]:  # fmt: skip
    """:func:`forest_score` then :func:`forest_update` in one walk per tree (:func:`forest_learn`
    returns the posterior before the label): ``(score, loss, True)``, the same bits as the pair."""
    x = dense(idx, val, st.lower.shape[2])
    p_plus, p_minus = forest_learn(st, x, 0 if y > 0 else 1)
    s = decision_score(p_plus, p_minus, bias(st))
    return s, decision_loss(y, s, rho), True
