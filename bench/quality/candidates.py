"""The defaults study's candidates: member configurations, eta sub-grids and selection rules."""

from __future__ import annotations

from dataclasses import dataclass

from service.learners import DEFAULT_GRID
from service.model_config import ModelConfig

WIDE_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)


@dataclass(frozen=True)
class Base:
    """A member configuration: everything but eta."""

    algorithm: str = "acog"
    loss: str = "II"
    fit_intercept: bool = True
    intercept_value: float = 1.0
    transform: str = "l2"  # "l2" | "zscore" | "scale": online standardisation before the L2 norm

    @property
    def label(self) -> str:
        parts = [f"{self.algorithm}-{self.loss}"]
        parts.append(f"b={self.intercept_value:g}" if self.fit_intercept else "no intercept")
        if self.transform != "l2":
            parts.append(f"online {self.transform}")
        return ", ".join(parts)


STUDY_BASES = (
    Base(),
    Base(loss="I"),
    Base(fit_intercept=False),
    Base(loss="I", fit_intercept=False),
    Base(intercept_value=0.3),
    Base(intercept_value=3.0),
    Base(algorithm="acog-diag"),
    Base(algorithm="acog-diag", loss="I"),
    Base(transform="zscore"),
    Base(transform="scale"),
)


@dataclass(frozen=True)
class Candidate:
    """A possible default: member configurations (their union), a sub-grid and a rule."""

    label: str
    bases: tuple[Base, ...]
    grid: tuple[float, ...]
    rule: str = "leader"
    param: float = 0.0


DEFAULT_BASE = Base()
D5 = (0.01, 0.1, 1.0, 10.0, 100.0)
SERVICE_BASES: tuple[Base, ...] = (
    (DEFAULT_BASE, Base(loss="I")) if ModelConfig.model_fields["loss"].default == "auto" else (DEFAULT_BASE,)
)
"""The member configurations of the service's default model (loss "auto": loss II, then loss I)."""


def study_candidates() -> list[Candidate]:
    """Every candidate default: one change at a time from the previous defaults, then combinations."""
    x3 = (0.3, 1.0, 3.0, 10.0, 30.0)
    loss_i, no_b, b03 = Base(loss="I"), Base(fit_intercept=False), Base(intercept_value=0.3)
    both = (DEFAULT_BASE, loss_i)
    out = [Candidate("previous defaults: acog-II, b=1, grid 0.01..100, leader", (DEFAULT_BASE,), D5)]
    if tuple(DEFAULT_GRID) != D5:
        out.append(Candidate("current defaults (DEFAULT_GRID), leader", SERVICE_BASES, tuple(DEFAULT_GRID)))
    for w in (200, 500, 2000):
        out.append(Candidate(f"  rule: window {w}", (DEFAULT_BASE,), D5, "window", w))
    for h in (300, 1000, 3000):
        out.append(Candidate(f"  rule: discounted leader, half-life {h}", (DEFAULT_BASE,), D5, "discount", h))
    for b in (1.0, 4.0, 16.0):
        out.append(
            Candidate(f"  rule: hedge vote, beta = {b:g} sqrt(ln K / t)", (DEFAULT_BASE,), D5, "hedge", b)
        )
    grids = {
        "0.1..1000": (0.1, 1.0, 10.0, 100.0, 1000.0),
        "0.001..10": (0.001, 0.01, 0.1, 1.0, 10.0),
        "1..100 (3)": (1.0, 10.0, 100.0),
        "0.3..30 (x3, 5)": x3,
        "1..100 (x3, 5)": (1.0, 3.0, 10.0, 30.0, 100.0),
        "0.1..30 (x3, 6)": (0.1, 0.3, 1.0, 3.0, 10.0, 30.0),
        "0.3..100 (x3, 6)": (0.3, 1.0, 3.0, 10.0, 30.0, 100.0),
        "0.1..100 (x3, 7)": (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0),
        "0.01..100 (x3, 9)": (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0),
        "0.001..1000 (x3, 13)": WIDE_GRID,
    }
    for name, grid in grids.items():
        out.append(Candidate(f"  grid: {name}", (DEFAULT_BASE,), grid))
    for base in STUDY_BASES[1:]:
        out.append(Candidate(f"  members: {base.label}", (base,), D5))
    out += [
        Candidate("  members: loss I and II (K = 10)", both, D5),
        Candidate("  members: intercept on and off (K = 10)", (DEFAULT_BASE, no_b), D5),
        Candidate(
            "  members: loss I/II x intercept on/off (K = 20)",
            (DEFAULT_BASE, loss_i, no_b, Base(loss="I", fit_intercept=False)),
            D5,
        ),
        Candidate(
            "  members: acog-II full and diag (K = 10)", (DEFAULT_BASE, Base(algorithm="acog-diag")), D5
        ),
        Candidate("  combined: grid 0.3..30 (x3), b=0.3", (b03,), x3),
        Candidate("  combined: grid 0.3..30 (x3), hedge 4", (DEFAULT_BASE,), x3, "hedge", 4.0),
        Candidate("  combined: grid 0.3..30 (x3), loss I and II (K = 10)", both, x3),
        Candidate("  combined: grid 0.1..100 (x3), loss I and II (K = 14)", both, grids["0.1..100 (x3, 7)"]),
        Candidate("  combined: loss I and II, hedge 4 (K = 10)", both, D5, "hedge", 4.0),
        Candidate(
            "  combined: loss I and II, b=0.3 (K = 10)", (b03, Base(loss="I", intercept_value=0.3)), D5
        ),
        Candidate("  combined: loss I and II, grid 1..100 (K = 6)", both, (1.0, 10.0, 100.0)),
        Candidate("  combined: loss I and II, grid 0.1..100 (K = 8)", both, (0.1, 1.0, 10.0, 100.0)),
        Candidate("  combined: online zscore, grid 0.3..30 (x3)", (Base(transform="zscore"),), x3),
        Candidate(
            "  combined: online zscore, loss I and II, grid 0.3..30 (x3) (K = 10)",
            (Base(transform="zscore"), Base(transform="zscore", loss="I")),
            x3,
        ),
    ]
    return out


def oracle_label(base: Base) -> str:
    return f"  hindsight: best single eta of 0.001..1000 per data set, {base.label}"
