"""The paper's figures, parsed from ``docs/paper-figures.md``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.reproduction.plans import ORDER

PAPER_RESULTS = Path(__file__).resolve().parents[2] / "docs" / "paper-figures.md"
"""``docs/paper-figures.md``: the paper's tables, restated."""


@dataclass(frozen=True)
class Figure:
    """A printed ``mean ± std`` (three decimals)."""

    text: str
    mean: float
    std: float | None

    @classmethod
    def parse(cls, text: str) -> Figure:
        parts = [p.strip() for p in text.split("±")]
        return cls(text.strip(), float(parts[0]), float(parts[1]) if len(parts) > 1 else None)


@dataclass
class PaperRow:
    """One algorithm's printed cells: ``{"sum": [sum, sens, spec], "cost": [cost, sens, spec]}``
    (Tables VI and VIII print only the first cell)."""

    cells: dict[str, list[Figure]] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)


def table_sections(text: str) -> dict[str, list[list[str]]]:
    """``### heading`` -> the table rows under it (cells stripped), header and rule excluded."""
    sections: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    for line in text.splitlines():
        if line.startswith("### "):
            current = sections.setdefault(line[4:].strip(), [])
        elif current is not None and line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] in ("algorithm", "---") or set(cells[0]) <= {"-"}:
                continue
            current.append(cells)
    return sections


def paper_rows(text: str) -> tuple[dict[str, dict[str, PaperRow]], list[list[str]]]:
    """Per data set and algorithm, the paper's cells; plus the unlabeled 5-cell rows (set aside)."""
    sections = table_sections(text)
    out: dict[str, dict[str, PaperRow]] = {name: {} for name in ORDER}
    unlabeled: list[list[str]] = []

    def put(ds: str, algo: str, metric: str, figures: list[Figure], where: str) -> None:
        row = out[ds].setdefault(algo, PaperRow())
        row.cells.setdefault(metric, figures)  # Table V first; Table VI repeats SSACOG
        row.source.setdefault(metric, where)

    for ds, heading in (
        ("a9a", "a9a (Table II)"),
        ("german", "german (Table II)"),
        ("ijcnn1", "ijcnn1 (Table II)"),
        ("mushrooms", "mushrooms (Table V)"),
        ("usps", "usps (Table V)"),
    ):
        where = heading[heading.index("(") + 1 : -1]
        for cells in sections[heading]:
            if len(cells) != 9:
                unlabeled.append(cells)
                continue
            put(ds, cells[0], "sum", [Figure.parse(c) for c in cells[1:4]], where)
            put(ds, cells[0], "cost", [Figure.parse(c) for c in cells[5:8]], where)
    for heading, columns in (
        (
            "Table VI: SACOG vs SSACOG (mushrooms: sum %, time s, cost, time s; protein: sum %, time s, "
            "cost, "
            "time s)",
            {"mushrooms": (1, 3)},
        ),
        (
            "Table VI: SACOG vs SSACOG (Sensorless: sum %, time s, cost, time s; usps: sum %, time s, cost, "
            "time s)",
            {"usps": (5, 7)},
        ),
    ):
        for cells in sections[heading]:
            for ds, (s, c) in columns.items():
                put(ds, cells[0], "sum", [Figure.parse(cells[s])], "Table VI")
                put(ds, cells[0], "cost", [Figure.parse(cells[c])], "Table VI")
    for ds, heading in (
        ("australian", "Table VIII: Australian (sum %, time s)"),
        ("dna", "Table VIII: DNA (sum %, time s)"),
    ):
        for cells in sections[heading]:
            put(ds, cells[0], "sum", [Figure.parse(cells[1])], "Table VIII")
    return out, unlabeled
