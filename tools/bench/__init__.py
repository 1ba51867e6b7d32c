"""Benchmarks: builds, merges, codecs, lookups and the server timed and measured
(``python -m tools.bench.NAME``); ``diskuse`` holds the samplers the others share."""
