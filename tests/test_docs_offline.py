"""``/docs`` and ``/redoc`` work on a host without internet access: every script, style sheet and
icon they reference is served by the service itself, without an API key (like ``/openapi.json``)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
import redis

from .support.service_process import ServiceProcess

KEYS = {"ACOG_API_KEYS": "docs-test-api-key-0123456789", "ACOG_ADMIN_KEYS": "docs-test-admin-key-0123456789"}


@pytest.fixture(scope="module")
def service(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    redis.Redis.from_url(redis_url).flushdb()
    process = ServiceProcess(tmp_path_factory.mktemp("docs"), {"ACOG_REDIS_URL": redis_url, **KEYS})
    process.start(timeout=300)
    try:
        yield process
    finally:
        process.stop()
        redis.Redis.from_url(redis_url).flushdb()


def referenced_urls(html: str) -> list[str]:
    """Every URL a page loads: ``src``/``href`` attributes and the ``url: '...'`` of the spec."""
    attributes = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    spec = re.findall(r"""(?:url|spec-url)\s*[:=]\s*["']([^"']+)["']""", html)
    return [*attributes, *spec]


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_page_loads_only_local_assets_and_they_answer(service: ServiceProcess, page: str) -> None:
    response = httpx.get(service.url + page, timeout=10)
    assert response.status_code == 200, response.text
    urls = referenced_urls(response.text)
    assert any(u.endswith(".js") for u in urls), urls
    assert "/openapi.json" in urls, urls
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), f"{page} loads {url} from elsewhere"
    assert "http://" not in response.text and "https://" not in response.text.replace(
        "https://github.com", ""
    ), [u for u in re.findall(r"https?://[^\s\"'<>]+", response.text)]
    for url in urls:
        asset = httpx.get(service.url + url, timeout=10)
        assert asset.status_code == 200, (url, asset.status_code)
        assert asset.content, url


def test_the_swagger_ui_bundle_renders_openapi_3_1(service: ServiceProcess) -> None:
    """FastAPI writes OpenAPI 3.1, which Swagger UI renders from version 5 on (its ``oas31`` plugin)."""
    spec = httpx.get(service.url + "/openapi.json", timeout=10).json()
    assert spec["openapi"].startswith("3.1")
    bundle = httpx.get(service.url + "/docs-assets/swagger-ui-bundle.js", timeout=10).text
    assert "oas31" in bundle
