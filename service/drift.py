"""Drift detection on a model's online loss: a one-sided Page-Hinkley test.

Each label gives the model a loss before it learns from it (prequential, test then train)::

    x_t = w_{y_t} * [yhat_t != y_t]        yhat_t = sign(mu_{t-1} . x_t)

the mistake of the model as it was *before* the update, weighted by the cost of the label's class
and scaled into [0, 1]: ``(w_+, w_-) = (c_p, c_n) / max(c_p, c_n)`` for the ``cost`` objective,
``(alpha_p, alpha_n) / max(alpha_p, alpha_n)`` for ``sum`` (equal weights, plain 0/1 mistakes, at
the default ``alpha_p = 0.5``). It is computed from the label log alone (the entry's example and
label, and the model's state before it), so every replica and every replay computes the same bits.

The test (Page 1954; Hinkley 1971; the form of Gama et al. 2013, "On evaluating stream learning
algorithms") looks for an increase of the loss's mean. Since its last reset it keeps ``n`` losses,
their running mean ``xbar_t`` and the cumulative statistic::

    g_t = max(0, g_{t-1} + x_t - xbar_t - delta)        (g_0 = 0)

which equals ``m_t - min_{i<=t} m_i`` for ``m_t = sum_{i<=t} (x_i - xbar_i - delta)``. It signals a
drift when ``n >= MIN_LABELS`` and ``g_t > LAMBDA``, then resets (``n = 0``, ``g = 0``): the next
detection needs a new change. ``delta`` is the size of increase tolerated as noise: under a
stationary loss the walk drifts down by ``delta`` per label; after an increase of the mean by
``D > delta`` it climbs by about ``D - delta`` per label, so the delay is about
``LAMBDA / (D - delta)`` labels. The thresholds (``delta = 0.05``, ``LAMBDA = 12``,
``MIN_LABELS = 30``) were chosen on tuning generators and seeds of ``bench/drift.py`` that are
not the reported ones; docs/benchmarks.md#drift reports the delays and false alarms they give.

The state is five plain numbers (``to_state``), part of the model's checkpoint: a restored model
carries on with the same statistic. The arithmetic is Python floats in a fixed order, so it is
the same on every replica.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DELTA = 0.05
"""Increase of the mean loss tolerated as noise (loss units, the loss lies in [0, 1])."""
LAMBDA = 12.0
"""Alarm threshold on ``g_t``."""
MIN_LABELS = 30
"""Labels since the last reset before an alarm can be raised."""


def class_weights(objective: str, alpha_p: float, c_p: float) -> tuple[float, float]:
    """``(w_+, w_-)``: the weight of a mistake on a positive and on a negative label, max 1."""
    p = c_p if objective == "cost" else alpha_p
    n = 1.0 - p
    top = max(p, n)
    return p / top, n / top


@dataclass(slots=True)
class PageHinkley:
    """A one-sided Page-Hinkley test for an increase of the mean; see the module docstring."""

    delta: float = DELTA
    threshold: float = LAMBDA
    min_labels: int = MIN_LABELS
    n: int = 0
    """Losses seen since the last reset."""
    mean: float = 0.0
    """Their running mean ``xbar_t``."""
    g: float = 0.0
    """The statistic ``g_t``."""
    detections: int = 0
    """Drifts signalled so far (never reset)."""
    last_detection: int = 0
    """The model version (log position) of the last drift signalled; 0 for none."""

    def update(self, x: float, position: int) -> bool:
        """Add the loss ``x`` of the label at log position ``position``; True if it signals a drift."""
        self.n += 1
        self.mean += (x - self.mean) / self.n
        self.g = max(0.0, self.g + x - self.mean - self.delta)
        if self.n >= self.min_labels and self.g > self.threshold:
            self.detections += 1
            self.last_detection = position
            self.n, self.mean, self.g = 0, 0.0, 0.0
            return True
        return False

    def to_state(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean": self.mean,
            "g": self.g,
            "detections": self.detections,
            "last_detection": self.last_detection,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        n, mean, g = int(state["n"]), float(state["mean"]), float(state["g"])
        detections, last = int(state["detections"]), int(state["last_detection"])
        if n < 0 or detections < 0 or last < 0 or not g >= 0.0:
            raise ValueError(f"drift detector state out of range: {state!r}")
        self.n, self.mean, self.g, self.detections, self.last_detection = n, mean, g, detections, last

    def describe(self) -> dict[str, Any]:
        """For ``GET /models/{name}``: the test, its thresholds and where it stands."""
        return {
            "detector": "page_hinkley",
            "delta": self.delta,
            "threshold": self.threshold,
            "min_labels": self.min_labels,
            "statistic": self.g,
            "labels_since_reset": self.n,
            "mean_loss_since_reset": self.mean,
            "detections": self.detections,
            "last_detection_version": self.last_detection or None,
        }


POLICIES = ("none", "reset", "challenger")
"""What a model does when its detector signals: nothing (count it); ``reset``: the learner starts
afresh (a new learner of the model's current schema) right after the label that signalled, while the
measures, the feature registry and the detector carry on; ``challenger``: a fresh challenger of the
model's configuration, named ``DRIFT_CHALLENGER``, starts learning from the next label (replacing the
one a previous drift started), if the model's challenger limit (written into the policy's entry)
leaves room; promote it when it does better. The policy is set by a log entry (``POLICY_EVENT``), so
every replica responds at the same label."""
DRIFT_CHALLENGER = "drift"
"""The name of the challenger the ``challenger`` policy starts."""
POLICY_EVENT = "drift_policy"
"""The kind of the log entry that sets a model's policy; its body is ``{"on_drift": policy}``."""


class DriftMonitor:
    """A model's drift detector, the class weights of its loss and its policy (module docstring)."""

    __slots__ = ("detector", "limit", "policy", "resets", "w_neg", "w_pos")

    def __init__(self, objective: str, alpha_p: float, c_p: float) -> None:
        self.w_pos, self.w_neg = class_weights(objective, alpha_p, c_p)
        self.detector = PageHinkley()
        self.policy = "none"
        self.limit = 0
        """The model's challenger limit when the policy was set (for ``challenger``)."""
        self.resets = 0
        """Responses the policy made (learner resets, or challengers started)."""

    def loss(self, y: int, yhat: int) -> float:
        """``x_t``: the weighted mistake of ``yhat`` on the true label ``y``."""
        if y == yhat:
            return 0.0
        return self.w_pos if y == 1 else self.w_neg

    def observe(self, y: int, yhat: int, position: int) -> bool:
        """The model predicted ``yhat`` (before learning) for the label ``y`` at ``position``."""
        return self.detector.update(self.loss(y, yhat), position)

    @property
    def detections(self) -> int:
        return self.detector.detections

    def to_state(self) -> dict[str, Any]:
        return {**self.detector.to_state(), "policy": self.policy, "limit": self.limit, "resets": self.resets}

    def load_state(self, state: dict[str, Any]) -> None:
        """The detector's state, and the policy (``none`` in a state written before policies)."""
        policy, resets = str(state.get("policy", "none")), int(state.get("resets", 0))
        limit = int(state.get("limit", 0))
        if policy not in POLICIES or resets < 0 or limit < 0:
            raise ValueError(f"drift policy state out of range: {policy!r}, {limit}, {resets}")
        self.detector.load_state(state)
        self.policy, self.limit, self.resets = policy, limit, resets

    def describe(self) -> dict[str, Any]:
        return {**self.detector.describe(), "on_drift": self.policy, "resets": self.resets}
