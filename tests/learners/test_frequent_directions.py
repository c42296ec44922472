"""The Frequent Directions sketch against its bounds (docs/learners.md §8, acceptance tests 1, 2, 5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.reference import sdrogd as ref
from service.learners.frequent_directions import FrequentDirections, covariance_error, error_bound


def check_bounds(X: np.ndarray, B: np.ndarray, ell: int) -> float:
    """Both FD bounds for the rows ``X`` inserted so far; returns ||X'X - B'B|| / bound."""
    frob = float(np.sum(X * X))
    lam_min, spectral = covariance_error(X, B)
    assert lam_min >= -1e-9 * max(frob, 1.0)
    bound = error_bound(X, B, ell)
    assert spectral <= bound + 1e-9 * max(frob, 1.0)
    assert bound <= 2 * frob / ell + 1e-12  # the paper's Lemma 1 follows
    return spectral / bound if bound > 0 else 0.0


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    d=st.integers(2, 9),
    ell=st.integers(1, 5),
    n=st.integers(1, 40),
    rank=st.integers(1, 9),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
)
def test_fd_bounds_hold_after_every_insert(
    seed: int, d: int, ell: int, n: int, rank: int, scale: float
) -> None:
    rng = np.random.default_rng(seed)
    basis = rng.normal(size=(min(rank, d), d))
    X = scale * rng.normal(size=(n, basis.shape[0])) @ basis * rng.lognormal(size=(n, 1))
    X[rng.random(n) < 0.1] = 0.0  # zero rows are skipped [decision]
    fd = FrequentDirections(d, ell)
    for i, x in enumerate(X):
        fd.insert(x)
        check_bounds(X[: i + 1], fd.B, ell)
        assert not fd.B[fd.filled :].any()  # rows past `filled` stay zero


def test_numba_sketch_equals_the_reference_sketch() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 12)) * rng.lognormal(size=(200, 1))
    fd, m = FrequentDirections(12, 4), {"B": np.zeros((8, 12)), "filled": 0}
    for x in X:
        fd.insert(x)
        ref.fd_insert(m, x, 4)
        assert fd.filled == m["filled"]
        np.testing.assert_allclose(fd.covariance(), m["B"].T @ m["B"], rtol=1e-9, atol=1e-9)


def test_upper_half_alone_breaks_lemma_1() -> None:
    """The spec's counterexample for the paper's C (the top l rows): d=8, l=4."""
    ell, d = 4, 8
    X = np.vstack([1e-3 * np.eye(d)[:4], 10 * np.eye(d)[4]])
    fd = FrequentDirections(d, ell)
    for x in X:
        fd.insert(x)
    C = fd.B[:ell]
    assert np.linalg.norm(X.T @ X - C.T @ C, 2) == pytest.approx(100.0)
    assert np.linalg.norm(X.T @ X - C.T @ C, 2) > 2 * np.sum(X * X) / ell  # 100 > 50
    check_bounds(X, fd.B, ell)  # all 2l rows keep the bound


@pytest.mark.parametrize("ell", [6, 7, 10])
def test_the_sketch_is_exact_when_l_is_at_least_d(ell: int) -> None:
    rng = np.random.default_rng(ell)
    X = rng.normal(size=(300, 6))
    fd = FrequentDirections(6, ell)
    for x in X:
        fd.insert(x)
    np.testing.assert_allclose(fd.covariance(), X.T @ X, rtol=1e-9, atol=1e-9 * np.sum(X * X))


def test_flipping_the_signs_of_singular_vectors_changes_nothing() -> None:
    rng = np.random.default_rng(8)
    flips = rng.choice([-1.0, 1.0], size=64)

    def flipped_svd(B: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        U, s, V = ref.numpy_svd(B)
        f = flips[: s.shape[0]]
        return U * f, s, V * f[:, None]

    X = rng.normal(size=(90, 7))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=90) > 0, 1, -1)
    params = {"sketch_fraction": 0.4, "batch_size": 5, "lda_weight": 0.6, "lam": 0.1}
    plain = ref.run("sdrogd", X, y, **params)
    other = ref.run("sdrogd", X, y, svd=flipped_svd, **params)
    assert not np.array_equal(plain["B"], other["B"])  # the rows did change sign
    np.testing.assert_allclose(plain["B"].T @ plain["B"], other["B"].T @ other["B"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(plain["w"], other["w"], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("d", [5, 40, 300])
def test_the_wide_path_factorises_like_lapacks_svd(d: int) -> None:
    """``thin_svd`` goes through a QR of B' when d >= 4 r: same singular values, same B'B."""
    from service.learners.frequent_directions import thin_svd

    rng = np.random.default_rng(d)
    B = rng.normal(size=(8, d)) * rng.lognormal(size=(8, 1))
    sigma, V = thin_svd(B)
    expected = np.linalg.svd(B, compute_uv=False)
    np.testing.assert_allclose(sigma, expected, rtol=1e-12, atol=1e-12 * expected[0])
    np.testing.assert_allclose(V @ V.T, np.eye(V.shape[0]), atol=1e-12)
    np.testing.assert_allclose(
        (sigma[:, None] * V).T @ (sigma[:, None] * V), B.T @ B, atol=1e-10 * expected[0] ** 2
    )
