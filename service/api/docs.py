"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) served with their scripts and styles from this
process, so that they work on a host without internet access.

FastAPI's own pages load Swagger UI and ReDoc from a CDN (and ReDoc's fonts from Google). The
assets come from the ``fastapi-offline`` wheel (Swagger UI 5, which renders OpenAPI 3.1, the
ReDoc standalone bundle and a favicon), mounted under :data:`ASSETS`; the pages are FastAPI's own
``get_swagger_ui_html`` and ``get_redoc_html`` pointed at them. Like ``/openapi.json``, these
paths need no API key: they describe the API and hold no data.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"
"""Where the bundled Swagger UI and ReDoc files are served."""


def install(app: FastAPI, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Serve the two documentation pages of ``app`` (created with ``docs_url=None, redoc_url=None``)."""
    directory = str(files("fastapi_offline") / "static")
    app.mount(ASSETS, StaticFiles(directory=directory), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_redirect = app.swagger_ui_oauth2_redirect_url or f"{docs_url}/oauth2-redirect"

    @app.get(docs_url, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{oauth2_redirect}",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
            swagger_ui_parameters=app.swagger_ui_parameters,
        )

    @app.get(oauth2_redirect, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(redoc_url, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
