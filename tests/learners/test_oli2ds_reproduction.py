"""The OLI2DS code's protocol on WDBC: the spec's targets (identical to the authors' code) to 1e-4."""

from __future__ import annotations

import numpy as np
import pytest

from research.protocols import oli2ds as protocol
from service.datasets import read_label_last_csv

from ..conftest import dataset_path

TARGETS = {  # docs/learners.md §9: (F1 mean, std), (G-mean mean, std)
    "trapezoidal": ((0.9144, 0.0077), (0.9356, 0.0063)),
    "capricious": ((0.9277, 0.0093), (0.9458, 0.0074)),
}


@pytest.fixture(scope="module")
def wdbc() -> tuple[np.ndarray, np.ndarray]:
    data = read_label_last_csv(dataset_path("oli2ds", "wdbc.csv.xz"))
    return data.X.toarray(), data.y


@pytest.mark.parametrize("scheme", protocol.SCHEMES)
def test_wdbc_reaches_the_targets(scheme: protocol.Scheme, wdbc: tuple) -> None:
    result = protocol.evaluate("wdbc", *wdbc, scheme, protocol.learner_runner())
    (f1, f1_std), (g, g_std) = TARGETS[scheme]
    assert result.f1 == pytest.approx((f1, f1_std), abs=1e-4)
    assert result.g_mean == pytest.approx((g, g_std), abs=1e-4)
    if scheme == "trapezoidal":
        first = result.rounds[0]
        assert (first.tp, first.fn, first.tn, first.fp) == (201, 11, 333, 24)
        assert (first.f1, first.g_mean) == pytest.approx((0.919908, 0.940412), abs=1e-6)


def test_the_statistics_rule_matters_only_where_features_return(wdbc: tuple) -> None:
    """Trapezoidal: a new feature has h = 0, so Welford changes nothing; capricious: at most 0.0012."""
    for scheme, bound in (("trapezoidal", 0.0), ("capricious", 0.0012)):
        ours = protocol.evaluate("wdbc", *wdbc, scheme, protocol.learner_runner())
        welford = protocol.evaluate("wdbc", *wdbc, scheme, protocol.learner_runner(statistics="welford"))
        assert abs(ours.f1[0] - welford.f1[0]) <= bound


def test_the_reference_gives_the_same_rounds(wdbc: tuple) -> None:
    """The readable reference and the fast learner agree round for round (first two rounds)."""
    from research.reference import oli2ds as ref

    params = ref.Params(zero_is_missing=True)

    def reference(rows: list, y: np.ndarray, d: int) -> np.ndarray:
        stream = [dict(zip(idx.tolist(), val.tolist(), strict=True)) for idx, val in rows]
        return ref.run(stream, [int(v) for v in y], d, params)[1]

    fast = protocol.evaluate("wdbc", *wdbc, "capricious", protocol.learner_runner(), rounds=2)
    slow = protocol.evaluate("wdbc", *wdbc, "capricious", reference, rounds=2)
    assert fast.rounds == slow.rounds


def test_schemes_keep_what_the_code_keeps() -> None:
    kept = protocol.trapezoidal_kept(569, 30)
    assert [len(kept[i]) for i in (0, 56, 57, 568)] == [4, 4, 7, 30]
    capricious = protocol.capricious_kept(10, 5, 0)
    assert all(set(row) <= set(range(5)) for row in capricious)
    sizes = [len(row) for row in protocol.capricious_kept(1000, 5, 3)]
    assert max(sizes[:499]) <= 3 and min(sizes[499:]) >= 5  # k = 3 of 6 slots, then all 6 (one dummy)
