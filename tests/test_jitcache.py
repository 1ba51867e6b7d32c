"""numba's cache directory is keyed by the source of every module that uses numba
(:mod:`c4table.jitcache`): a kernel compiled against another module's old code is never
loaded after that module changes."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from c4table import jitcache

SHOW = ("import os, c4table; from c4table.io.varint import encode_deltas; import numpy as np; "
        "encode_deltas(np.arange(3, dtype=np.uint64), np.zeros(40, np.uint8)); "
        "print(os.environ['NUMBA_CACHE_DIR']); print(encode_deltas._cache._cache_path)")


def _run(cache_dir: str) -> list[str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    p = subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def test_the_kernels_are_cached_under_the_key_of_the_numba_modules_source(tmp_path):
    key = jitcache.PREFIX + jitcache.source_key(jitcache.package_roots())
    env_dir, kernel_dir = _run(str(tmp_path))
    assert Path(env_dir) == tmp_path / key
    assert Path(kernel_dir).is_relative_to(tmp_path / key)
    assert any((tmp_path / key).rglob("*.nbi")), "nothing cached"
    # a process c4table starts inherits the directory as it is; another version's moves aside
    assert _run(env_dir)[0] == env_dir
    assert _run(str(tmp_path / (jitcache.PREFIX + "0" * 16)))[0] == env_dir


def test_the_key_covers_every_module_that_uses_numba():
    roots = jitcache.package_roots()
    names = {p.name for p in roots}
    assert names == {"c4table", "pipeline"} or names == {"c4table"}
    using = [p for r in roots for p in r.rglob("*.py")
             if "__pycache__" not in p.parts and b"numba" in p.read_bytes()]
    assert any(p.name == "lines.py" for p in using) and any(p.name == "cpu.py" for p in using)


def test_a_changed_module_that_uses_numba_changes_the_key(tmp_path):
    (tmp_path / "a.py").write_text("from numba import njit\n")
    (tmp_path / "b.py").write_text("import numba\n")
    (tmp_path / "c.py").write_text("x = 1\n")
    key = jitcache.source_key([tmp_path])
    (tmp_path / "c.py").write_text("x = 2\n")
    assert jitcache.source_key([tmp_path]) == key
    (tmp_path / "b.py").write_text("import numba  # another version\n")
    assert jitcache.source_key([tmp_path]) != key
