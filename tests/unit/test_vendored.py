"""The vendored uPlot: the file the dashboard loads is the release VENDOR.md names, its MIT licence
travels beside it, and the package data of pyproject.toml ships all of them."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "services" / "web" / "static" / "vendor"
SHIPPED = ("uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE", "VENDOR.md")


def test_the_vendored_uplot_is_the_release_its_notes_name_with_its_licence() -> None:
    notes = (VENDOR / "VENDOR.md").read_text()
    version = re.search(r"npm pack uplot@(\d+\.\d+\.\d+)", notes)
    assert version is not None
    header = (VENDOR / "uPlot.iife.min.js").read_text()[:200]
    assert f"(v{version.group(1)})" in header
    assert "| MIT" in notes
    licence = (VENDOR / "uPlot.LICENSE").read_text()
    assert licence.startswith("The MIT License (MIT)") and "Leon Sorokin" in licence


def shipped(path: str, patterns: list[str]) -> bool:
    """Whether a package-data glob names `path` (setuptools: `*` stays within one folder)."""
    folder, name = path.rsplit("/", 1)
    return any(p.rsplit("/", 1)[0] == folder and fnmatch.fnmatchcase(name, p.rsplit("/", 1)[1]) for p in patterns)


def test_the_package_data_ships_the_vendored_files() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["services"]
    for name in SHIPPED:
        assert shipped(f"web/static/vendor/{name}", patterns), name
