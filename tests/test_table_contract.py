"""The reader contract (``c4table.testing.contract``) run on every table source: a memory-mapped
``.dat``, a local ``.c4z``, a ``.c4z`` over HTTP (ranged GETs) and a rooted table."""
from __future__ import annotations

import shutil

import pytest

from c4table.c4z.writer import compress_table
from c4table.open import open_table
from httpkit import serving
from c4table.testing.contract import TableContract


@pytest.fixture(scope="module")
def c4z44(built, tmp_path_factory):
    d = tmp_path_factory.mktemp("c4z44")
    shutil.copy(built("4x4") / "connect4_4x4.dat", d / "connect4_4x4.dat")
    return compress_table(d / "connect4_4x4.dat", block_entries=4096, quiet=True)


@pytest.fixture(scope="module")
def rooted_dir(tmp_path_factory):
    """The 4x4 table rooted at 23 (the build returns the table file's path)."""
    from c4table.pipeline.stages.build import build_table
    return build_table("4x4", tmp_path_factory.mktemp("rooted44"), quiet=True, workers=1, root="23")


class TestDat(TableContract):
    @pytest.fixture
    def table(self, built):
        with open_table(built("4x4") / "connect4_4x4.dat") as t:
            yield t


class TestLocalC4z(TableContract):
    @pytest.fixture
    def table(self, c4z44):
        with open_table(c4z44) as t:
            yield t


class TestHttpC4z(TableContract):
    @pytest.fixture
    def table(self, c4z44, monkeypatch, tmp_path):
        monkeypatch.setenv("C4TABLE_CACHE", str(tmp_path / "cache"))
        with serving(c4z44.parent) as url, open_table(f"{url}/{c4z44.name}") as t:
            yield t


class TestRooted(TableContract):
    rooted = True

    def root_moves(self) -> str:
        return "23"

    @pytest.fixture
    def table(self, rooted_dir):
        with open_table(rooted_dir) as t:
            assert t.root is not None and t.root.moves == "23"
            yield t


def test_the_interface_is_not_a_reader():
    """The readers are chosen by open_table(), never by the interface class itself."""
    from c4table.table.source import Table
    with pytest.raises(TypeError, match="open_table"):
        Table("tables/5x4/connect4_5x4.dat")
