"""The memory budget: parsed once into a MemoryBudget the build's settings carry, its share per
task, and a budget too small for the workers refused in one line before anything is built."""
from __future__ import annotations

import pytest

from c4table.budget import DEFAULT_MEMORY, MIN_TASK_MEMORY, MemoryBudget
from c4table.errors import BudgetError
from c4table.pipeline.stages.build import BuildSettings, open_build
from c4table.units import parse_size
from conftest import run_cli


def test_settings_carry_the_parsed_budget_and_a_build_shares_it_among_its_workers(tmp_path):
    s = BuildSettings.parse("4x4", tmp_path / "b", "64MiB", workers=2)
    assert s.budget == MemoryBudget(64 << 20)
    assert BuildSettings.parse("4x4", tmp_path / "b", s.budget).budget is s.budget
    assert BuildSettings.parse("4x4", tmp_path / "b").budget.bytes == parse_size(DEFAULT_MEMORY)
    with open_build("4x4", tmp_path / "b", memory=s.budget, workers=2, quiet=True) as b:
        assert b.budget is s.budget and b.task_memory == (64 << 20) // 2
        sh = b.shuffler()
        assert sh.task_memory == b.task_memory and sh.max_reads == b.shuffle_max_reads
        assert sh.store_uri == b.store.uri and sh.executor is b.executor


def test_a_budget_too_small_for_the_workers_is_refused_before_anything_is_built(tmp_path):
    with pytest.raises(BudgetError, match="give --memory 3.0MiB or more"):
        open_build("4x4", tmp_path / "b", memory=3 * MIN_TASK_MEMORY - 1, workers=3, quiet=True)
    assert not (tmp_path / "b").exists()
    MemoryBudget(3 * MIN_TASK_MEMORY).check(3)   # exactly enough


def test_the_command_line_parses_memory_once_and_names_the_option(tmp_path):
    with pytest.raises(ValueError, match="bad size"):
        MemoryBudget.parse("lots")
    code, _, err = run_cli("build", "4x4", "--out", str(tmp_path / "b"), "--memory", "lots")
    assert code == 2 and "--memory" in err and len(err.strip().splitlines()) == 1, err
    code, _, err = run_cli("build", "4x4", "--out", str(tmp_path / "b"), "--memory", "1MiB",
                           "--workers", "2")
    assert code == 2 and "too small" in err and len(err.strip().splitlines()) == 1, err
