"""docker/grafana/provisioning: the YAMLs parse and point at what docker-compose.yml mounts."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import yaml

from .compose_mounts import bind_mounts, container_ports, resolve_in_container

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "docker" / "grafana"
DATASOURCES = GRAFANA / "provisioning" / "datasources" / "prometheus.yml"
PROVIDERS = GRAFANA / "provisioning" / "dashboards" / "dashboards.yml"
PROMETHEUS_CONFIG = ROOT / "docker" / "prometheus" / "prometheus.yml"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def test_datasource_points_at_the_compose_prometheus(compose: dict[str, Any]) -> None:
    config = load(DATASOURCES)
    assert config["apiVersion"] == 1
    (datasource,) = config["datasources"]
    assert datasource["type"] == "prometheus"
    assert datasource["uid"] == "prometheus"
    assert datasource["access"] == "proxy"
    url = urlsplit(datasource["url"])
    assert url.scheme == "http"
    assert url.hostname in compose["services"], f"{url.hostname} is not a compose service"
    assert url.port in container_ports(compose["services"][url.hostname])


def test_datasource_interval_matches_the_scrape_interval() -> None:
    """Grafana's $__rate_interval is at least four of these: it must be the real scrape interval."""
    (datasource,) = load(DATASOURCES)["datasources"]
    jobs = {job["job_name"]: job for job in load(PROMETHEUS_CONFIG)["scrape_configs"]}
    assert datasource["jsonData"]["timeInterval"] == jobs["acog"]["scrape_interval"]


def test_dashboard_provider_reads_the_mounted_dashboards(compose: dict[str, Any]) -> None:
    config = load(PROVIDERS)
    assert config["apiVersion"] == 1
    (provider,) = config["providers"]
    assert provider["type"] == "file"
    mounts = bind_mounts(compose["services"]["grafana"])
    host_dir = resolve_in_container(PurePosixPath(provider["options"]["path"]), mounts)
    assert host_dir == GRAFANA / "dashboards"
    dashboards = sorted(host_dir.glob("*.json"))
    assert dashboards, f"no dashboard in {host_dir}"
    for path in dashboards:
        assert json.loads(path.read_text())["uid"]


def test_provisioning_directory_is_mounted_where_grafana_reads_it(compose: dict[str, Any]) -> None:
    mounts = bind_mounts(compose["services"]["grafana"])
    assert (
        resolve_in_container(PurePosixPath("/etc/grafana/provisioning"), mounts) == GRAFANA / "provisioning"
    )
    for path in (DATASOURCES, PROVIDERS):
        container_path = PurePosixPath("/etc/grafana/provisioning") / path.relative_to(
            GRAFANA / "provisioning"
        )
        assert resolve_in_container(container_path, mounts) == path


def test_home_dashboard_is_a_mounted_file(compose: dict[str, Any]) -> None:
    grafana = compose["services"]["grafana"]
    home = PurePosixPath(grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    host_file = resolve_in_container(home, bind_mounts(grafana))
    assert host_file == GRAFANA / "dashboards" / "acog.json"
    assert host_file.is_file()


def test_grafana_lets_anonymous_viewers_in(compose: dict[str, Any]) -> None:
    environment = compose["services"]["grafana"]["environment"]
    assert environment["GF_AUTH_ANONYMOUS_ENABLED"] == "true"
    assert environment["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
