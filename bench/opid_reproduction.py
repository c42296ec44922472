"""The OPID section of docs/reproduction.md: Table 2's DNA rows, ours next to the printed ones.

    .venv/bin/python -m bench.opid_reproduction [--repeats 20] [--results-dir /tmp/acog-opid]
        [--output docs/reproduction.md] [--render-only]

Runs :func:`research.protocols.opid.run` (what ``acog evaluate dna --protocol opid`` runs), caches the
accuracies as JSON and rewrites the ``opid`` section (between ``<!-- opid:begin -->`` and
``<!-- opid:end -->``) of the report, leaving every other byte of it alone.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.report import cpu_model, package_versions, write_section
from research.protocols import opid

SECTION = "opid"
DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "reproduction.md"
DEFAULT_RESULTS_DIR = Path("/tmp/acog-opid")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.opid_reproduction", description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR)
    p.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    p.add_argument("--render-only", action="store_true", help="rewrite the section from the cache")
    return p


def _fmt(pair: Sequence[float]) -> str:
    return f"{pair[0]:.4f} ({pair[1]:.4f})"


def render(document: dict[str, Any]) -> str:
    """The section's markdown from :func:`research.protocols.opid.to_json` plus the run's facts."""
    setup = opid.SETUPS[document["dataset"]]
    s = document["settings"]
    printed = {row.n: row.values for row in setup.printed}
    lines = [
        "## OPID (Hou & Zhou, *One-Pass Learning with Incremental and Decremental Features*): Table 2, DNA",
        "",
        "Written by `python -m bench.opid_reproduction` (do not edit by hand); the same numbers come from",
        "",
        "```",
        f"acog evaluate dna --protocol opid --permutations {s['repeats']} --seed {s['seed']}",
        "```",
        "",
        "Protocol (`docs/learners.md` §10; `research/protocols/opid.py`):",
        "",
        f"- DNA: `dna.scale` then `dna.scale.t` ({document['rows']} rows x {setup.n_features} features, "
        f"classes {', '.join(map(str, setup.classes))}), c = {len(setup.classes)}. Features in file order: "
        f"the first {setup.vanished} vanish, the next {setup.survived} survive, the last {setup.augmented} "
        "are augmented.",
        f"- C-stage: the first {setup.c_stage_rows // len(setup.classes)} rows of each class in file order "
        f"(Σnᵢ = {setup.c_stage_rows}), ±1 one-vs-rest targets, λ = {s['lam']:g}, r (the paper's ρ) = "
        f"{s['ridge']:g}; one Wˢ* from the sums G and H serves every n.",
        "- E-stage, per n and repeat: 2n/c rows of each class drawn from the other rows (class-balanced), "
        "half of each class to train, half to test. OPID: the alternation of Props. 3-4, γ by stratified "
        f"5-fold CV (accuracy) over {{{', '.join(f'{g:g}' for g in s['gammas'])}}}.",
        "- Baselines SVM (S ∪ A), SVMˢ (S), SVMᵃ (A): scikit-learn's liblinear L2 logistic regression, "
        f"one-vs-rest, C by stratified 5-fold CV (accuracy) over {{{', '.join(f'{c:g}' for c in s['Cs'])}}} "
        "(the grid is our choice: the paper names none). OPIDe (optional in the spec) is not run.",
        "- *C-stage alone*: argmax of xˢWˢ*, a sanity row the paper does not print.",
        f"- {s['repeats']} repeats (the paper does not say how many); repeat k draws with "
        f"`numpy.random.default_rng([{s['seed']}, k])`. Accuracy on the test half, mean (sample std).",
        "",
        "| n | method | ours | printed | ours − printed |",
        "|---|---|---|---|---|",
    ]
    for n_text, methods in document["summary"].items():
        n = int(n_text)
        for method in ("SVM", "SVMs", "SVMa", "OPID", "OPIDe", "C-stage alone"):
            mine = methods.get(method)
            paper = printed.get(n, {}).get(method)
            label = {"SVMs": "SVMˢ", "SVMa": "SVMᵃ"}.get(method, method)
            diff = f"{mine[0] - paper[0]:+.4f}" if mine and paper else "—"
            lines.append(
                f"| {n} | {label} | {_fmt(mine) if mine else 'not run'} | "
                f"{_fmt(paper) if paper else 'not printed'} | {diff} |"
            )
    checks = document["checks"]
    missed = [c for c in checks if not c["met"]]
    lines += [
        "",
        f"Targets (spec acceptance test 5): every baseline within {opid.BASELINE_TOLERANCE} of print for "
        f"n ≥ 120, SVMᵃ < {opid.SVMA_CEILING}, OPID ≥ print − {opid.OPID_SLACK}: "
        f"**{len(checks) - len(missed)} of {len(checks)} met**.",
        "",
    ]
    if missed:
        lines.append("Missed:")
        lines.append("")
        for c in missed:
            printed_text = "" if c["printed"] is None else f", printed {c['printed']:.4f}"
            ours = f"ours {c['ours']:.4f}{printed_text}"
            lines.append(f"- n = {c['n']}, {c['method']}: {ours}; rule {c['rule']}.")
        lines.append("")
    gamma_counts = Counter(g for per_n in document["picked"].values() for g in per_n["OPID"])
    total = sum(gamma_counts.values())
    top_gamma = max(s["gammas"])
    at_top = gamma_counts.get(top_gamma, 0)
    picks = ", ".join(f"γ = {g:g}: {k}" for g, k in sorted(gamma_counts.items()))
    summary = document["summary"]
    alone_beats = [n for n, m in summary.items() if m["C-stage alone"][0] > m["OPID"][0]]
    chance = 1.0 / len(setup.classes)
    svm_a = [m["SVMa"][0] for m in summary.values()]
    lines += [
        "What the figures say:",
        "",
        f"- γ picked by the CV, over all {total} OPID fits: {picks}. {at_top} of {total} are the top of "
        f"the spec's grid ({top_gamma:g}), its strongest regularisation of the E-stage. The grid was kept "
        "as specified: widening it to chase the printed values would be tuning to the table.",
        f"- The C-stage model alone is above OPID at n = {', '.join(alone_beats) or 'none'} "
        f"(of {len(summary)} sizes): Wˢ* is fitted on {setup.c_stage_rows} rows, the E-stage on n.",
        f"- SVMᵃ stays near chance ({chance:.3f} for {len(setup.classes)} balanced classes; ours "
        f"{min(svm_a):.3f} to {max(svm_a):.3f}), as in print: the augmented features carry little. Draws "
        "that are not class-balanced put it near the majority class's share instead, which is why the "
        "spec draws balanced.",
        "",
        f"Machine: {document['machine']['cpu']}, Python {document['machine']['python']}, "
        + ", ".join(f"{k} {v}" for k, v in document["machine"]["packages"].items())
        + f". Compute: {document['seconds']:.0f} s.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cache = args.results_dir / f"dna.r{args.repeats}.s{args.seed}.json"
    if args.render_only:
        document = json.loads(cache.read_text())
    else:
        setup = opid.SETUPS["dna"]
        start = time.perf_counter()
        results = opid.run(setup, opid.OPIDProtocol(repeats=args.repeats, seed=args.seed))
        document = opid.to_json(results)
        document["seconds"] = time.perf_counter() - start
        document["rows"] = int(opid.load(setup)[1].size)
        document["machine"] = {
            "cpu": cpu_model(),
            "python": platform.python_version(),
            "packages": package_versions(["numpy", "scipy", "scikit-learn"]),
        }
        args.results_dir.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(document, indent=1))
    write_section(args.output, SECTION, render(document))
    print(f"wrote the {SECTION!r} section of {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
