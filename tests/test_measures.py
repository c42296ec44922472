"""The running measures equal their definitions, all-time and windowed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.measures import Measures, Objective, WindowedMeasures

labels = st.lists(st.tuples(st.sampled_from([-1, 1]), st.sampled_from([-1, 1])), max_size=300)


@settings(max_examples=80, deadline=None)
@given(pairs=labels, alpha_p=st.floats(0.05, 0.95), c_p=st.floats(0.05, 0.95))
def test_measures_equal_their_definitions(pairs: list[tuple[int, int]], alpha_p: float, c_p: float) -> None:
    m = Measures(Objective(alpha_p, c_p))
    for y, yhat in pairs:
        m.update(y, yhat)
    y = np.array([p[0] for p in pairs], dtype=int)
    yhat = np.array([p[1] for p in pairs], dtype=int)
    t_p, t_n = int((y == 1).sum()), int((y == -1).sum())
    m_p, m_n = int(((y == 1) & (yhat == -1)).sum()), int(((y == -1) & (yhat == 1)).sum())
    assert (m.counts.t_p, m.counts.t_n, m.counts.m_p, m.counts.m_n) == (t_p, t_n, m_p, m_n)
    assert m.weighted_cost == pytest.approx(c_p * m_p + (1 - c_p) * m_n)
    assert m.rho_estimate == pytest.approx(alpha_p * (t_n + 1) / ((1 - alpha_p) * (t_p + 1)))
    if t_p and t_n:
        sens, spec = (t_p - m_p) / t_p, (t_n - m_n) / t_n
        assert m.weighted_sum == pytest.approx(alpha_p * sens + (1 - alpha_p) * spec)
    else:
        assert math.isnan(m.weighted_sum)
    batch = Measures.of(y, yhat, Objective(alpha_p, c_p))
    assert batch.counts == m.counts


@settings(max_examples=60, deadline=None)
@given(pairs=labels, size=st.integers(1, 40))
def test_window_equals_the_measures_of_the_last_n_labels(pairs: list[tuple[int, int]], size: int) -> None:
    w = WindowedMeasures(size)
    for y, yhat in pairs:
        w.update(y, yhat)
    tail = pairs[-size:] if pairs else []
    direct = Measures.of([p[0] for p in tail], [p[1] for p in tail])
    assert w.counts == direct.counts
    clone = WindowedMeasures(size)
    clone.load_state(w.to_state())
    clone.update(1, -1)
    w.update(1, -1)
    assert clone.counts == w.counts


def test_undefined_while_a_class_is_unseen() -> None:
    m = Measures()
    m.update(-1, -1)
    assert math.isnan(m.sensitivity) and m.specificity == 1.0
    with pytest.raises(ValueError):
        m.update(0, 1)
    with pytest.raises(ValueError, match="alpha_p"):
        Objective(alpha_p=1.0)
