"""The OPID paper's protocol on DNA (research.protocols.opid) and its section of docs/reproduction.md.

The full reproduction (4 sizes x 20 repeats, about 70 s of CPU) is run by
``python -m bench.opid_reproduction``, which writes the doc section. CI runs the size n = 120 with its
20 repeats (every target of acceptance test 5 applies there) and checks that it prints the doc's
digits.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from bench.opid_reproduction import SECTION
from bench.report import read_section
from research.protocols import PROTOCOLS, opid
from service.cli import build_parser
from service.cli_options import UsageError
from tests.conftest import dataset_path

DOC = Path(__file__).resolve().parents[1] / "docs" / "reproduction.md"
DNA = opid.SETUPS["dna"]


@pytest.fixture(scope="module")
def dna() -> tuple[np.ndarray, np.ndarray]:
    dataset_path("dna", "dna.scale.xz")
    return opid.load(DNA)


def test_the_c_stage_takes_the_first_rows_of_each_class_in_file_order(dna: tuple) -> None:
    _, labels = dna
    rows = opid.c_stage_rows(labels, DNA)
    assert rows.size == 1200 and np.all(np.diff(rows) > 0)
    for k in DNA.classes:
        mine = rows[labels[rows] == k]
        assert np.array_equal(mine, np.flatnonzero(labels == k)[:400])


def test_e_stage_draws_are_class_balanced_disjoint_and_seeded(dna: tuple) -> None:
    _, labels = dna
    used = np.zeros(labels.size, bool)
    used[opid.c_stage_rows(labels, DNA)] = True
    available = np.flatnonzero(~used)
    train, test = opid.e_stage_draw(labels, available, DNA, 120, np.random.default_rng([0, 3]))
    again = opid.e_stage_draw(labels, available, DNA, 120, np.random.default_rng([0, 3]))
    assert np.array_equal(train, again[0]) and np.array_equal(test, again[1])
    assert train.size == test.size == 120
    assert not set(train) & set(test) and not used[train].any() and not used[test].any()
    for part in (train, test):
        assert np.bincount(labels[part])[1:].tolist() == [40, 40, 40]


def test_the_feature_split_is_table_1s() -> None:
    assert DNA.survived_columns.tolist() == list(range(50, 130))
    assert DNA.augmented_columns.tolist() == list(range(130, 180))


def test_acog_evaluate_takes_the_protocol_from_one_registry() -> None:
    assert {"online", "opid"} <= set(PROTOCOLS)
    args = build_parser().parse_args(["evaluate", "dna", "--protocol", "opid", "--permutations", "3"])
    assert args.protocol == "opid" and args.permutations == 3
    assert build_parser().parse_args(["evaluate", "german"]).protocol == "online"


def test_an_unknown_data_set_is_refused() -> None:
    args = build_parser().parse_args(["evaluate", "german", "--protocol", "opid"])
    with pytest.raises(UsageError, match="knows dna"):
        args.func(args)


def doc_means(n: int) -> dict[str, float]:
    body = read_section(DOC, SECTION)
    assert body is not None, "docs/reproduction.md has no opid section (python -m bench.opid_reproduction)"
    names = {"SVMˢ": "SVMs", "SVMᵃ": "SVMa"}
    out = {}
    for line in body.splitlines():
        m = re.match(rf"\| {n} \| ([^|]+) \| ([0-9.]+) \(", line)
        if m:
            out[names.get(m.group(1).strip(), m.group(1).strip())] = float(m.group(2))
    return out


@pytest.mark.slow
def test_dna_n120_meets_every_target_and_prints_the_docs_digits(dna: tuple) -> None:
    """Acceptance test 5 at n = 120 with the full 20 repeats (the other sizes: the doc section)."""
    results = opid.run(DNA, opid.OPIDProtocol(repeats=20, sizes=(120,)))
    failed = [c for c in opid.checks(results) if not c.met]
    assert not failed, failed
    summary = results.summary()[120]
    documented = doc_means(120)
    assert set(documented) == {"SVM", "SVMs", "SVMa", "OPID", "C-stage alone"}
    for method, mean in documented.items():
        assert round(summary[method][0], 4) == mean, method
