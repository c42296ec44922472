"""openapi.yaml is generated from the app (`acog export-openapi`); it must not drift."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import yaml

from service.cli import export_document

ROOT = Path(__file__).resolve().parents[1]
export = partial(export_document, "openapi")  # what `acog export-openapi` writes


def test_checked_in_openapi_matches_the_app() -> None:
    checked_in = (ROOT / "openapi.yaml").read_text()
    assert yaml.safe_load(checked_in) == yaml.safe_load(export()), (
        "openapi.yaml is out of date: run `acog export-openapi` and commit the result"
    )


def test_the_document_covers_every_route() -> None:
    paths = yaml.safe_load(export())["paths"]
    for path in ("/predict", "/feedback", "/models", "/models/{name}", "/models/{name}/checkpoint",
                 "/healthz", "/readyz", "/metrics"):  # fmt: skip
        assert path in paths
