"""The report of ``bench.service_load``: its results as the markdown section of docs/benchmarks.md
(the goals, the scenario and paired tables, the py-spy profiles, memory) and the warnings about a
shared machine. It reads the results dictionary that :func:`bench.service_load.run` fills, and
the processor's name for the machine line."""

from __future__ import annotations

import os
import platform
import statistics
from pathlib import Path
from typing import Any

from bench.report import spread


def ratios(r: dict[str, Any], server: str) -> list[float]:
    return [p["ratio"] for p in r["paired"][server]["pairs"]]


def targets(r: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    pairs = ratios(r, "uvicorn")
    ratio = statistics.median(pairs)
    feedback, ws, loop = r["feedback"], r["ws_predict"], r["open_loop_2000"]
    return [
        (
            "single /predict vs no-op (uvicorn)",
            ">= 1.0",
            f"{ratio:.2f} ({min(pairs):.2f} to {max(pairs):.2f}; "
            f"{sum(v >= 1.0 for v in pairs)} of {len(pairs)} pairs at 1.0 or above)",
            ratio >= 1.0,
        ),
        (
            "durable labels/s, one per request",
            ">= 6,000",
            f"{feedback['rate']:,.0f} ({feedback['rate_min']:,.0f} to {feedback['rate_max']:,.0f})",
            feedback["rate"] >= 6000,
        ),
        (
            "WebSocket predictions/s",
            ">= 20,000",
            f"{ws['messages_per_second']:,.0f} ({ws['messages_per_second_min']:,.0f} to "
            f"{ws['messages_per_second_max']:,.0f})",
            ws["messages_per_second"] >= 20_000,
        ),
        (
            "p99 at 2,000 predictions/s (open loop)",
            "< 5 ms",
            f"{loop['p99']:.2f} ms ({loop['p99_min']:.2f} to {loop['p99_max']:.2f}; "
            f"{sum(v < 5 for v in loop['p99_runs'])} of {len(loop['p99_runs'])} runs under 5 ms)",
            loop["p99"] < 5,
        ),
    ]


FEEDBACK_NOOP_ROW = "the same labels, the no-op app's /feedback (its CPU)"
"""The scenario row of the no-op app's label endpoint (bench.readme quotes it)."""
WS_NOOP_ROW = "the same messages, the no-op app's /ws (its CPU)"
"""The scenario row of the no-op app's WebSocket (bench.readme quotes it)."""

OURS = (
    "our engine, features, learners, store",
    "our API layer (middleware, auth, schemas)",
    "redis-py client (fallbacks; the log follower's reads)",
    "Prometheus client",
)
"""The profile rows that are the service's own work; the others are the framework's."""


def profile_table(profile: dict[str, Any], what: str) -> list[str]:
    """The py-spy table: CPU us per single ``what`` request by component, service vs no-op."""
    service, noop = profile["service"], profile["noop"]
    names = list(dict.fromkeys([*service["us"], *noop["us"]]))
    total_s, total_n = sum(service["us"].values()), sum(noop["us"].values())
    return [
        "",
        f"Where a single {what} spends its CPU (py-spy `--gil`, 250 samples/s, during a closed-loop "
        f"run at {service['rate']:,.0f} req/s for the service and {noop['rate']:,.0f} for the no-op; "
        "each sample charged to the innermost frame's component, see `bench/cpu_profile.py`):",
        "",
        "| component | service us/request | no-op us/request |",
        "|---|---:|---:|",
        *(f"| {n} | {service['us'].get(n, 0.0):,.1f} | {noop['us'].get(n, 0.0):,.1f} |" for n in names),
        f"| **total (GIL held)** | **{total_s:,.1f}** | **{total_n:,.1f}** |",
    ]


def profile_lines(profile: dict[str, Any] | None, labels: dict[str, Any] | None = None) -> list[str]:
    """The py-spy tables of single /predict requests and (when profiled) single labels."""
    if profile is None:
        return ["", "(No CPU profile in this run: `--no-profile`.)"]
    ours = sum(us for name, us in profile["service"]["us"].items() if name in OURS)
    framework = sum(profile["service"]["us"].values()) - ours
    lines = [
        *profile_table(profile, "/predict"),
        "",
        f"The service's own rows (parsing, scoring, the Redis write of the pending prediction, "
        f"metrics, the API layer) come to {ours:,.1f} us, the framework's (the HTTP server, Starlette, "
        f"FastAPI, the event loop, pydantic-core) to {framework:,.1f} us. `/predict` and `/feedback` "
        "are served by `service.api.hot`, plain ASGI ahead of FastAPI's middleware stack and routing "
        "once the service serves: no per-request dependency, the body decoded once by pydantic-core "
        "into the request model, the "
        "reply serialised once, the key checked against digests computed at start. Fixed earlier: "
        "FastAPI's native OpenTelemetry looked its providers up on every request (off unless "
        "`ACOG_OPENTELEMETRY`; off in the no-op too), and CPython's default garbage-collector "
        "thresholds spent about 12 % of the CPU in collections (the service raises them while it "
        "serves).",
    ]
    if labels is not None:
        lines += [
            *profile_table(labels, "label (`/feedback`, one prediction id)"),
            "",
            "A label's own rows hold what the no-op does not do: the appender's script call that "
            "appends it to the log, the log follower's read of the entry (redis-py's blocking "
            "`XREAD`), the ensemble's update and the measures, before the reply says the label is "
            "learned.",
        ]
    return lines


STEAL_WARNING = 0.02
"""A share of CPU time stolen by the hypervisor above which the report says so."""


def load_lines(load: list[float] | None, steal: float | None = None) -> list[str]:
    """A warning when other work shared the machine: load averages over 1 a core, or the hypervisor
    taking more than :data:`STEAL_WARNING` of the cores' time (steal) while the bench ran."""
    cores = os.cpu_count() or 1
    lines = []
    if load and max(load) > cores:
        shown = ", ".join(f"{x:.1f}" for x in load)
        lines.append(
            f"**Other work shared the machine during this run** (load averages {shown} over 1, 5 and 15 "
            f"minutes on {cores} cores): absolute rates are well below a quiet machine's; the ratios "
            "of each alternating pair, and the CPU time per request, are the figures to compare."
        )
    if steal is not None and steal > STEAL_WARNING:
        lines.append(
            f"**The virtual machine's cores were shared with other guests**: the hypervisor took "
            f"{100 * steal:.1f} % of their time during the run (steal, /proc/stat), unevenly, so the "
            "rates and tail latencies of single runs spread widely; the ratios of each alternating pair, "
            "and the CPU time per request, are the figures to compare."
        )
    return [line for text in lines for line in ("", text)]


def report(r: dict[str, Any], command: str) -> str:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    repeats = len(r["paired"]["uvicorn"]["pairs"])
    lines = [
        "## Service load (`python -m bench.service_load`)",
        "",
        f"Command: `{command}`. Machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}. "
        "Server: one `acog serve` process; Redis: a private redis-server (append-only, everysec); "
        "load: wrk (1 thread, 16 connections, closed loop) and bench/loadgen.py (open loop, "
        f"WebSocket), all on 127.0.0.1. Every figure: the median of {repeats} runs (min to max).",
        *load_lines(r.get("load_average"), r.get("steal")),
        "",
        "| target | goal | measured | |",
        "|---|---|---|---|",
        *(f"| {name} | {goal} | {got} | {'met' if ok else 'MISSED'} |" for name, goal, got, ok in targets(r)),
        "",
        "Single /predict against the no-op FastAPI app (a pydantic body model, a JSON reply) on the "
        "same server, measured alternately (service, no-op, service, ...):",
        "",
        "| server | service requests/s | no-op requests/s | service / no-op | service CPU us/request | "
        "no-op CPU us/request | no-op CPU / service CPU |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for server, block in r["paired"].items():
        pairs = block["pairs"]
        lines.append(
            f"| {server} | {spread([p['service']['rate'] for p in pairs])} | "
            f"{spread([p['noop']['rate'] for p in pairs])} | {spread([p['ratio'] for p in pairs], 2)} | "
            f"{spread([p['service']['cpu_us'] for p in pairs], 1)} | "
            f"{spread([p['noop']['cpu_us'] for p in pairs], 1)} | "
            f"{spread([p['cpu_ratio'] for p in pairs], 2)} |"
        )
    lines += [
        "",
        "The CPU columns are each server's own CPU time (its worker processes included) per request "
        "answered, from /proc: one process serving a closed loop is bound by its CPU, so on a machine "
        "of its own the throughput ratio comes to the CPU ratio, while on a shared one the throughput "
        "moves with the share of the cores each run happened to get.",
    ]
    lines += [
        "",
        "| scenario | requests/s | items/s | p50 ms | p99 ms | errors | service CPU us/item |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    rows = [
        ("/predict, batch of 100", "predict_batch_100", 100),
        ("/predict, batch of 1,000", "predict_batch_1000", 1000),
        ("/feedback, one label", "feedback", 1),
        (FEEDBACK_NOOP_ROW, "feedback_noop", 1),
        ("/feedback, 100 labels", "feedback_batch_100", 100),
    ]
    for name, key, per in rows:
        x = r[key]
        if x.get("exhausted"):
            name += " (ran out of bodies: rate understated)"
        lines.append(
            f"| {name} | {x['rate']:,.0f} ({x['rate_min']:,.0f} to {x['rate_max']:,.0f}) | "
            f"{x['rate'] * per:,.0f} | {x['p50']:.2f} | {x['p99']:.2f} | {x['non2xx'] + x['errors']} | "
            f"{x['cpu_us']:.1f} |"
        )
    o, during = r["open_loop_2000"], r["open_loop_2000_rewrite"]
    lines.append(
        f"| open loop, 2,000 predictions/s | {o['achieved_rate']:,.0f} | | {o['p50']:.2f} | "
        f"{o['p99']:.2f} ({o['p99_min']:.2f} to {o['p99_max']:.2f}) | {o['errors']} | {o['cpu_us']:.1f} |"
    )
    lines.append(
        f"| the same, Redis rewriting its AOF | {during['achieved_rate']:,.0f} | | {during['p50']:.2f} | "
        f"{during['p99']:.2f} ({during['p99_min']:.2f} to {during['p99_max']:.2f}) | {during['errors']} | |"
    )
    for name, key in (
        ("WebSocket predict (64 in flight)", "ws_predict"),
        (WS_NOOP_ROW, "ws_noop"),
        ("WebSocket feedback (64 in flight)", "ws_feedback"),
    ):
        w = r[key]
        lines.append(
            f"| {name} | {w['messages_per_second']:,.0f} ({w['messages_per_second_min']:,.0f} to "
            f"{w['messages_per_second_max']:,.0f}) | | {w['p50']:.2f} | {w['p99']:.2f} | {w['errors']} | "
            f"{w['cpu_us']:.1f} |"
        )
    lines += [
        "",
        "*service CPU us/item*: the service process's CPU time per prediction or label in the run "
        "shown, from /proc (on the no-op app's rows, the no-op app's); a core of its own would serve "
        "a million divided by it per second, while here the load generator and Redis share the two "
        "cores with it. The no-op app's rows are the floor of the server and pydantic under the same "
        "load: a goal above the no-op app's rate asks more than the server gives an app that does "
        "nothing.",
        "",
        "The WebSocket rows run one socket with 64 messages in flight. The service answers them through "
        "`service/ws_protocol.py`: the replies made in one iteration of the event loop leave in one "
        "write, where uvicorn's own protocol makes a system call per reply. Of the messages read at "
        "once, it handles 16 between two turns of the event loop (`service.api.ws.TURN_EVERY`), so "
        "that the first replies are stored and sent while the rest is scored. The no-op app runs "
        "uvicorn as it comes. The load generator builds its frames before the clock starts and cuts the "
        "server's frames out of the stream itself (`bench/loadgen.py`), so that it takes little of "
        "the two cores it shares with the service and Redis. With 64 messages in flight, a run's "
        "rate is also bound by how long a batch of messages takes to come back, the pending write's "
        "round trip to Redis included, and not only by the service's CPU time per message.",
        "",
        "The open loop starts once Redis has rewritten its append-only file (`BGREWRITEAOF`, "
        f"{o['settle_seconds']:.1f} s in the median run) and has no fsync pending: the scenarios "
        "before it write about 100 MiB of pending predictions, and Redis's automatic rewrite, a fork "
        "on the cores the service shares, would otherwise land inside the loop's seconds. The next "
        "row is the same loop started together with a rewrite (which ran on for "
        f"{during['settle_seconds']:.1f} s after the loop in the median run): the tail an operator "
        "sees while Redis rewrites on the service's machine.",
    ]
    lines += profile_lines(r["paired"]["uvicorn"].get("profile"), r.get("label_profile"))
    lines += [
        "",
        "Memory per model (learner state; service RSS growth; Redis growth with one checkpoint kept "
        "after 200 labels, log included) and per pending prediction:",
        "",
        "| memory | learner state | service RSS | Redis |",
        "|---|---:|---:|---:|",
    ]
    for name, m in r["memory"].items():
        state = f"{m['state'] / 1024:,.1f} KiB" if "state" in m else ""
        rss, redis_bytes = m["rss_per_model"] / 1024, m["redis_per_model"] / 1024
        lines.append(f"| {name} | {state} | {rss:,.1f} KiB | {redis_bytes:,.2f} KiB |")
    return "\n".join(lines)
