"""PromQL as the deployment files hold it: collect it, make it plain PromQL, name its metrics.

- :func:`dashboard_queries` and :func:`alert_queries` collect every expression.
- :func:`substitute_variables` replaces Grafana's template variables with literals.
- :func:`promtool_check` has promtool's real PromQL parser check a batch of expressions.
- :func:`metric_names` lists the metric names an expression selects. It is a small lexer,
  not a parser: promtool checks the syntax, this only finds the names.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..support.system_tools import system_tool

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docker" / "grafana" / "dashboards" / "acog.json"
ALERTS = ROOT / "docker" / "prometheus" / "alerts.yml"

# Grafana's built-in variables, with values that make valid PromQL.
GRAFANA_BUILTINS = {
    "__rate_interval": "1m",
    "__interval": "1m",
    "__interval_ms": "60000",
    "__range": "1h",
    "__range_s": "3600",
    "__range_ms": "3600000",
}

_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)(?::\w+)?\]\]|\$(\w+)")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_MODIFIERS = re.compile(r"\boffset\s+-?[0-9a-z]+|@\s*(?:start\(\)|end\(\)|[0-9.]+)")
_NUMBER = re.compile(r"(?<![\w:])(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_KEYWORDS = frozenset(
    {
        "and",
        "or",
        "unless",
        "bool",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "offset",
        "atan2",
        "inf",
        "nan",
        "Inf",
        "NaN",
    }
)


@dataclass(frozen=True)
class Query:
    """One PromQL expression and where it comes from."""

    source: str  # e.g. "panel 7 'Weighted sum' target A" or "alert AcogApiDown"
    expr: str
    record_name: str  # a valid metric name, unique per query, for promtool recording rules


def substitute_variables(expr: str, variables: dict[str, str]) -> str:
    """Replace ``$var``, ``${var}``, ``${var:fmt}`` and ``[[var]]`` with literals.

    ``variables`` holds the dashboard's own variables; Grafana's built-ins are added.
    An unknown variable raises ``KeyError``.
    """
    values = {**GRAFANA_BUILTINS, **variables}

    def replace(match: re.Match[str]) -> str:
        name = next(group for group in match.groups() if group)
        return values[name]

    return _VARIABLE.sub(replace, expr)


def metric_names(expr: str) -> set[str]:
    """The metric names that ``expr`` (plain PromQL, no template variables) selects."""
    if re.search(r"__name__", expr):
        raise ValueError(f"selecting by __name__ hides the metric name from checks: {expr}")
    text = _STRING.sub('""', expr)
    text = _MATCHERS.sub("{}", text)
    text = _BRACKETS.sub("[]", text)
    text = _GROUPING.sub(" ", text)
    text = _MODIFIERS.sub(" ", text)
    text = _NUMBER.sub(" ", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        word = match.group()
        if word in _KEYWORDS or re.match(r"\s*\(", text[match.end() :]):
            continue  # a keyword, or a function or aggregation call
        names.add(word)
    return names


def load_dashboard(path: Path = DASHBOARD) -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(path.read_text())
    return dashboard


def iter_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, including those nested in collapsed rows."""
    panels: list[dict[str, Any]] = []
    for panel in dashboard.get("panels", []):
        panels.append(panel)
        panels.extend(panel.get("panels", []))
    return panels


def template_values(dashboard: dict[str, Any], value: str = "default") -> dict[str, str]:
    """A literal for each of the dashboard's template variables."""
    return {variable["name"]: value for variable in dashboard.get("templating", {}).get("list", [])}


def dashboard_queries(dashboard: dict[str, Any], *, substitute: bool = True) -> list[Query]:
    """Every panel target's ``expr`` (template variables substituted unless told not to)."""
    values = template_values(dashboard)
    queries = []
    for panel in iter_panels(dashboard):
        for target in panel.get("targets", []):
            expr = target["expr"]
            queries.append(
                Query(
                    source=f"panel {panel['id']} {panel.get('title')!r} target {target.get('refId')}",
                    expr=substitute_variables(expr, values) if substitute else expr,
                    record_name=f"dashboard:panel_{panel['id']}:{target.get('refId', 'A').lower()}",
                )
            )
    return queries


def alert_queries(path: Path = ALERTS) -> list[Query]:
    """Every alerting and recording rule's ``expr``."""
    queries = []
    for group in yaml.safe_load(path.read_text())["groups"]:
        for index, rule in enumerate(group["rules"]):
            name = rule.get("alert") or rule.get("record")
            queries.append(
                Query(
                    source=f"rule {name} (group {group['name']})",
                    expr=rule["expr"],
                    record_name=f"alerts:{re.sub(r'[^A-Za-z0-9_]', '_', group['name'])}:{index}",
                )
            )
    return queries


def promtool() -> str:
    return system_tool("promtool")


def promtool_check(queries: list[Query], workdir: Path) -> subprocess.CompletedProcess[str]:
    """Write ``queries`` as recording rules and run ``promtool check rules`` on them.

    promtool parses every ``expr`` with Prometheus' own PromQL parser, so a syntax error,
    an unknown function or a wrong argument type fails the check.
    """
    rules = {
        "groups": [{"name": "queries", "rules": [{"record": q.record_name, "expr": q.expr} for q in queries]}]
    }
    path = workdir / "queries.rules.yml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
