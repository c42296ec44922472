"""The README's figures, rendered from what the benchmark scripts last wrote.

    .venv/bin/python -m bench.readme [--check] [--readme README.md] [--benchmarks docs/benchmarks.md]

The README quotes measurements; it never holds a hand-written one. Each quoting block sits between
``<!-- NAME:begin -->`` / ``<!-- NAME:end -->`` markers and is rendered here from two sources only:

- the sections of ``docs/benchmarks.md``, each written by its benchmark script (the saved results:
  nothing is re-measured here);
- the code: :class:`service.model_config.ModelConfig`'s defaults and the learner they build.

Blocks: ``defaults`` (the Defaults section: what the defaults are, the quality they measured, what
they cost) and ``benchmarks`` (the Benchmarks list). Run it after any benchmark that rewrites a
section of ``docs/benchmarks.md``; ``--check`` exits 1, naming the block, when the README differs
from what it would write (``tests/test_readme_figures.py`` runs the same check).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from bench.learners import DEFAULTS_ROW
from bench.quality.reporting import REPORTING
from bench.report import DEFAULT_PATH, read_section, write_section
from bench.service_load_report import FEEDBACK_NOOP_ROW, WS_NOOP_ROW
from service.learners import NONLINEAR_MAX_FEATURES, EtaGrid
from service.learners.knn import KNN
from service.learners.roster import FOREST_MAX_FEATURES, NEIGHBOURS_MAX_FEATURES, STANDARD_MAX_FEATURES
from service.learners.standardise import CLIP, WARM_UP
from service.model_config import ModelConfig

README = Path(__file__).resolve().parents[1] / "README.md"
KNN_K, KNN_WINDOW = (KNN.own_params[name][0] for name in ("k", "window"))
LINK = "docs/benchmarks.md"


class MissingFigure(LookupError):
    """A section of docs/benchmarks.md does not hold the table or row a block quotes."""


def section(path: Path, name: str) -> str:
    """The body of section ``name`` of ``path``; :class:`MissingFigure` when it has none."""
    body = read_section(path, name)
    if body is None:
        raise MissingFigure(f"{path} has no section {name!r}")
    return body


def table(section: str, first_header: str) -> list[dict[str, str]]:
    """The rows of the markdown table whose first header cell is ``first_header``, as dicts."""
    lines = section.splitlines()
    for i, line in enumerate(lines):
        cells = _cells(line)
        if cells and cells[0] == first_header and i + 1 < len(lines) and lines[i + 1].startswith("|-"):
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(cells, _cells(row), strict=False)))
            return rows
    raise MissingFigure(f"no table headed {first_header!r}")


def _cells(line: str) -> list[str]:
    if not line.startswith("|"):
        return []
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def row(rows: list[dict[str, str]], first: str, value: str) -> dict[str, str]:
    """The row whose column ``first`` starts with ``value``."""
    for candidate in rows:
        if candidate[first].startswith(value):
            return candidate
    raise MissingFigure(f"no row {value!r} in column {first!r}")


def number(cell: str) -> float:
    """``"7,005,743"``, ``"3.29 ms"``, ``"1.09 (0.67 to 1.35)"`` -> the first number."""
    match = re.search(r"-?[0-9][0-9,]*(?:\.[0-9]+)?", cell)
    if match is None:
        raise MissingFigure(f"no number in {cell!r}")
    return float(match.group().replace(",", ""))


def millions(rate: float) -> str:
    return f"{rate / 1e6:.2g}" if rate < 1e6 else f"{rate / 1e6:.1f}"


def _grid(values: list[float]) -> str:
    return "{" + ", ".join(f"{v:g}" for v in values) + "}"


def _members_at(d: int) -> int:
    learner = ModelConfig(n_features=d).build_learner()
    assert isinstance(learner, EtaGrid), "the defaults are an eta grid"
    return len(learner.members)


def defaults_block(benchmarks: Path) -> str:
    """The Defaults section: ModelConfig's defaults, the quality benchmark's verdicts (quoted from
    its section), and the cost of the members (the learner and service-load sections)."""
    config = ModelConfig(n_features=123)
    learner = config.build_learner()
    assert isinstance(learner, EtaGrid), "the defaults are an eta grid"
    losses = " and ".join(f"loss {loss}" for loss in learner.losses or (config.loss,))
    k = config.members
    quality = section(benchmarks, "quality")
    reporting = _verdicts(quality, "Goal (reporting set")
    try:
        tuning = _verdicts(quality, "Goal (tuning set")
    except MissingFigure:  # a run of the reporting set only
        tuning = []
    lines = [
        "The defaults are what a user gets without tuning: objective "
        f"`{config.objective}` with the online Laplace rho (`c_p/c_n` for `cost`), an intercept (a "
        f'constant {config.intercept_value:g}), and `eta="{config.eta}"` with `loss="{config.loss}"`: an '
        "ensemble whose members all learn every label. Its members (`auto_members: "
        f'"{config.auto_members}"`), by the dimension d:',
        "",
        f"- linear {config.resolved_algorithm().upper()}, one member per eta in {_grid(config.eta_grid)} "
        f"and {losses} ({k}); full ACOG when the covariances fit the memory budget, SSACOG otherwise;",
        f"- for d <= {NONLINEAR_MAX_FEATURES}, ACOG-diag over the quadratic features "
        f"(`x` and its pairwise products), {k} more;",
        f"- for d <= {FOREST_MAX_FEATURES}, the Aggregated Mondrian Forest (`amf`, 10 trees), one member;",
        f"- for d <= {NEIGHBOURS_MAX_FEATURES}, the k nearest neighbours (`knn`, k = {KNN_K} of the last "
        f"{KNN_WINDOW} labels), one member over the standardised input only",
        "",
        f'each (but the neighbours) once per input form (`normalize: "{config.normalize}"`): every '
        f"example scaled to unit L2 norm, and for d <= {STANDARD_MAX_FEATURES} also online per-feature "
        "standardisation (the running "
        "mean and variance of the labelled examples before it, float64, in the model's state; for the "
        f"first {WARM_UP} labels, and while a feature has no spread, it reads 0, and standardised "
        "values are clipped to "
        f"+-{CLIP:g}), which keeps the norm that L2 scaling erases. So d = 5 runs "
        f"{_members_at(5)} members, d = 50 runs {_members_at(50)}, d = 123 runs {_members_at(123)}. "
        f"They make one prediction by a Fixed-Share vote (`selection: {config.selection}`) of their "
        "scores clipped to [-1, 1]: each "
        "member's weight decays with its class-balanced (`sum`) or cost-weighted (`cost`) mistakes and "
        "a small share flows back toward a prior that gives every family over an input form the same "
        "mass (so ten linear members do not outvote one forest from the first label), and the vote moves "
        "to the members that are best now (linear members early, the forest later). The vote flags an "
        "anomaly when it reaches a threshold that is itself chosen online, among seven from -0.4 to 0.4, "
        "by the objective each would have scored so far.",
        "",
        "`python -m bench.quality` measures them against river (its linear models, and AMF, ARF, a "
        "Hoeffding adaptive tree and kNN on standardised features with cost-optimal thresholds), Vowpal "
        "Wabbit (plain, OjaNewton, with quadratic interactions `-q` on L2-normalised and on "
        "standardised features, and its neural network `--nn`) and scikit-learn, with the same stream "
        "orders for every system, on two sets of public data "
        f"([{LINK}]({LINK}#learning-quality-python--m-benchquality)). "
        "The *tuning* set (nine data sets; a run may cover fewer, the section says which) is where the "
        "defaults, the grid, the members and the combiner were chosen, so its margin is in-sample; the "
        f"*reporting* set ({len(REPORTING)} streams: scikit-learn's and river's data, seeded "
        "generators) was used for no choice, but one: the standardisation's warm-up was changed after it "
        "failed on the set's Agrawal stream, and the change was checked on the tuning set "
        "([docs/ensemble.md](docs/ensemble.md#online-standardisation)). Against the goals, on the "
        "reporting set:",
        "",
        *(f"- {verdict}" for verdict in reporting),
        "",
        *(["and on the tuning set:", "", *(f"- {verdict}" for verdict in tuning), ""] if tuning else []),
        '`auto_members: "linear"` or `"all"` narrows the members; `normalize: "l2"` gives the members '
        'L2-normalised requests only; `selection: "leader"` follows the member with the best objective '
        "so far instead of the vote.",
        "",
        "These differ from the defaults first planned (loss II, grid {0.01, ..., 100}, one family) "
        "because the benchmark measured better: the half-decade grid raised mean sum and lowered mean "
        "cost, members for both losses put the defaults ahead of plain VW on cost, and the Fixed-Share "
        "vote beat the leader rule, a sliding window, AdaNormalHedge, stacking and calibrated mixtures "
        "on the tuning set (`python -m bench.quality.combiners`). Its margins and its threshold are "
        "there because, when they were chosen, the vote with them was ahead of the vote of signs on mean "
        "sum on the tuning set and on its variants whose positives are subsampled to 6 % and 3 % "
        "(`python -m bench.quality.imbalance`), and on mean cost in two of the three; rerun since, it is "
        "ahead in two of the three on each measure, every margin inside the spread over orders "
        "([docs/ensemble.md](docs/ensemble.md)). "
        + members_cost(benchmarks, k)
        + " A model that needs less sets `eta` and `loss` to numbers.",
    ]
    return "\n".join(lines)


def _verdicts(quality: str, heading: str) -> list[str]:
    """The bullet lines under the paragraph of the quality section that starts with ``heading``."""
    try:
        block = quality.split(heading, 1)[1].split("\n\n", 2)[1]
    except IndexError:
        raise MissingFigure(f"the quality section has no {heading!r} paragraph") from None
    verdicts = [line.removeprefix("- ") for line in block.splitlines() if line.startswith("- ")]
    if not verdicts:
        raise MissingFigure(f"the quality section has no verdicts under {heading!r}")
    return verdicts


def members_cost(benchmarks: Path, k: int) -> str:
    """What the members cost per label (learner section) and in memory (service-load section)."""
    learners = section(benchmarks, "learners")
    header = re.search(r"a9a: ([0-9]+) rows x ([0-9]+).*?(best of [0-9]+[^.]*)\.", learners)
    if header is None:
        raise MissingFigure("the learner section has no a9a header")
    d, runs = header.group(2), header.group(3)
    rows = table(learners, "learner")
    try:
        defaults = row(rows, "learner", DEFAULTS_ROW)
    except MissingFigure:
        time = f"{k} updates per label (their time is not in {LINK} yet: `python -m bench.learners`)"
    else:
        single = number(row(rows, "learner", "acog")["examples/s"])
        rate = number(defaults["examples/s"])
        time = (
            f"{k} updates per label ({1e6 / rate:.0f} us a label on a9a, d = {d}, against "
            f"{1e6 / single:.1f} us for one ACOG; {runs}, `python -m bench.learners`)"
        )
    memory = table(section(benchmarks, "service-load"), "memory")
    full = number(row(memory, "memory", "acog, d=123, defaults")["learner state"])
    one = number(row(memory, "memory", "acog, d=123, eta and loss fixed")["learner state"])
    return (
        f"{k} members cost {time} and {k} states of memory ({full:,.1f} KiB of learner state at "
        f"d = 123 against {one:,.1f} KiB for one member, `python -m bench.service_load`)."
    )


def benchmarks_block(benchmarks: Path) -> str:
    """The README's Benchmarks list: each section's headline figures, quoted from its table."""
    learners = section(benchmarks, "learners")
    runs = re.search(r"(best of [0-9]+[^.]*)\.", learners)
    rows = table(learners, "learner")
    rates = {r["learner"]: number(r["examples/s"]) for r in rows if r["examples/s"][:1].isdigit()}
    fast = [rates[n] for n in ("perceptron", "pa1", "paum", "cpapb", "romma", "cog", "acog-diag")]
    versus = [
        number(r[column])
        for r in rows
        if r["learner"] in ("acog", "ssacog")
        for column in ("vs VW", "vs VW OjaNewton")
    ]
    flat = table(learners, "d")
    updates = [number(r["mean us/update"]) for r in flat if "mean us/update" in r]
    load = section(benchmarks, "service-load")
    goals = table(load, "target")
    scenarios = table(load, "scenario")

    def rate(name: str, column: str = "items/s") -> str:
        return f"{number(row(scenarios, 'scenario', name)[column]):,.0f}"

    p99 = row(goals, "target", "p99 at 2,000 predictions/s")
    single = row(goals, "target", "single /predict vs no-op")
    labels = row(goals, "target", "durable labels/s, one per request")
    websocket = row(goals, "target", "WebSocket predictions/s")
    servers = table(load, "server")
    client = table(section(benchmarks, "client-overhead"), "calls")
    repeats = re.search(r"Median over ([0-9]+)", section(benchmarks, "client-overhead"))
    lines = [
        f"[{LINK}]({LINK}) holds a section per benchmark, each written by its script with the command "
        "and the machine; the figures below are quoted from it by `python -m bench.readme`.",
        "",
        f"- **Learners** (`.venv/bin/python -m bench.learners`, {runs.group(1) if runs else '?'}): "
        f"on a9a, the first-order and diagonal learners run at {millions(min(fast))} to "
        f"{millions(max(fast))} million examples a second, full ACOG at {millions(rates['acog'])} million "
        f"and SSACOG at {millions(rates['ssacog'])} million ({min(versus):.1f} to {max(versus):.1f} times "
        "Vowpal Wabbit plain and OjaNewton on the same stream); SSACOG's update stays between "
        f"{min(updates):.2f} and {max(updates):.2f} us from d = 10^3 to 10^6.",
        "- **Quality** (`.venv/bin/python -m bench.quality`): see Defaults above.",
        "- **Client overhead** (`.venv/bin/python -m bench.client_overhead`): `service.client` against "
        "hand-written httpx and websockets calls to the same service in the same run, as ratios "
        f"(median over {repeats.group(1) if repeats else '?'} alternating repeats, min to max): "
        + "; ".join(f"{r['calls']} {r['client / baseline']}" for r in client[:4])
        + ".",
        "- **Features that come and go** (`.venv/bin/python -m bench.incomplete_streams`): OLI2DS "
        "against ACOG and river's PA on incomplete streams; see the paragraph under Models.",
        "- **Schema migration** (`.venv/bin/python -m bench.migration`): OPID, the default model "
        "migrated, and fresh models through the same declared change on seven data sets.",
        "- **Service load** (`.venv/bin/python -m bench.service_load`: one process, a real Redis, load "
        "from separate processes, every figure the median of repeated runs with min to max; it needs "
        "`wrk` (`bash .ci/system-deps`) and profiles with py-spy from the dev extras): single `/predict` "
        f"requests reach {single['measured']} of a no-op FastAPI app's rate on uvicorn (goal "
        f"{single['goal']}: {single[''].lower()}; in CPU time per request, "
        f"{row(servers, 'server', 'uvicorn')['no-op CPU / service CPU']} of the no-op's, the rate "
        "ratio a machine of its own would give)"
        + "".join(f", {s['service / no-op']} on {s['server']}" for s in servers if s["server"] != "uvicorn")
        + f"; {labels['measured']} durable labels a second one per request (goal {labels['goal']}: "
        f"{labels[''].lower()}; the no-op app's /feedback, which validates a label and answers it, "
        f"{rate(FEEDBACK_NOOP_ROW, 'requests/s')}) and {rate('/feedback, 100 labels')} in batches of 100; "
        f"{websocket['measured']} predictions a second over the WebSocket (goal {websocket['goal']}: "
        f"{websocket[''].lower()}; the no-op app's /ws, which validates a message and answers it, "
        f"{rate(WS_NOOP_ROW, 'requests/s')}) and {rate('/predict, batch of 100')} in batches of 100; p99 of "
        f"{p99['measured']} at 2,000 predictions a second (goal {p99['goal']}: {p99[''].lower()}).",
        replicas_item(benchmarks),
        startup_item(benchmarks),
        ensemble_cost_item(benchmarks),
        drift_item(benchmarks),
        retention_item(benchmarks),
        challenger_item(benchmarks),
    ]
    return "\n".join(lines)


def challenger_item(benchmarks: Path) -> str:
    """The challenger-cost bullet: the ratios per label and per prediction, with their ranges."""
    head = (
        "- **Challengers** (`.venv/bin/python -m bench.challenger_cost`): a model with one challenger of "
        "its own configuration against the model alone"
    )
    body = read_section(benchmarks, "challenger-cost")
    if body is None:
        return f"{head}; its section is not in {LINK} yet."
    rows = table(body, "d")
    cells = "; ".join(
        f"d = {r['d']}: {r['label ratio']} per label, {r['prediction ratio']} per prediction" for r in rows
    )
    return f"{head} (median of the per-repeat ratios, range in brackets; goal: at most 2x): {cells}."


def retention_item(benchmarks: Path) -> str:
    """The log-retention bullet: Redis bytes per retained log entry, smallest and largest shape."""
    head = "- **Log retention** (`.venv/bin/python -m bench.log_retention`): Redis memory per retained entry"
    body = read_section(benchmarks, "log-retention")
    if body is None:
        return f"{head}; its section is not in {LINK} yet."
    rows = table(body, "features")
    cells = "; ".join(f"{r['features']}: {r['bytes / entry: labels']} bytes" for r in rows)
    return f"{head} of a labelled prediction (median over models, min to max): {cells}."


def drift_item(benchmarks: Path) -> str:
    """The drift bullet: the service detector's median delay and false alarms over every stream."""
    head = "- **Drift** (`.venv/bin/python -m bench.drift`): every model's Page-Hinkley test"
    body = read_section(benchmarks, "drift")
    if body is None:
        return f"{head}, on seeded streams with an abrupt change; its section is not in {LINK} yet."
    rows = table(body, "generator")
    everything = row(rows, "generator", "all")
    alarms = "service: false alarms / 100k"
    worst = max(rows, key=lambda r: number(r[alarms]))
    return (
        f"{head} on {everything['seeds']} seeded streams (3 generators) with one abrupt change: a median "
        f"delay of {everything['service: delay (median)']} labels after the change, "
        f"{everything[alarms]} false alarms per 100,000 stationary labels "
        f"({worst[alarms]} on {worst['generator']}, the worst generator); on the same losses, river's "
        f"PageHinkley {everything['river PH: delay']} labels and "
        f"{everything['river PH: false alarms / 100k']} false alarms, its ADWIN "
        f"{everything['river ADWIN: delay']} labels and {everything['river ADWIN: false alarms / 100k']}."
    )


def ensemble_cost_item(benchmarks: Path) -> str:
    """The ensemble-cost bullet: what ``auto_members: "all"`` costs per label against the linear
    default, at the largest d that takes nonlinear members and the first that does not."""
    head = (
        '- **Nonlinear members** (`.venv/bin/python -m bench.ensemble_cost`): `auto_members: "all"` '
        "against the linear-only default, per label"
    )
    body = read_section(benchmarks, "ensemble-cost")
    if body is None:
        return f"{head}; its section is not in {LINK} yet."
    rows = table(body, "d")
    with_members = [r for r in rows if r["members"] != rows[-1]["members"]]
    top, above = with_members[-1], rows[-1]
    return (
        f"{head} on the service's path: {top['learn ratio']} at d = {top['d']} ({top['members']} members), "
        f"{above['learn ratio']} at d = {above['d']}, where the ensemble is the linear one "
        "(median of the per-repeat ratios, range in brackets)."
    )


def startup_item(benchmarks: Path) -> str:
    """The start-up bullet: time to ready, cold and warm, and the first requests' p99, when
    bench.startup has run."""
    from bench.startup import REQUESTS, SECTION

    head = "- **Start-up** (`.venv/bin/python -m bench.startup`): `acog serve`'s time from launch to ready"
    body = read_section(benchmarks, SECTION)
    if body is None:
        return f"{head}, with a cold and a warm kernel cache; its section is not in {LINK} yet."
    rows = table(body, "start")
    cold = row(rows, "start", "cold cache, `ACOG_WARM_UP=models`")
    every = row(rows, "start", "cold cache, `ACOG_WARM_UP=all`")
    warm = row(rows, "start", "warm cache")
    listening = cold.get("to listening (s)")
    answers = f"it answers {listening} s after launch, and is ready " if listening else ""
    return (
        f"{head}: {answers}"
        f"{cold['to ready (s)']} s after launch with a cold kernel cache (as after `pip install`; "
        f"{every['to ready (s)']} s with `ACOG_WARM_UP=all`), {warm['to ready (s)']} s with a warm one; "
        f"the first {REQUESTS} requests after a cold start have a p99 of {cold['p99 (ms)']} ms "
        "(median of the starts, min to max)."
    )


def replicas_item(benchmarks: Path) -> str:
    """The replicas bullet: 1 and 2 workers and the follower lag, when bench.replicas has run."""
    head = "- **Replicas** (`.venv/bin/python -m bench.replicas`): `acog serve --workers 1` and `2`"
    body = read_section(benchmarks, "replicas")
    if body is None:
        return f"{head}, CPU per prediction and the follower lag; its section is not in {LINK} yet."
    runs = re.search(r"Median of the repeats \(min to max\)", body)
    workers = row(table(body, ""), "", "single /predict per s")
    lag = table(body, "offered labels/s")[0]
    return (
        f"{head}: {workers['1 worker']} and {workers['2 workers']} single predictions a second "
        f"(ratio {workers['2 / 1']}); a follower applies a label {lag['p99 (ms)']} ms (p99) after "
        f"another replica acknowledged it, at {lag['offered labels/s']} labels a second"
        + (" (median of the repeats, min to max)." if runs else ".")
    )


def cluster_durability_block(benchmarks: Path) -> str:
    """The Durability paragraph's figures: a label's cost replicated vs default on a Redis Cluster, and
    what each mode lost in the failover scenario (``bench.cluster_durability``)."""
    body = section(benchmarks, "cluster_durability")
    modes = table(body, "mode")
    failovers = {r["failover"]: r["lost of acknowledged, per run"] for r in table(body, "failover")}
    default, replicated = row(modes, "mode", "default"), row(modes, "mode", "replicated")
    return (
        "Measured on loopback (`.venv/bin/python -m bench.cluster_durability`, 3 masters with a replica "
        f"each, median of the repeats, min to max): a label costs {default['ms per label']} ms in the "
        f"default mode and {replicated['ms per label']} ms with `ACOG_REDIS_WAIT_REPLICAS=1` (ratio "
        f"{replicated['ratio to default']}, one label per request in sequence). In a failover whose "
        "promoted replica had been cut off for its last 2 s, the default mode lost "
        f"{failovers['default']} acknowledged labels (the window: what the replica had not received); "
        f"with `ACOG_REDIS_WAIT_REPLICAS=1`, {failovers['replicated']}."
    )


BLOCKS: dict[str, Callable[[Path], str]] = {
    "defaults": defaults_block,
    "benchmarks": benchmarks_block,
    "cluster-durability": cluster_durability_block,
}
"""Every README block this script writes, by marker name."""


def stale_blocks(readme: Path, benchmarks: Path) -> list[str]:
    """The blocks whose text in ``readme`` differs from what they render to now."""
    return [name for name, render in BLOCKS.items() if read_section(readme, name) != render(benchmarks)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.readme", description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--benchmarks", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a block is stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_blocks(args.readme, args.benchmarks)
        for name in stale:
            print(f"README block {name!r} is stale: run python -m bench.readme", file=sys.stderr)
        return 1 if stale else 0
    for name, render in BLOCKS.items():
        write_section(args.readme, name, render(args.benchmarks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
