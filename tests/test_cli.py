"""The real ``acog`` command, run as a user runs it: a mistake is one line on stderr and exit code 2,
never a traceback; ``--version`` and the defaults in ``--help``."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Mapping
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest
import redis

from .support.private_redis import PrivateRedis, free_port

ACOG = Path(sys.executable).parent / "acog"
ROOT = Path(__file__).resolve().parents[1]


def acog(*argv: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    kept = ("ACOG_JIT_CACHE_DIR", "ACOG_DATASETS_DIR")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ACOG_") or k in kept}
    return subprocess.run(
        [str(ACOG), *argv],
        env={**clean, **(env or {})},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_line_refusal(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("acog"), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["evaluate", "/no/such/file.svm"], ["/no/such/file.svm", "neither a known data set"]),
        (["evaluate", "no-such-set"], ["'no-such-set'", "known data set"]),
        (["evaluate", "german", "--datasets-dir", "/no/such/dir"], ["german", "/no/such/dir"]),
        (
            ["evaluate", "german", "--algorithms", "acog-iii"],
            ["--algorithms", "unknown algorithm 'acog-iii'"],
        ),
        (["evaluate", "german", "--permutations", "0"], ["--permutations", "at least 1"]),
        (["evaluate", "german", "--permutations", "-2"], ["--permutations", "at least 1"]),
        (["evaluate", "german", "--permutations", "many"], ["--permutations", "whole number"]),
        (["evaluate", "german", "--c-p", "1"], ["--c-p", "between 0 and 1"]),
        (["evaluate", "german", "--eta", "0"], ["--eta", "> 0"]),
        (["evaluate", "wdbc", "--protocol", "oli2ds", "--rounds", "0"], ["--rounds"]),
        (["evaluate", "german", "--protocol", "sdrogd", "--folds", "1"], ["--folds", "at least 2"]),
        (["evaluate", "german", "--protocol", "opid"], ["opid protocol knows dna"]),
        (["serve", "--workers", "0"], ["--workers", "at least 1"]),
        (["serve", "--port", "70000"], ["--port", "65535"]),
        (["replay", "http://127.0.0.1:9", "german", "--limit", "0"], ["--limit"]),
        (["replay", "http://127.0.0.1:9", "german", "--rate", "0"], ["--rate"]),
        (["replay", "http://127.0.0.1:9", "german", "--delay", "-1"], ["--delay"]),
        (["replay", "http://127.0.0.1:9", "german", "--wait", "60"], ["nothing answers at", "refused"]),
        (["replay", "127.0.0.1:8000", "german"], ["argument url", "not an http:// or https:// URL"]),
        (["replay", "not a url", "german"], ["argument url", "'not a url'"]),
        (["replay", "http://127.0.0.1:99999", "german"], ["argument url", "out of range"]),
        (["warm-up", "--algorithms", "acog,nope"], ["--algorithms", "unknown algorithm 'nope'"]),
        (["no-such-command"], ["invalid choice"]),
    ],
)
def test_a_users_mistake_is_one_line_and_exit_code_2(argv: list[str], words: list[str]) -> None:
    assert_one_line_refusal(acog(*argv), *words)


def test_replay_refuses_a_dead_port_without_waiting_for_readiness() -> None:
    started = time.monotonic()
    result = acog("replay", f"http://127.0.0.1:{free_port()}", "german", "--wait", "60")
    assert_one_line_refusal(result, "nothing answers at")
    assert time.monotonic() - started < 20  # not the 60 s --wait: the probe gives up after about 1 s


def data_file(directory: Path, name: str, content: bytes) -> str:
    path = directory / name
    path.write_bytes(content)
    return str(path)


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("empty.svm", b"", ["holds no examples"]),
        ("blank.svm", b"\n\n", ["holds no examples"]),
        ("corrupt.mat", b"MATLAB 5.0 MAT-file" + bytes(range(256)) * 4, ["corrupt.mat"]),
        ("truncated.mat", b"", ["truncated.mat", "appears to be truncated"]),
        ("one-class.svm", b"1 1:1\n1 2:0.5\n1 1:2 2:1\n", ["all 3 labels are +1", "both classes"]),
        ("negatives.svm", b"-1 1:1\n-1 2:0.5\n", ["all 2 labels are -1"]),
    ],
)
def test_a_bad_data_file_is_one_line_and_exit_code_2(
    tmp_path: Path, name: str, content: bytes, words: list[str]
) -> None:
    path = data_file(tmp_path, name, content)
    assert_one_line_refusal(acog("evaluate", path), *words)


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"ACOG_DEFAULT_MODEL": '{"n_features": 0}'}, ["ACOG_DEFAULT_MODEL", "n_features", "greater than"]),
        (
            {"ACOG_DEFAULT_MODEL": '{"n_features": 3, "algorithm": "acog-iii"}'},
            ["ACOG_DEFAULT_MODEL", "algorithm"],
        ),
        (
            {"ACOG_DEFAULT_MODEL": '{"n_features": 3, "algorithm": "perceptron", "eta": 2}'},
            ["eta", "perceptron"],
        ),
        ({"ACOG_DEFAULT_MODEL": '{"name": "a b", "n_features": 3}'}, ["ACOG_DEFAULT_MODEL", "name"]),
        ({"ACOG_DEFAULT_MODEL": "{"}, ["ACOG_DEFAULT_MODEL", "JSON object"]),
        ({"ACOG_PORT": "http"}, ["ACOG_PORT", "integer"]),
        ({"ACOG_API_KEYS": "a key"}, ["ACOG_API_KEYS", "printable ASCII"]),
        ({"ACOG_WARM_UP": "some"}, ["ACOG_WARM_UP", "'all' or 'models'"]),
        (
            {"ACOG_BLAS_CORE_TYPE": "NoSuchCore"},
            ["ACOG_BLAS_CORE_TYPE", "did not take 'NoSuchCore'"],
        ),
        ({"ACOG_BLAS_CORE_TYPE": ""}, ["ACOG_BLAS_CORE_TYPE"]),
        ({"ACOG_REDIS_URL": "http://127.0.0.1:6379"}, ["ACOG_REDIS_URL", "scheme"]),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(env: dict[str, str], words: list[str]) -> None:
    assert_one_line_refusal(acog("serve", env=env), *words)


def test_a_redis_that_does_not_answer_is_one_line() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    assert_one_line_refusal(acog("serve", env={"ACOG_REDIS_URL": url}), "ACOG_REDIS_URL", "does not answer")


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


def test_a_port_in_use_is_one_line(busy_port: int) -> None:
    result = acog("serve", "--port", str(busy_port))
    assert_one_line_refusal(result, f"port {busy_port}", "in use")


def test_version_comes_from_the_package_metadata() -> None:
    result = acog("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"acog {version('acog-service')}"


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["evaluate", "--help"], ["--permutations PERMUTATIONS", "(default: 20)", "(default: online)"]),
        (["serve", "--help"], ["(default: 1)", "(default: $ACOG_PORT, else 8000)"]),
        (["replay", "--help"], ["(default: 1.0)", "(default: default)"]),
    ],
)
def test_help_shows_the_defaults(argv: list[str], shown: list[str]) -> None:
    result = acog(*argv)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    for item in shown:
        assert " ".join(item.split()) in text, item


def test_evaluate_is_the_research_packages_entry_point() -> None:
    """The product never imports ``research``: ``acog evaluate`` is the ``acog.commands`` entry point
    the distribution declares, read from the installed metadata (``pip install -e .`` writes it)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert declared["acog.commands"] == {"evaluate": "research.cli:command"}
    from research.cli import command
    from service.cli import added_commands

    assert added_commands()["evaluate"] is command, "reinstall (pip install -e .) to register the entry point"


def test_an_installation_without_the_entry_point_says_to_reinstall(tmp_path: Path) -> None:
    """Metadata from before the entry point (an editable install not reinstalled): ``acog evaluate``
    is listed still, and says what to do, in one line. (Run outside the checkout: ``python -c``
    puts the working directory first on ``sys.path``, and an editable build leaves its
    ``acog_service.egg-info``, entry points included, in the checkout.)"""
    info = tmp_path / "acog_service-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acog-service\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[console_scripts]\nacog = service.cli:main\n")
    code = "import sys; from service.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    listed = subprocess.run([sys.executable, "-c", code, "--help"], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert listed.returncode == 0 and "evaluate" in listed.stdout, listed.stderr
    refused = subprocess.run([sys.executable, "-c", code, "evaluate", "german", "--permutations", "2"],
                             env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert refused.returncode == 2 and refused.stdout == "", refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("acog evaluate: error:") and "acog.commands" in line and "pip install -e ." in line


def test_help_never_shows_the_api_key() -> None:
    result = acog("replay", "--help", env={"ACOG_API_KEY": "s3cret-key-value-0123"})
    assert "s3cret" not in result.stdout


def test_warm_up_fills_a_cache_that_the_next_process_loads(tmp_path: Path) -> None:
    env = {"ACOG_JIT_CACHE_DIR": str(tmp_path / "kernels")}
    first = acog("warm-up", "--algorithms", "perceptron", env=env)
    assert first.returncode == 0, first.stderr
    assert (
        "for 1 algorithms (perceptron)" in first.stdout
        and " 0 kernel specialisations compiled" not in first.stdout
    )
    assert str(tmp_path / "kernels") in first.stdout
    second = acog("warm-up", "--algorithms", "perceptron", env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("acog warm-up: 0 kernel specialisations compiled"), second.stdout
    assert re.search(r", [1-9]\d* loaded from ", second.stdout), second.stdout


def test_serve_with_workers_warms_the_kernel_cache_once_and_the_workers_load_it(
    redis_url: str, tmp_path: Path
) -> None:
    import httpx
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACOG_") or k == "ACOG_JIT_CACHE_DIR"}
    env |= {"ACOG_REDIS_URL": redis_url, "ACOG_DATA_DIR": str(tmp_path / "data"), "ACOG_WARM_UP": "all"}
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(ACOG), "serve", "--workers", "2", "--port", str(port)],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert process.poll() is None, log.read_text()
        ready = [line for line in log.read_text().splitlines() if "kernels of every algorithm ready" in line]
        deadline = time.monotonic() + 60
        while len(ready) < 2 and time.monotonic() < deadline:  # the second worker may still be loading
            time.sleep(0.2)
            ready = [
                line for line in log.read_text().splitlines() if "kernels of every algorithm ready" in line
            ]
    finally:
        process.terminate()
        process.wait(60)
        redis.Redis.from_url(redis_url).flushdb()
    text = log.read_text()
    assert text.count("acog warm-up: ") == 1, text  # once, in the supervising process's child
    assert len(ready) == 2, text
    assert all(": 0 kernel specialisations compiled" in line for line in ready), ready


def test_a_durability_the_redis_cannot_honour_is_one_line(tmp_path: Path) -> None:
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        with redis.Redis(port=server.port) as client:
            release = str(client.info("server")["redis_version"])
        if tuple(int(v) for v in release.split(".")[:2]) >= (7, 2):
            pytest.skip(f"this Redis ({release}) has WAITAOF")
        result = acog("serve", env={"ACOG_REDIS_URL": server.url, "ACOG_REDIS_WAIT_AOF": "true"})
        assert_one_line_refusal(result, "ACOG_REDIS_WAIT_AOF", "needs Redis 7.2")
    finally:
        server.close()


def test_a_redis_that_refuses_writes_is_waited_for(tmp_path: Path) -> None:
    """NOREPLICAS (min-replicas-to-write with no replica): the start waits, one line per try, and
    goes on once Redis takes writes."""
    server = PrivateRedis(tmp_path)
    server.start()
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ACOG_") or k == "ACOG_JIT_CACHE_DIR"}
    env = {**clean, "ACOG_REDIS_URL": server.url, "ACOG_DATA_DIR": str(tmp_path / "data")}
    stderr = tmp_path / "stderr"
    with redis.Redis(port=server.port) as client:
        client.config_set("min-replicas-to-write", 1)
    with stderr.open("w") as err:
        process = subprocess.Popen(
            [str(ACOG), "serve", "--port", str(port)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 60
        while "refuses writes" not in stderr.read_text():
            assert process.poll() is None and time.monotonic() < deadline, stderr.read_text()
            time.sleep(0.1)
        assert "NOREPLICAS" in stderr.read_text() and "Traceback" not in stderr.read_text()
        with redis.Redis(port=server.port) as client:
            client.config_set("min-replicas-to-write", 0)
        while True:
            assert process.poll() is None and time.monotonic() < deadline, stderr.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(30)
        server.close()
