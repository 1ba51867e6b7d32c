"""Every ``C4TABLE_*`` variable the code reads is in the settings registry
(:mod:`c4table.config`) and documented in ``docs/settings.md``; the code reads the environment
through the registry only."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from c4table import config
from c4table.errors import BuildError

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(list((ROOT / "c4table").rglob("*.py")) + list((ROOT / "pipeline").rglob("*.py")))


def test_every_variable_named_in_the_code_is_registered():
    named = set()
    for path in SOURCES:
        named |= set(re.findall(r"\bC4TABLE_[A-Z0-9_]+\b", path.read_text()))
    assert named <= set(config.SETTINGS), sorted(named - set(config.SETTINGS))
    assert set(config.SETTINGS) <= named   # nothing registered that nothing reads


def test_every_setting_is_documented():
    doc = (ROOT / "docs" / "settings.md").read_text()
    headings = set(re.findall(r"^## (C4TABLE_[A-Z0-9_]+)\s*$", doc, re.M))
    assert set(config.SETTINGS) <= headings, sorted(set(config.SETTINGS) - headings)


def test_only_the_registry_reads_the_environment_for_settings():
    for path in SOURCES:
        if path.name == "config.py":
            continue
        for line in path.read_text().splitlines():
            assert not re.search(r"environ(\.get)?\s*[\(\[]\s*[\"']C4TABLE_", line), f"{path}: {line}"
            assert not re.search(r"getenv\(\s*[\"']C4TABLE_", line), f"{path}: {line}"


@pytest.mark.parametrize("value, on", [("", True), ("0", False), ("no", False), ("OFF", False),
                                       ("false", False), ("1", True), ("yes", True), ("on", True)])
def test_switches_read_one_way(value, on):
    assert config.get("C4TABLE_RECYCLE", {"C4TABLE_RECYCLE": value}) is on
    assert config.get("C4TABLE_DIRECT_IO", {"C4TABLE_DIRECT_IO": value}) is on
    assert config.get("C4TABLE_SKIP_DISK_CHECK", {"C4TABLE_SKIP_DISK_CHECK": value}) is (on and value != "")


def test_a_bad_value_is_one_line_naming_the_variable():
    with pytest.raises(BuildError, match=r"^C4TABLE_SHUFFLE_MAX_READS='lots': give a positive"):
        config.get("C4TABLE_SHUFFLE_MAX_READS", {"C4TABLE_SHUFFLE_MAX_READS": "lots"})
    assert config.get("C4TABLE_SHUFFLE_MAX_READS", {}) == 1_000_000
