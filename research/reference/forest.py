"""Readable reference of the Aggregated Mondrian Forest: linked Python nodes, the recursion of the
paper as written, no attention to speed. The kernels (:mod:`.kernels`, parallel node arrays) are
tested against it (``tests/learners/test_maths.py``, ``tests/learners/test_forest.py``): they draw
the same uniforms from the same SplitMix64 streams (:mod:`.rng`) in the same order, so they grow the
same trees, and their scores agree to rounding (the kernels sum the aggregation root to leaf, this
file leaf to root). It is not used by the service.

A step has the shape of every reference step (:mod:`research.reference.steps`):
``(model, x, y, params, rho) -> model'``, a new model; ``model["forest"]`` is a :class:`Forest`.
Trees are persistent: a step copies the nodes on the path of ``x`` and shares the rest, so the
old model stays as it was at O(depth) cost.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from service.learners.forest.rng import initial_counters, uniform_int


@dataclass(eq=False)
class Node:
    """A node: its birth ``time``, the labels it saw ``counts = [n_+, n_-]``, its box, its weights
    ``w`` (``log_weight``) and ``W`` (``log_weight_tree``), and a split when it has children."""

    time: float
    counts: list[float] = field(default_factory=lambda: [0.0, 0.0])
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    w: float = 0.0
    W: float = 0.0
    feature: int = 0
    threshold: float = 0.0
    left: Node | None = None
    right: Node | None = None

    def child(self, x: np.ndarray) -> Node:
        assert self.left is not None and self.right is not None
        return self.left if x[self.feature] <= self.threshold else self.right

    def clone(self) -> Node:
        """A copy to change (its counts list copied; boxes are replaced, never written)."""
        twin = copy.copy(self)
        twin.counts = list(self.counts)
        return twin


@dataclass(eq=False)
class Tree:
    root: Node
    counter: int  # the SplitMix64 stream position
    size: int = 1

    def uniform(self) -> float:
        u, self.counter = uniform_int(self.counter)
        return u


@dataclass(eq=False)
class Forest:
    trees: list[Tree]


def initial_model(d: int, p: dict[str, Any]) -> dict[str, Any]:
    counters = initial_counters(int(p.get("seed", 0)), int(p.get("n_estimators", 10)))
    return {"forest": Forest([Tree(Node(0.0), int(c)) for c in counters])}


def _estimate(node: Node, a: float) -> tuple[float, float]:
    """The Dirichlet(a, a) posterior mean of ``(P(+), P(-))`` at ``node``."""
    n = node.counts[0] + node.counts[1]
    return (node.counts[0] + a) / (n + 2 * a), (node.counts[1] + a) / (n + 2 * a)


def tree_proba(tree: Tree, x: np.ndarray, p: dict[str, Any]) -> tuple[float, float]:
    """The aggregated prediction: at the leaf its estimate; above, ``b p_v + (1 - b) pred(child)``
    with ``b = exp(w_v - W_v) / 2``, from the leaf up to the root."""
    a = p.get("dirichlet", 0.5)
    path = [tree.root]
    while path[-1].left is not None:
        path.append(path[-1].child(x))
    pred = _estimate(path[-1], a)
    if not p.get("use_aggregation", True):
        return pred
    for node in reversed(path[:-1]):
        b = 0.5 * math.exp(node.w - node.W)
        own = _estimate(node, a)
        pred = (b * own[0] + (1 - b) * pred[0], b * own[1] + (1 - b) * pred[1])
    return pred


def score(model: dict[str, Any], x: np.ndarray, p: dict[str, Any], rho: float) -> float:
    """``log(p / q) + log(rho)`` for the forest's mean ``(p, q)``."""
    trees = model["forest"].trees
    probs = [tree_proba(t, x, p) for t in trees]
    pos = sum(pr[0] for pr in probs) / len(trees)
    neg = sum(pr[1] for pr in probs) / len(trees)
    return math.log(pos) - math.log(neg) + math.log(rho)


def _absorb(node: Node, x: np.ndarray, c: int, p: dict[str, Any]) -> None:
    a, step = p.get("dirichlet", 0.5), p.get("step", 1.0)
    if node.lower is None or node.upper is None:
        node.lower, node.upper = x.copy(), x.copy()
    else:
        node.lower, node.upper = np.minimum(node.lower, x), np.maximum(node.upper, x)
    n = node.counts[0] + node.counts[1]
    node.w += step * math.log((node.counts[c] + a) / (n + 2 * a))
    node.counts[c] += 1


def _split(tree: Tree, node: Node, x: np.ndarray, e: float, split_time: float) -> Node:
    """``node`` becomes the parent of a copy of itself and of a new leaf on ``x``'s side."""
    assert node.lower is not None and node.upper is not None
    ext = np.maximum(node.lower - x, 0) + np.maximum(x - node.upper, 0)
    target, acc, j = tree.uniform() * e, 0.0, 0
    for k in np.flatnonzero(ext > 0):  # feature k with probability ext_k / e
        j, acc = int(k), acc + ext[k]
        if acc > target:
            break
    u = tree.uniform()
    right_side = x[j] > node.upper[j]
    if right_side:
        threshold = node.upper[j] + u * (x[j] - node.upper[j])
        threshold = node.upper[j] if threshold >= x[j] else threshold
    else:
        threshold = x[j] + u * (node.lower[j] - x[j])
        threshold = x[j] if threshold >= node.lower[j] else threshold
    old = node.clone()  # keeps node's children
    old.time = split_time
    leaf = Node(split_time)
    node.feature, node.threshold = j, float(threshold)
    node.left, node.right = (old, leaf) if right_side else (leaf, old)
    tree.size += 2
    return leaf


def tree_learn(tree: Tree, x: np.ndarray, c: int, p: dict[str, Any]) -> Tree:
    """The online Mondrian extension along the path of ``x``, then ``W`` from the leaf up; a new
    tree sharing the nodes off the path."""
    tree = Tree(tree.root.clone(), tree.counter, tree.size)
    budget = p.get("max_nodes", 4096)
    path = [tree.root]
    while True:
        node = path[-1]
        n = node.counts[0] + node.counts[1]
        pure = node.counts[c] == n
        if n > 0 and tree.size + 2 <= budget and (p.get("split_pure", False) or not pure):
            assert node.lower is not None and node.upper is not None
            e = float(np.sum(np.maximum(node.lower - x, 0) + np.maximum(x - node.upper, 0)))
            if e > 0:
                split_time = node.time - math.log(1.0 - tree.uniform()) / e
                if node.left is None or split_time < node.left.time:
                    leaf = _split(tree, node, x, e, split_time)
                    _absorb(node, x, c, p)
                    _absorb(leaf, x, c, p)
                    path.append(leaf)
                    break
        _absorb(node, x, c, p)
        if node.left is None:
            break
        child = node.child(x)
        twin = child.clone()
        if child is node.left:
            node.left = twin
        else:
            node.right = twin
        path.append(twin)
    for up in reversed(path):
        if up.left is None or up.right is None:
            up.W = up.w
        else:
            m = max(up.w, up.left.W + up.right.W)
            up.W = m + math.log((math.exp(up.w - m) + math.exp(up.left.W + up.right.W - m)) / 2)
    return tree


def step(model: dict[str, Any], x: np.ndarray, y: int, p: dict[str, Any], rho: float) -> dict[str, Any]:
    """One label: every tree learns ``(x, y)``; a new model, ``model`` untouched."""
    x = np.asarray(x, dtype=np.float64)
    trees = [tree_learn(tree, x, 0 if y > 0 else 1, p) for tree in model["forest"].trees]
    return {**model, "forest": Forest(trees)}
