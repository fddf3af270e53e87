"""The distribution's metadata: what a packager or a licence scanner reads from the wheel."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_licence_is_an_spdx_expression_with_its_text_shipped() -> None:
    # setuptools deprecated the table form (`{ text = ... }`) with a removal date; the SPDX string
    # is the PEP 639 form, and needs a setuptools that reads it.
    project = _pyproject()["project"]
    assert isinstance(project["license"], str) and project["license"] == "Apache-2.0"
    for pattern in project["license-files"]:
        files = list(ROOT.glob(pattern))
        assert files, f"license-files names {pattern!r}, which matches no file"
        assert all("Apache License" in f.read_text(encoding="utf-8")[:200] for f in files)
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))  # refused beside an expression


def test_the_build_backend_reads_an_spdx_licence() -> None:
    requires = [Requirement(r) for r in _pyproject()["build-system"]["requires"]]
    setuptools = next(r for r in requires if r.name == "setuptools")
    assert not setuptools.specifier.contains(Version("76.9")), "PEP 639 licence fields need setuptools >= 77"
