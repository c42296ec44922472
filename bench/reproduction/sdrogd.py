"""The SDROGD paper's figures (Xue & Ren 2020, Tables 3 and 4, Fig. 3) against ours.

    .venv/bin/python -m bench.reproduction --paper sdrogd [--datasets german,a9a,ijcnn1-full]
        [--repeats 5] [--results-dir /tmp/acog-repro] [--render-only] [--force]

Each data set runs ``acog evaluate NAME --protocol sdrogd`` (80/20 split, 3-fold CV over the
paper's full grids, one pass, 5 repeats; intercept on) and, for the intercept's explanation, the
same with ``--no-intercept``. Results are cached as ``sdrogd-NAME[-no-intercept].json`` under
``--results-dir``; the section between the ``sdrogd`` markers of ``docs/reproduction.md`` is
rewritten from the cache (nothing else in the file changes).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report import write_section
from bench.reproduction.runs import machine
from research.protocols import sdrogd as protocol
from research.protocols.sdrogd_cli import settings_from_args
from service.cli import build_parser as build_acog_parser
from service.datasets import load

PAPERS_ENV = "ACOG_PAPERS_DIR"
"""A directory holding the papers' text (not redistributable, so not in the repository)."""
PAPER = Path(os.environ.get(PAPERS_ENV) or "/nonexistent") / "sdrogd.txt"
SECTION = "sdrogd"
ORDER = ("german", "a9a", "ijcnn1-full")
TITLES = {"german": "german", "a9a": "a9a", "ijcnn1-full": "ijcnn1"}


@dataclass(frozen=True)
class Printed:
    """What Table 3 (accuracy %), Table 4 (training seconds) and Fig. 3 (AUC) print for one data set."""

    sdrogd: str
    pegasos: str
    sdrogd_seconds: str
    pegasos_seconds: str
    auc: str | None = None  # Fig. 3 labels SDROGD's AUC on the data sets where it is the best


PRINTED = {
    "german": Printed("74.90 ± 1.34", "67.10 ± 2.16", "0.09", "0.03", "0.8075"),
    "a9a": Printed("83.49 ± 0.30", "75.90 ± 0.38", "3.52", "0.76", "0.8850"),
    "ijcnn1-full": Printed("90.40 ± 0.13", "90.40 ± 0.07", "4.75", "0.47"),
}
TARGETS = {  # the acceptance targets (5 repeats, intercept on): (low, high)
    "german": (74.90 - 3, 74.90 + 3),
    "a9a": (83.49 - 1, 83.49 + 1),
    "ijcnn1-full": (90.0, 100.0),
}
NOT_HERE = {  # Table 3's SDROGD accuracy on the data sets this project cannot obtain
    "cifar-10 (dog vs horse)": "65.77 ± 2.85",
    "cod-rna": "93.03 ± 0.55",
    "gisette": "96.40 ± 0.63",
    "madelon": "57.54 ± 1.72",
    "mnist (0 vs 1)": "99.81 ± 0.09",
    "real-sim": "92.96 ± 0.28",
    "toy (make_classification, arguments unknown)": "78.46 ± 5.20",
}
RULE = (
    "**equal**: our mean and standard deviation, printed to the paper's two decimals, are its printed "
    "digits. **within spread**: otherwise, when |diff| <= the paper's printed standard deviation "
    "(diff = our printed mean - the paper's; the splits are unknown, so a mean inside the spread the paper "
    "reports over its 5 repeats is as close as one can ask). **miss**: everything else. Fig. 3's AUCs "
    "carry no spread: they are equal or a miss."
)


def command(name: str, intercept: bool, repeats: int) -> list[str]:
    argv = ["acog", "evaluate", name, "--protocol", "sdrogd", "--repeats", str(repeats)]
    return argv if intercept else [*argv, "--no-intercept"]


def run(name: str, intercept: bool, repeats: int) -> dict[str, Any]:
    """One ``acog evaluate --protocol sdrogd`` run, exactly as the command builds it."""
    argv = command(name, intercept, repeats)
    args = build_acog_parser().parse_args(argv[1:])
    settings = settings_from_args(args)
    start = time.perf_counter()
    results = protocol.evaluate(load(name), settings)
    return {
        "command": shlex.join(argv),
        "repeats": repeats,
        "results": {r.algorithm: r.summary() for r in results},
        "compute_seconds": time.perf_counter() - start,
        "machine": machine(),
    }


def cache_path(results_dir: Path, name: str, intercept: bool) -> Path:
    return results_dir / f"sdrogd-{name}{'' if intercept else '-no-intercept'}.json"


def cached(path: Path, repeats: int) -> dict[str, Any] | None:
    if not path.exists():
        return None
    result: dict[str, Any] = json.loads(path.read_text())
    return result if result.get("repeats") == repeats else None


def figure(stat: dict[str, float], scale: float = 1.0, digits: int = 2) -> str:
    return f"{stat['mean'] * scale:.{digits}f} ± {stat['std'] * scale:.{digits}f}"


def verdict(ours: str, printed: str) -> tuple[str, str]:
    """``(diff, verdict)`` of our printed figure against the paper's, by :data:`RULE`."""
    mine = [float(p) for p in ours.split("±")]
    theirs = [float(p) for p in printed.split("±")]
    decimals = len(printed.split("±")[0].strip().split(".")[1])
    diff = round(mine[0] - theirs[0], decimals)
    text = f"{diff:+.{decimals}f}"
    if ours.strip() == printed.strip() or (len(theirs) == 1 and f"{mine[0]:.{decimals}f}" == printed):
        return text, "equal"
    if len(theirs) > 1 and abs(diff) <= theirs[1] + 1e-9:
        return text, "within spread"
    return text, "miss"


def target_verdict(name: str, accuracy: float) -> str:
    low, high = TARGETS[name]
    bound = f">= {low:.1f}" if high == 100.0 else f"{(low + high) / 2:.2f} ± {(high - low) / 2:g}"
    return f"{bound}: {'met' if low <= accuracy <= high else 'MISSED'}"


def render(results: dict[str, dict[str, Any]], repeats: int) -> str:
    """The section's markdown from the cached runs (``NAME`` and ``NAME-no-intercept``)."""
    lines = [
        "## SDROGD (Xue & Ren, Appl. Intell. 2020)",
        "",
        "Generated by `python -m bench.reproduction --paper sdrogd` (cached under `--results-dir`; "
        "`--render-only` rewrites this section alone). Specification: `docs/learners.md` §8; the paper: "
        "Xue & Ren, *Applied Intelligence* 2020.",
        "",
        "### Protocol",
        "",
        f"- The paper's (§5.2): {repeats} repeats of a random 80/20 split (scikit-learn's "
        "`train_test_split`, seeded 0, 1, ...); hyper-parameters by 3-fold cross-validation on the 80 % "
        "over the paper's full grids; one pass, batch 60, step 1/t (Pegasos 1/(lam t)), the last partial "
        "batch flushed; test accuracy (`sign(w.x)`, sign(0) = +1) and the AUC of `w.x`. Mean ± sample "
        "std (ddof = 1).",
        "- Grids: SDROGD `lda_weight` (the paper's eta) in {0, 0.1, ..., 1}, `lam` in {0, 2^-3, ..., 2^3}, "
        "`sketch_fraction` in {0.01, 0.1, 0.2, ..., 0.5} (l = ceil(f d), d counting the intercept); "
        "Pegasos `lam` in {2^-3, ..., 2^3}. 528 and 7 settings.",
        "- Features standardised over the whole set except a9a (as the paper); a constant 1 is appended "
        "(the intercept, see below). SDROGD uses the spec's decisions: eq. (17) with eta on the mean term "
        "(`eq17=expanded`), all 2l sketch rows (`sketch_rows=all`).",
        "- ijcnn1 is the 141,691-row set the paper's Table 2 lists (training + test files: `ijcnn1-full`).",
        "",
        "### Verdicts",
        "",
        RULE,
        "",
        "The issue's targets (5 repeats, intercept on) are checked apart: german 74.90 ± 3, a9a 83.49 ± 1, "
        "ijcnn1 >= 90.0.",
        "",
        "### Accuracy (Table 3) and AUC (Fig. 3)",
        "",
        "| data set | algorithm | measure | ours | paper | diff | verdict | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in ORDER:
        result = results.get(name)
        if result is None:
            lines.append(f"| {TITLES[name]} | — | not run | | | | | |")
            continue
        printed = PRINTED[name]
        for algorithm, paper in (("sdrogd", printed.sdrogd), ("pegasos", printed.pegasos)):
            summary = result["results"].get(algorithm)
            if summary is None:
                continue
            ours = figure(summary["accuracy"])
            diff, v = verdict(ours, paper)
            target = target_verdict(name, summary["accuracy"]["mean"]) if algorithm == "sdrogd" else ""
            lines.append(
                f"| {TITLES[name]} | {algorithm.upper() if algorithm == 'sdrogd' else 'Pegasos'} | "
                f"accuracy % | {ours} | {paper} | {diff} | {v} | {target} |"
            )
            if algorithm == "sdrogd" and printed.auc is not None:
                ours_auc = figure(summary["auc"], digits=4)
                diff, v = verdict(ours_auc.split(" ±")[0], printed.auc)
                lines.append(
                    f"| {TITLES[name]} | SDROGD | AUC | {ours_auc} | {printed.auc} | {diff} | {v} | |"
                )
    lines += ["", "Commands (each line gives the rows of one data set):", "", "```"]
    lines += [
        f"python -m bench.reproduction --paper sdrogd --repeats {repeats} --results-dir /tmp/acog-repro"
    ]
    lines += [results[n]["command"] for n in ORDER if n in results]
    lines += ["```", ""]
    lines += misses_section(results)
    lines += chosen_section(results)
    lines += intercept_section(results)
    lines += ijcnn1_section(results)
    lines += times_section(results)
    lines += [
        "### Data sets that cannot be had here",
        "",
        "Table 3's SDROGD accuracies on the rest (not run; listed so that the comparison is complete):",
        "",
        "| data set | printed SDROGD accuracy % |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in NOT_HERE.items()),
        "",
    ]
    return "\n".join(lines)


def all_negative_rate(name: str) -> float:
    data = load(name)
    return 100.0 * data.n_negative / data.n_samples


def misses_section(results: dict[str, dict[str, Any]]) -> list[str]:
    """Every missed cell with the first check that explains it, else *not explained*:
    *the printed figure is the all-negative rate* (that rate lies within the printed spread),
    *no intercept in the paper's run* (our ``--no-intercept`` run is within the printed spread),
    and, for an AUC, *one ROC curve* (Fig. 3 prints one run: no spread to compare with)."""
    lines = ["### Misses explained", ""]
    for name in ORDER:
        result = results.get(name)
        if result is None:
            continue
        without = results.get(f"{name}-no-intercept", {}).get("results", {})
        rate = all_negative_rate(name)
        printed = PRINTED[name]
        for algorithm, paper in (("sdrogd", printed.sdrogd), ("pegasos", printed.pegasos)):
            summary = result["results"].get(algorithm)
            if summary is None:
                continue
            label = f"{TITLES[name]}, {'SDROGD' if algorithm == 'sdrogd' else 'Pegasos'}"
            ours = figure(summary["accuracy"])
            diff, v = verdict(ours, paper)
            if v == "miss":
                mean, std = (float(p) for p in paper.split("±"))
                other = without.get(algorithm)
                if abs(rate - mean) <= std:
                    cause = (
                        f"*the printed figure is the all-negative rate*: predicting -1 everywhere scores "
                        f"{rate:.2f} % on the whole set ({figure(summary['all_negative'])} % on our test "
                        f"splits), within the printed {paper}; ours is {ours} (AUC "
                        f"{figure(summary['auc'], digits=4)})."
                    )
                elif other is not None and verdict(figure(other["accuracy"]), paper)[1] != "miss":
                    cause = (
                        f"*no intercept in the paper's run*: without it ours is {figure(other['accuracy'])}, "
                        f"{verdict(figure(other['accuracy']), paper)[1]} of the printed {paper}."
                    )
                else:
                    cause = "*not explained*."
                lines.append(f"- **{label}, accuracy** (diff {diff}): {cause}")
            if algorithm == "sdrogd" and printed.auc is not None:
                auc = summary["auc"]
                diff, v = verdict(f"{auc['mean']:.4f}", printed.auc)
                if v == "miss":
                    within = abs(auc["mean"] - float(printed.auc)) <= 2 * auc["std"]
                    n = len(summary["repeats"])
                    lines.append(
                        f"- **{label}, AUC** (diff {diff}): *one ROC curve*: Fig. 3 draws a single run, "
                        f"so it has no spread; ours is {figure(auc, digits=4)} over {n} repeats, and the "
                        f"printed value is {'within' if within else 'outside'} two of our standard "
                        "deviations."
                    )
    if len(lines) == 2:
        lines.append("No cell misses.")
    return [*lines, ""]


def chosen_section(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["### Settings chosen by cross-validation (per repeat)", ""]
    for name in ORDER:
        if name not in results:
            continue
        for algorithm, summary in results[name]["results"].items():
            chosen = "; ".join(
                ", ".join(f"{k}={v:g}" for k, v in rep["params"].items()) for rep in summary["repeats"]
            )
            refused = sum(rep["refused_steps"] for rep in summary["repeats"])
            lines.append(
                f"- {TITLES[name]}, {algorithm}: {chosen} (CV accuracy "
                f"{figure(summary['cv_accuracy'])} %; steps refused in the final fits: {refused})"
            )
    return [*lines, ""]


def intercept_section(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "### The intercept",
        "",
        "The paper's model (eqs. (1), (7)) is `w.x` with no bias, and its standardised features have mean "
        "zero: a hyperplane through the origin cannot move its threshold off the class-balanced point. We "
        "append a constant 1 (`fit_intercept`); its scatter is zero (it is the same in every row), so only "
        "`lam` acts on its weight. Our runs without it (same protocol, `--no-intercept`):",
        "",
        "| data set | algorithm | with intercept | without | paper |",
        "|---|---|---|---|---|",
    ]
    for name in ORDER:
        with_b, without = results.get(name), results.get(f"{name}-no-intercept")
        if with_b is None:
            continue
        for algorithm, paper in (("sdrogd", PRINTED[name].sdrogd), ("pegasos", PRINTED[name].pegasos)):
            a = with_b["results"].get(algorithm)
            b = None if without is None else without["results"].get(algorithm)
            if a is None:
                continue
            lines.append(
                f"| {TITLES[name]} | {algorithm} | {figure(a['accuracy'])} | "
                f"{'not run' if b is None else figure(b['accuracy'])} | {paper} |"
            )
    return [*lines, ""]


def ijcnn1_section(results: dict[str, dict[str, Any]]) -> list[str]:
    result = results.get("ijcnn1-full")
    data = load("ijcnn1-full")
    rate = 100.0 * data.n_negative / data.n_samples
    lines = [
        "### ijcnn1: the printed 90.40 is the all-negative rate",
        "",
        f"ijcnn1 has {data.n_negative:,} negatives in {data.n_samples:,} rows: predicting -1 for every row "
        f"scores {rate:.2f} %. Table 3 prints 90.40 ± 0.13 for SDROGD and 90.40 ± 0.07 for Pegasos, both "
        "within the spread of that rate, so on ijcnn1 the paper's figures do not separate a classifier "
        "from the constant one.",
    ]
    if result is not None:
        sd = result["results"].get("sdrogd")
        if sd is not None:
            lines[-1] += (
                f" On our test splits the all-negative rate is {figure(sd['all_negative'])} %; SDROGD with "
                f"the intercept gets {figure(sd['accuracy'])} % (AUC {figure(sd['auc'], digits=4)})."
            )
    return [*lines, ""]


def times_section(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "### Training times (Table 4; not comparable: the paper's are Python seconds on its machine)",
        "",
        "| data set | SDROGD ours (s) | SDROGD paper (s) | Pegasos ours (s) | Pegasos paper (s) |",
        "|---|---|---|---|---|",
    ]
    for name in ORDER:
        if name not in results:
            continue
        r = results[name]["results"]
        cells = [f"{r[a]['train_seconds']['mean']:.3f}" if a in r else "—" for a in ("sdrogd", "pegasos")]
        lines.append(
            f"| {TITLES[name]} | {cells[0]} | {PRINTED[name].sdrogd_seconds} | {cells[1]} | "
            f"{PRINTED[name].pegasos_seconds} |"
        )
    m = next(iter(results.values()))["machine"] if results else {}
    total = sum(r["compute_seconds"] for r in results.values())
    lines += [
        "",
        f"Ours: one pass over the 80 % at the chosen setting, numba, one core of {m.get('cpu', '?')} "
        f"(shared). Whole protocol, cross-validation included: {total:.0f} s of compute for these runs.",
        "",
    ]
    return lines


def main(datasets: list[str], repeats: int, results_dir: Path, output: Path, render_only: bool,
         force: bool) -> int:  # fmt: skip
    """Run what is missing from the cache, then rewrite the section."""
    results_dir.mkdir(parents=True, exist_ok=True)
    for name in [] if render_only else datasets:
        for intercept in (True, False):
            path = cache_path(results_dir, name, intercept)
            if force or cached(path, repeats) is None:
                line = shlex.join(command(name, intercept, repeats))
                print(f"[sdrogd] {line}", file=sys.stderr, flush=True)
                path.write_text(json.dumps(run(name, intercept, repeats), indent=1))
    results: dict[str, dict[str, Any]] = {}
    for name in ORDER:
        for intercept in (True, False):
            result = cached(cache_path(results_dir, name, intercept), repeats)
            if result is not None:
                results[name if intercept else f"{name}-no-intercept"] = result
    write_section(output, SECTION, render(results, repeats))
    print(f"wrote the {SECTION} section of {output}", file=sys.stderr)
    return 0
