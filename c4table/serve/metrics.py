"""The counters of one server process (requests by route, method and status; latency;
probes; cache hits), written in Prometheus' text format for ``/metrics``."""
from __future__ import annotations

import os
import threading

from c4table.lru import LRUCache
from c4table.table.source import Table

#: Upper bounds (seconds) of the latency histogram's buckets.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    """Counters of one server process, written in Prometheus' text format by :meth:`render`."""

    def __init__(self):
        self.requests: dict[tuple[str, str, int], int] = {}
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.latency_sum = 0.0
        self.latency_count = 0
        self.probes = 0
        self.cache_hits = 0
        self.cache_misses = 0
        self.batch_positions = 0
        self._lock = threading.Lock()

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        with self._lock:
            k = (route, method, status)
            self.requests[k] = self.requests.get(k, 0) + 1
            i = 0
            while i < len(LATENCY_BUCKETS) and seconds > LATENCY_BUCKETS[i]:
                i += 1
            self.buckets[i] += 1
            self.latency_sum += seconds
            self.latency_count += 1

    def render(self, tables: dict[str, Table], cache: LRUCache) -> str:
        out = ["# HELP c4table_requests_total HTTP requests answered, by route, method and status.",
               "# TYPE c4table_requests_total counter"]
        for (route, method, status), n in sorted(self.requests.items()):
            out.append(f'c4table_requests_total{{route="{route}",method="{method}",status="{status}"}} {n}')
        out += ["# HELP c4table_request_duration_seconds Time from request to response.",
                "# TYPE c4table_request_duration_seconds histogram"]
        acc = 0
        for le, n in zip(LATENCY_BUCKETS, self.buckets):
            acc += n
            out.append(f'c4table_request_duration_seconds_bucket{{le="{le}"}} {acc}')
        out.append(f'c4table_request_duration_seconds_bucket{{le="+Inf"}} {self.latency_count}')
        out.append(f"c4table_request_duration_seconds_sum {self.latency_sum:.6f}")
        out.append(f"c4table_request_duration_seconds_count {self.latency_count}")
        for name, help_, value in (
                ("probes", "Positions probed in the tables (cache misses; each probes the position "
                           "and its children).", self.probes),
                ("cache_hits", "Answers taken from the response cache.", self.cache_hits),
                ("cache_misses", "Answers computed because the cache did not hold them.", self.cache_misses),
                ("batch_positions", "Positions asked for in batch requests.", self.batch_positions)):
            out += [f"# HELP c4table_{name}_total {help_}", f"# TYPE c4table_{name}_total counter",
                    f"c4table_{name}_total {value}"]
        out += ["# HELP c4table_cache_entries Answers held in the response cache.",
                "# TYPE c4table_cache_entries gauge", f"c4table_cache_entries {len(cache)}",
                "# HELP c4table_table_entries Entries of each served table.",
                "# TYPE c4table_table_entries gauge"]
        for name, t in sorted(tables.items()):
            out.append(f'c4table_table_entries{{board="{name}"}} {t.entries}')
        out += ["# HELP c4table_process_id Process answering (each --workers process counts alone).",
                "# TYPE c4table_process_id gauge", f"c4table_process_id {os.getpid()}"]
        return "\n".join(out) + "\n"


def route_label(path: str) -> str:
    """The route a request path counts under (its board left out)."""
    if path.startswith("/api/"):
        rest = path[5:]
        if rest == "boards":
            return "/api/boards"
        if rest.endswith("/mainline"):
            return "/api/{board}/mainline"
        if rest.endswith("/batch"):
            return "/api/{board}/batch"
        return "/api/{board}" if "/" not in rest else "other"
    if path.startswith("/static/"):
        return "/static"
    return path if path in ("/", "/solve", "/healthz", "/metrics", "/openapi.json") else "other"
