"""The imbalanced variants of a data set (``bench.quality.protocol.with_positive_share``) that the
combiner study replays: the share asked for, every negative kept in its order, seeded."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from bench.quality.protocol import Stream, with_positive_share


def stream(n: int = 400, positives: int = 160) -> Stream:
    rng = np.random.default_rng(1)
    X = sp.csr_matrix(rng.normal(size=(n, 4)))
    y = np.where(np.arange(n) < positives, 1, -1)[rng.permutation(n)]
    orders = np.stack([rng.permutation(n) for _ in range(3)])
    return Stream("toy", X, y, orders, X * 2.0)


def test_the_positives_are_subsampled_to_the_share_and_every_negative_is_kept() -> None:
    full = stream()
    variant = with_positive_share(full, 0.05)
    negatives = full.raw[full.y == -1].toarray()
    assert np.array_equal(variant.raw[variant.y == -1].toarray(), negatives)  # all of them, in order
    positives = int(np.count_nonzero(variant.y == 1))
    assert positives == round(0.05 / 0.95 * 240) and variant.n == 240 + positives
    assert np.array_equal(variant.X.toarray() * 2.0, variant.raw.toarray())  # rows and raw rows agree
    assert variant.orders.shape == (3, variant.n)
    assert all(np.array_equal(np.sort(o), np.arange(variant.n)) for o in variant.orders)
    assert variant.name == "toy, 5 % positives"


def test_the_variant_is_the_same_every_time_and_differs_by_share() -> None:
    full = stream()
    a, b = with_positive_share(full, 0.05), with_positive_share(full, 0.05)
    assert np.array_equal(a.raw.toarray(), b.raw.toarray()) and np.array_equal(a.orders, b.orders)
    assert with_positive_share(full, 0.03).n < a.n
    assert int(np.count_nonzero(with_positive_share(stream(positives=3), 0.05).y == 1)) == 3  # all there are
