"""docker-compose.yml: valid for Compose, and consistent with the Dockerfile, Prometheus and the CLI."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import yaml

from .compose_mounts import bind_mounts, container_ports, mounts, published_ports, resolve_in_container
from .conftest import COMPOSE_FILE, run_compose_config
from .dockerfile import Stage, env_values

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_CONFIG = ROOT / "docker" / "prometheus" / "prometheus.yml"


def stage_named(stages: list[Stage], name: str) -> Stage:
    by_name = {stage.name: stage for stage in stages}
    assert name in by_name, f"the Dockerfile has no stage {name!r} (stages: {list(by_name)})"
    return by_name[name]


def test_compose_accepts_the_file_and_it_runs_the_whole_stack(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"api", "redis", "prometheus", "grafana", "demo"}
    declared = set(compose.get("volumes", {}))
    for name, service in compose["services"].items():
        for mount in mounts(service):
            if not mount.is_bind:
                assert mount.source in declared, f"{name}: volume {mount.source} is not declared"


def test_compose_rejects_an_invalid_file(tmp_path: Path) -> None:
    """The validation above is real: Compose refuses a misspelt key in a copy of the file."""
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    document["services"]["api"]["restrat"] = "always"
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(yaml.safe_dump(document))
    result = run_compose_config(broken)
    assert result.returncode != 0
    assert "restrat" in result.stderr


def test_images_are_pinned(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        image = service["image"]
        assert ":" in image.rsplit("/", 1)[-1], f"{name}: {image} has no tag"
        assert not image.endswith(":latest"), f"{name}: {image}"


def test_every_bind_mount_source_is_in_the_repo(compose: dict[str, Any]) -> None:
    binds = [(name, m) for name, service in compose["services"].items() for m in bind_mounts(service)]
    assert binds
    for name, mount in binds:
        source = Path(mount.source)
        assert source.exists(), f"{name}: {source} does not exist"
        assert ROOT in source.parents, f"{name}: {source} is outside the repo"
        assert mount.read_only, f"{name}: config mount {mount.target} should be read-only"


def test_redis_is_durable_and_health_checked(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    assert redis["image"].split(":")[0] == "redis" and redis["image"].split(":")[1].startswith("7")
    command = redis["command"]
    options = dict(zip(command[1::2], command[2::2], strict=True))
    assert command[0] == "redis-server"
    assert options == {"--appendonly": "yes", "--appendfsync": "everysec", "--maxmemory-policy": "noeviction"}
    (data,) = [m for m in mounts(redis) if m.target == PurePosixPath("/data")]
    assert not data.is_bind and data.source in compose["volumes"]
    assert redis["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_api_is_built_from_the_runtime_stage_and_waits_for_redis(
    compose: dict[str, Any], stages: list[Stage]
) -> None:
    api = compose["services"]["api"]
    assert Path(api["build"]["context"]) == ROOT
    assert (ROOT / api["build"]["dockerfile"]) == ROOT / "docker" / "Dockerfile"
    assert api["build"]["target"] == "runtime" == stages[-1].name  # the default target too
    assert api["depends_on"]["redis"]["condition"] == "service_healthy"
    redis_url = urlsplit(api["environment"]["ACOG_REDIS_URL"])
    assert redis_url.scheme == "redis"
    assert redis_url.hostname == "redis" and redis_url.port == 6379


def test_api_port_is_the_one_the_image_listens_on(compose: dict[str, Any], stages: list[Stage]) -> None:
    runtime = stage_named(stages, "runtime")
    env = env_values(runtime, stages)
    expose = runtime.last("EXPOSE")
    assert expose is not None
    api_ports = published_ports(compose["services"]["api"])
    assert [(host_ip, host, container) for host_ip, host, container in api_ports] == [
        ("127.0.0.1", 8000, int(env["ACOG_PORT"]))
    ]
    assert expose.arguments.split("/")[0] == env["ACOG_PORT"]
    assert env["ACOG_HOST"] == "0.0.0.0"
    # checkpoints survive a re-created container: the data directory is a named volume
    (data,) = [
        m for m in mounts(compose["services"]["api"]) if m.target == PurePosixPath(env["ACOG_DATA_DIR"])
    ]
    assert not data.is_bind


def test_prometheus_scrapes_the_api_service(compose: dict[str, Any]) -> None:
    jobs = {job["job_name"]: job for job in yaml.safe_load(PROMETHEUS_CONFIG.read_text())["scrape_configs"]}
    (target,) = [t for s in jobs["acog"]["static_configs"] for t in s["targets"]]
    host, port = target.split(":")
    assert host in compose["services"], f"scrape target {target} is not a compose service"
    assert host == "api"
    assert int(port) in container_ports(compose["services"][host])


def test_prometheus_reads_the_repo_config(compose: dict[str, Any]) -> None:
    prometheus = compose["services"]["prometheus"]
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in prometheus["command"])
    config = resolve_in_container(PurePosixPath(flags["config.file"]), bind_mounts(prometheus))
    assert config == PROMETHEUS_CONFIG
    storage = [m for m in mounts(prometheus) if m.target == PurePosixPath(flags["storage.tsdb.path"])]
    assert storage and not storage[0].is_bind
    assert 9090 in container_ports(prometheus)
    assert 3000 in container_ports(compose["services"]["grafana"])


def test_default_model_fits_the_demo_data_set(compose: dict[str, Any]) -> None:
    from sklearn.datasets import load_breast_cancer

    model = json.loads(compose["services"]["api"]["environment"]["ACOG_DEFAULT_MODEL"])
    assert model["name"] == "default"
    assert model["n_features"] == load_breast_cancer().data.shape[1] == 30


def test_demo_replays_against_the_api_in_bounded_runs(compose: dict[str, Any], stages: list[Stage]) -> None:
    demo = compose["services"]["demo"]
    assert demo["build"]["target"] == "demo"
    assert demo["build"]["dockerfile"] == compose["services"]["api"]["build"]["dockerfile"]
    command = demo["command"]
    assert command[:2] == ["acog", "replay"]
    url = urlsplit(command[2])
    assert url.hostname == "api" and url.port in container_ports(compose["services"]["api"])
    assert command[3] == "sklearn:breast_cancer"
    from service.cli import build_parser

    args = build_parser().parse_args(command[1:])
    assert args.delay == 2
    assert 0 < args.limit <= 10_000
    assert args.rate is not None and args.rate <= 100, "unpaced, every prediction precedes every label"
    assert demo["restart"] in {"always", "unless-stopped"}, "the demo must start its next bounded run"
    assert demo["depends_on"]["api"]["condition"] == "service_healthy"
    demo_stage = stage_named(stages, "demo")
    cmd = demo_stage.last("CMD")
    assert cmd is not None and cmd.exec_form() == command, "Dockerfile demo CMD and compose command differ"


def test_api_service_has_a_health_check_for_the_demo_to_wait_on(
    compose: dict[str, Any], stages: list[Stage]
) -> None:
    """`condition: service_healthy` needs a health check: the compose file's, or the image's."""
    api = compose["services"]["api"]
    runtime = stage_named(stages, "runtime")
    assert "healthcheck" in api or runtime.last("HEALTHCHECK") is not None


def test_demo_command_parses_with_the_acog_cli(compose: dict[str, Any]) -> None:
    from service.cli import build_parser

    args = build_parser().parse_args(compose["services"]["demo"]["command"][1:])
    assert args.command == "replay" and args.dataset == "sklearn:breast_cancer"
