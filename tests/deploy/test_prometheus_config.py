"""docker/prometheus: promtool accepts the config and the rules, and the alert unit tests pass."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from .metric_names import promql_names
from .promql import ALERTS, alert_queries, metric_names, promtool

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = ROOT / "docker" / "prometheus"
CONFIG = PROMETHEUS_DIR / "prometheus.yml"
ALERT_TESTS = Path(__file__).with_name("alerts_test.yml")


def run_promtool(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def test_promtool_accepts_the_config_and_finds_its_rule_files() -> None:
    result = run_promtool("check", "config", str(CONFIG))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(load(CONFIG)['rule_files'])} rule files found" in result.stdout


def test_config_is_independent_of_where_it_is_mounted(tmp_path: Path) -> None:
    """Compose mounts the directory at /etc/prometheus: relative rule_files still resolve there."""
    mounted = tmp_path / "etc" / "prometheus"
    shutil.copytree(PROMETHEUS_DIR, mounted)
    result = run_promtool("check", "config", "prometheus.yml", cwd=mounted)
    assert result.returncode == 0, result.stdout + result.stderr
    for rule_file in load(CONFIG)["rule_files"]:
        assert not Path(rule_file).is_absolute(), rule_file
        assert (PROMETHEUS_DIR / rule_file).is_file(), rule_file


def test_promtool_rejects_a_config_whose_rule_file_is_missing(tmp_path: Path) -> None:
    """The check above is not vacuous: promtool does resolve and read the rule files."""
    shutil.copy(CONFIG, tmp_path / "prometheus.yml")
    result = run_promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert result.returncode != 0


def test_acog_job_scrapes_the_api_every_five_seconds() -> None:
    jobs = {job["job_name"]: job for job in load(CONFIG)["scrape_configs"]}
    acog = jobs["acog"]
    assert acog["scrape_interval"] == "5s"
    assert acog.get("metrics_path", "/metrics") == "/metrics"
    assert [t for s in acog["static_configs"] for t in s["targets"]] == ["api:8000"]


def test_promtool_accepts_the_alert_rules() -> None:
    result = run_promtool("check", "rules", str(ALERTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_queries())} rules found" in result.stdout


def test_alert_unit_tests_pass() -> None:
    result = run_promtool("test", "rules", str(ALERT_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_unit_test_that_fires_it() -> None:
    fired = {
        case["alertname"]
        for test in load(ALERT_TESTS)["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    alerts = {rule["alert"] for group in load(ALERTS)["groups"] for rule in group["rules"] if "alert" in rule}
    assert alerts == fired
    assert (ALERT_TESTS.parent / load(ALERT_TESTS)["rule_files"][0]).resolve() == ALERTS


def test_alerts_are_labelled_and_explained() -> None:
    for group in load(ALERTS)["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in {"critical", "warning", "info"}, rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
            assert rule.get("for"), f"{rule['alert']}: a one-sample blip should not page"


def test_alert_rules_use_only_contract_metrics() -> None:
    allowed = promql_names() | {"up"}
    for query in alert_queries():
        names = metric_names(query.expr)
        assert names, query.source
        assert names <= allowed, f"{query.source}: unknown metrics {names - allowed}"
