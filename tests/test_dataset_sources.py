"""The data set registry: every file's source, size, sha256 and licence; ``acog datasets fetch`` into
a cache (downloads checked before they are stored); one line saying how to get the data when it is
absent, from the library, the CLI, the example and the test session itself."""

from __future__ import annotations

import functools
import http.server
import lzma
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.datasets import REGISTRY, DatasetUnavailable, files_of, load
from service.datasets.fetch import fetch, sha256, verify
from service.datasets.sources import FILES, DataFile

from .conftest import DATASETS
from .support.private_redis import free_port

REPO = Path(__file__).resolve().parents[1]


def acog(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ACOG_DATASETS")} | env
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args], capture_output=True, text=True, env=full, timeout=60
    )


@pytest.fixture
def web(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A web server on 127.0.0.1 serving ``tmp_path / "www"``: (base URL, directory)."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()


def test_every_registered_file_has_a_source_a_size_a_checksum_and_a_licence() -> None:
    assert set(files_of()) <= set(FILES)
    for f in FILES.values():
        assert f.url.startswith("https://") or f.transform == "german-numer", f.path
        assert f.size > 0 and len(f.sha256) == 64 and f.licence, f.path
        assert (f.content_sha256 is None) == (f.transform == "none"), f.path


@pytest.mark.parametrize("path", list(FILES))
def test_the_mirror_holds_exactly_the_registered_bytes(path: str) -> None:
    stored = (DATASETS / path).read_bytes()
    assert len(stored) == FILES[path].size
    assert sha256(stored) == FILES[path].sha256
    if FILES[path].content_sha256 is not None:
        assert sha256(lzma.decompress(stored)) == FILES[path].content_sha256


def test_fetch_from_a_mirror_server_checks_every_file(tmp_path: Path, web: tuple[str, Path]) -> None:
    base, www = web
    for path in REGISTRY["german"].files + REGISTRY["wdbc"].files:
        (www / path).parent.mkdir(parents=True, exist_ok=True)
        (www / path).write_bytes((DATASETS / path).read_bytes())
    cache = {"ACOG_DATASETS_CACHE": str(tmp_path / "c")}
    done = acog("datasets", "fetch", "german", "wdbc", "--from", base, env=cache)
    assert done.returncode == 0, done.stderr
    assert "2 file(s) downloaded" in done.stdout
    assert load("german", datasets_dir=tmp_path / "c").X.shape == (1000, 24)
    # a corrupted copy on the server is refused, and nothing is stored
    (www / "oli2ds/credit-a.csv.xz").parent.mkdir(parents=True, exist_ok=True)
    (www / "oli2ds/credit-a.csv.xz").write_bytes(b"not the file")
    bad = acog("datasets", "fetch", "credit-a", "--from", base, env=cache)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "sha256" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "c" / "oli2ds" / "credit-a.csv.xz").exists()


def test_a_source_download_is_normalised_compressed_and_checked(
    tmp_path: Path, web: tuple[str, Path]
) -> None:
    base, www = web
    path = "australian/australian_scale.xz"
    text = lzma.decompress((DATASETS / path).read_bytes())
    (www / "australian_scale.txt").write_bytes(text.replace(b"\n", b"\r\n\r\n"))  # as the source has it
    original = FILES[path]
    FILES[path] = DataFile(**{**original.__dict__, "url": f"{base}/australian_scale.txt"})
    try:
        written = fetch([path], tmp_path)
        assert written == [tmp_path / path]
        assert lzma.decompress((tmp_path / path).read_bytes()) == text and verify(tmp_path / path, original)
        assert load("australian", datasets_dir=tmp_path).X.shape == (690, 14)
        (www / "australian_scale.txt").write_bytes(text[:-10])  # truncated: refused
        (tmp_path / path).unlink()
        with pytest.raises(DatasetUnavailable, match="sha256"):
            fetch([path], tmp_path)
        assert not (tmp_path / path).exists()
    finally:
        FILES[path] = original


def test_german_numer_is_derived_from_german_mat(tmp_path: Path, web: tuple[str, Path]) -> None:
    (tmp_path / "german").mkdir()
    (tmp_path / "german" / "german.mat").write_bytes((DATASETS / "german/german.mat").read_bytes())
    fetch(["german/german.numer.xz"], tmp_path)
    assert verify(tmp_path / "german/german.numer.xz", FILES["german/german.numer.xz"])


def test_without_internet_fetch_fails_in_one_line_saying_how(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # a proxy that refuses: no route to the internet
    done = acog(
        "datasets", "fetch", "german",
        env={"ACOG_DATASETS_CACHE": str(tmp_path), "https_proxy": dead, "HTTPS_PROXY": dead, "no_proxy": ""},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "ACOG_DATASETS_DIR" in done.stderr and "acog datasets fetch --from" in done.stderr
    assert not any(tmp_path.rglob("*.mat"))


def test_a_missing_data_set_is_one_line_naming_the_mirror_variable_and_the_fetch(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailable) as refused:
        load("german", datasets_dir=tmp_path)
    assert "ACOG_DATASETS_DIR" in str(refused.value) and "acog datasets fetch german" in str(refused.value)
    evaluated = acog("evaluate", "german", env={"ACOG_DATASETS_DIR": str(tmp_path)})
    assert evaluated.returncode == 2 and len(evaluated.stderr.strip().splitlines()) == 1
    assert "acog datasets fetch german" in evaluated.stderr


def test_the_example_says_how_to_get_its_data_instead_of_a_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACOG_DATASETS")}
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "credit_delayed_labels.py"), "http://127.0.0.1:9"],
        capture_output=True, text=True, timeout=60,
        env=env | {"ACOG_DATASETS_DIR": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "acog datasets fetch german" in done.stderr


def test_the_test_session_stops_in_one_line_when_the_data_sets_are_absent(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACOG_DATASETS")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_redis_fixture.py"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env=env | {"ACOG_DATASETS_DIR": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    said = [line for line in (done.stdout + done.stderr).splitlines() if "ACOG_DATASETS_DIR" in line]
    assert len(said) == 1 and "acog datasets fetch" in said[0], done.stdout + done.stderr
    assert "passed" not in done.stdout and "failed" not in done.stdout
