"""bench.report: several benchmark scripts share docs/benchmarks.md, one named section each."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.report import (
    TITLE,
    begin_marker,
    cpu_model,
    end_marker,
    package_versions,
    read_section,
    write_section,
)


def test_creates_the_file_with_a_title_and_the_section(tmp_path: Path) -> None:
    path = tmp_path / "docs" / "benchmarks.md"
    write_section(path, "quality", "## Quality\n\nrows")
    text = path.read_text()
    assert text.startswith(TITLE)
    assert f"{begin_marker('quality')}\n## Quality\n\nrows\n{end_marker('quality')}\n" in text
    assert read_section(path, "quality") == "## Quality\n\nrows"


def test_replacing_one_section_leaves_every_other_byte_alone(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks.md"
    write_section(path, "quality", "old quality")
    write_section(path, "load", "load v1\n\nwith | a | table |")
    path.write_text(path.read_text() + "\nHand-written footer.\n")
    before = path.read_text()
    write_section(path, "quality", "new quality, longer\nover two lines")
    after = path.read_text()
    assert read_section(path, "quality") == "new quality, longer\nover two lines"
    assert read_section(path, "load") == "load v1\n\nwith | a | table |"
    head, tail = before.split(begin_marker("quality"))[0], before.split(end_marker("quality"))[1]
    assert after.startswith(head + begin_marker("quality"))
    assert after.endswith(end_marker("quality") + tail)
    assert "Hand-written footer." in tail
    write_section(path, "quality", "old quality")
    assert path.read_text() == before


def test_an_absent_section_or_file_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks.md"
    assert read_section(path, "quality") is None
    write_section(path, "load", "x")
    assert read_section(path, "quality") is None


@pytest.mark.parametrize(
    "damaged",
    [
        "<!-- quality:begin -->\nno end\n",
        "<!-- quality:end -->\n<!-- quality:begin -->\n",
        "<!-- quality:begin -->\na\n<!-- quality:end -->\n<!-- quality:begin -->\nb\n<!-- quality:end -->\n",
    ],
)
def test_damaged_markers_are_refused_and_the_file_is_untouched(tmp_path: Path, damaged: str) -> None:
    path = tmp_path / "benchmarks.md"
    path.write_text(damaged)
    with pytest.raises(ValueError, match="quality"):
        write_section(path, "quality", "new")
    assert path.read_text() == damaged


def test_bad_names_and_bodies_holding_markers_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks.md"
    with pytest.raises(ValueError, match="section name"):
        write_section(path, "a b", "x")
    with pytest.raises(ValueError, match="markers"):
        write_section(path, "quality", f"x {end_marker('quality')}")
    assert not path.exists()


def test_cpu_model_reads_the_model_name_or_falls_back(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Example CPU @ 2.0GHz\nflags\t: fpu\n")
    assert cpu_model(cpuinfo=cpuinfo) == "Example CPU @ 2.0GHz"
    cpuinfo.write_text("processor\t: 0\n")
    assert cpu_model("x86_64", cpuinfo=cpuinfo) == "x86_64"
    assert cpu_model(cpuinfo=tmp_path / "missing") == "unknown"


def test_package_versions_names_absent_packages() -> None:
    import numpy as np

    versions = package_versions(["numpy", "no-such-package-here"])
    assert versions == {"numpy": np.__version__, "no-such-package-here": "absent"}


def test_a_whole_file_rewrite_keeps_the_sections_other_scripts_wrote() -> None:
    from bench.report import carry_sections

    opid_block = "<!-- opid:begin -->\nours\n<!-- opid:end -->\n"
    x_block = "<!-- x:begin -->\nx\n<!-- x:end -->"
    old = f"# Report\n\nold body\n\n{opid_block}{x_block}\n"
    new = carry_sections(old, "# Report\n\nnew body\n")
    assert new.startswith("# Report\n\nnew body\n")
    assert opid_block in new and x_block in new
    assert "old body" not in new
    replaced = carry_sections(old, "# Report\n<!-- opid:begin -->\nfresh\n<!-- opid:end -->\n")
    assert "ours" not in replaced and "fresh" in replaced and "<!-- x:begin -->" in replaced
