"""Diagnostics: the plan against measured builds, the build's streams and runs, fault soaks,
the docstrings' length, the editable install's import path (``python -m tools.diag.NAME``)."""
