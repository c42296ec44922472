"""The default ensemble votes as the combiner study's chosen rule (``bench.quality.combiners``: the
margin vote at rate 0.1 with the group prior and the vote's own threshold), prediction for
prediction on a real stream, for both objectives: the study's figures are the service's."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from bench.quality import combiners
from bench.quality.protocol import load_stream
from service.model_config import ModelConfig


@pytest.mark.parametrize("metric", ["sum", "cost"])
def test_the_default_predicts_as_the_chosen_rule_of_the_study(metric: str) -> None:
    args = argparse.Namespace(permutations=1, small_permutations=1, seed=0, positive_label=None)
    stream = load_stream("german", args)
    X, y = stream.raw[stream.orders[0]], stream.y[stream.orders[0]]
    scores = combiners.member_scores(X, y, stream.d, metric)
    want = combiners.RULES[combiners.CHOSEN](scores, y, metric, combiners.roster(stream.d))
    learner = ModelConfig(n_features=stream.d, objective=metric).build_learner()
    got = np.where(learner.run(X, y).scores >= 0.0, 1, -1)
    assert np.array_equal(got, want)
