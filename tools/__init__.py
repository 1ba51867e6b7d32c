"""The project's own programs, not shipped in the wheel: benchmarks (``bench``), comparisons
with other programs (``compare``) and diagnostics (``diag``). Each runs from the checkout's
root, in its virtualenv (``make install-test``), as a module::

    python -m tools.bench.bench_build 5x4
    python -m tools.diag.plan_vs_measured --help

Tools share code as modules of this package (``tools.bench.diskuse``); tools and tests share
only the installed package (``c4table.testing``)."""
