"""c4table beside other programs: Cadot's pipeline, Böck's and jh85's solvers, Pons' solver,
xz (``python -m tools.compare.NAME``)."""
