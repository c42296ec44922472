"""The members' counts (:class:`service.learners.selection.Tally`): the compiled one-label record
(the tally's part of the ensemble's one compiled call a label, ``hedge.label_round``) is the numpy
step it replaces, and both agree with the batch record over a stream."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from service.learners.hedge import VoteState
from service.learners.selection import Tally, steps_of


@st.composite
def streams(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """Labels ``(n,)``, the members' predictions ``(n, K)`` (both in {-1, +1}) and a window."""
    k = draw(st.integers(1, 6))
    n = draw(st.integers(0, 40))
    signs = st.sampled_from([-1, 1])
    labels = np.array(draw(st.lists(signs, min_size=n, max_size=n)), dtype=np.int64)
    rows = draw(st.lists(st.lists(signs, min_size=k, max_size=k), min_size=n, max_size=n))
    predictions = np.array(rows, dtype=np.int8).reshape(n, k)
    return labels, predictions, draw(st.integers(1, 12))


def numpy_record(tally: Tally, step: np.ndarray) -> None:
    """One label's step ``(K, 4)`` into the counts, in numpy (the per-label record before the
    compiled one)."""
    slot = int(tally.cursor[0])
    tally.counts += step
    tally.window_counts += step.astype(np.int64) - tally.recent[slot]
    tally.recent[slot] = step
    tally.cursor[0] = (slot + 1) % tally.window
    tally.cursor[1] += 1


def state(tally: Tally) -> list[np.ndarray]:
    return [tally.counts, tally.window_counts, tally.recent, tally.cursor]


@settings(max_examples=150, deadline=None)
@given(streams())
def test_one_compiled_record_per_label_is_the_numpy_step_and_the_batch(
    stream: tuple[np.ndarray, np.ndarray, int],
) -> None:
    labels, predictions, window = stream
    k = predictions.shape[1]
    compiled, stepped, batch = Tally(k, window), Tally(k, window), Tally(k, window)
    votes = VoteState(np.full(k, 1.0 / k))
    for label, row in zip(labels, predictions, strict=True):  # the members' scores: their signs
        votes.learn_label(row.astype(np.float64), int(label), compiled, False, False, 0.5, 0.9)
        numpy_record(stepped, steps_of(np.array([label]), row[None, :])[0])
    batch.record_many(steps_of(labels, predictions))
    for a, b, c in zip(state(compiled), state(stepped), state(batch), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b) and np.array_equal(a, c)
