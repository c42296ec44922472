"""``ACOGClassifier``: the library's learners as a river classifier, on named features.

>>> from river import datasets, evaluate, metrics
>>> from service.adapters.river_classifier import ACOGClassifier
>>> model = ACOGClassifier(max_features=9)
>>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.BalancedAccuracy())
BalancedAccuracy: 90.01%

An example ``x`` is a dict ``{name: value}``. It goes through the very code a service model
with named features runs (:class:`service.features.FeatureSpace`): the values are
L2-normalised over the names present (for the default ensemble they are passed as they are, and
each member reads them in its own input form: L2 or online standardisation), and each name gets
an index in the model's :class:`~service.features.FeatureRegistry` the first time it is *learned*
(names of one example in sorted order), up to ``max_features`` names (an open schema) or exactly
``feature_names`` (a closed one). At prediction time a name never learned weighs nothing.
So ``predict_one`` before ``learn_one`` on a stream, as river's progressive validation does,
gives exactly what the service answers for the same stream with every label applied at once.

Labels: ``True``/``1``/``+1`` is the positive class (the anomaly), ``False``/``0``/``-1``
the negative; ``predict_one`` answers ``True`` for ``sign(mu . x) = +1`` (with
``sign(0) = +1``), ``score_one`` answers the margin ``mu . x``. The learner's margin is not a
probability, so ``predict_proba_one`` is not offered (river's metrics that need one, such
as ``ROCAUC``, cannot be used).

Every other parameter is a field of the service's model configuration
(:class:`service.model_config.ModelConfig`: ``algorithm``, ``objective``, ``alpha_p``,
``c_p``, ``rho``, ``eta``, ``loss``, ...), with the service's defaults.
"""

from __future__ import annotations

from typing import Any

from river import base

from model_store import Example

from ..features import FeatureSpace
from ..learners import OnlineLearner
from ..learners.inputs import SparseVector
from ..model_config import ModelConfig


def plus_minus_one(y: Any) -> int:
    """A river binary label as the learners read it: +1 for the positive class, else -1."""
    if y is True or (not isinstance(y, bool) and y == 1):
        return 1
    if y is False or (not isinstance(y, bool) and y in (0, -1)):
        return -1
    raise ValueError(f"y: a binary label must be True/False, 1/0 or +1/-1, got {y!r}")


class ACOGClassifier(base.Classifier):
    """A cost-sensitive online classifier of the ACOG family over named features.

    Parameters
    ----------
    max_features
        How many distinct names the model may register (an open schema). ``None`` with
        ``feature_names`` closes the schema.
    feature_names
        Names known from the start (with ``max_features=None``: the only names accepted).
    params
        Fields of the service's model configuration (``algorithm``, ``objective``, ...).
    """

    def __init__(
        self, max_features: int | None = 1000, feature_names: list[str] | None = None, **params: Any
    ) -> None:
        self.max_features = max_features
        self.feature_names = feature_names
        self.params = params
        self.config = ModelConfig.model_validate(
            {**params, "max_features": max_features, "feature_names": feature_names}
        )
        self.space = FeatureSpace(self.config)
        self.learner: OnlineLearner = self.config.build_learner()
        self._last: tuple[dict[Any, Any], Example, SparseVector] | None = None

    @property
    def registry(self) -> list[str]:
        """The names registered so far, in index order."""
        assert self.space.registry is not None
        return list(self.space.registry.names)

    def learn_one(self, x: dict[base.typing.FeatureName, Any], y: base.typing.ClfTarget) -> None:
        """One online round: register ``x``'s new names, then learn ``(x, y)``."""
        label = plus_minus_one(y)
        example, _ = self._parse(x)
        self._last = None  # new names may be registered: a later score reads x afresh
        self.learner.learn_unchecked(self.space.vector(example), label)

    def score_one(self, x: dict[base.typing.FeatureName, Any]) -> float:
        """The margin ``mu . x`` (names not learned yet weigh nothing)."""
        return self.learner.score_unchecked(self._parse(x)[1])

    def _parse(self, x: dict[base.typing.FeatureName, Any]) -> tuple[Example, SparseVector]:
        """``x`` parsed (validated once, by the service's parser), or the parse of the previous call
        when ``x`` is equal to that call's example: progressive validation scores, then learns,
        the same ``x``, which is read once."""
        last = self._last
        if last is not None and last[0] == x:
            return last[1], last[2]
        copy = dict(x)
        example, vector = self.space.parse(copy, "x")
        self._last = (copy, example, vector)
        return example, vector

    def predict_one(self, x: dict[base.typing.FeatureName, Any], **kwargs: Any) -> bool:
        """``True`` (the positive class, an anomaly) when ``mu . x >= 0``."""
        return self.score_one(x) >= 0.0

    @classmethod
    def _unit_test_params(cls) -> Any:
        yield {"max_features": 50}
        yield {"max_features": 50, "algorithm": "arow", "objective": "cost", "c_p": 0.8}
