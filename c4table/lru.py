"""One least-recently-used map, thread-safe: the server's answers and the decoded blocks of a
``.c4z`` are kept in it.

>>> c = LRUCache(2); c.put("a", "1"); c.put("b", "2"); c.get("a"); c.put("c", "3")
'1'
>>> c.get("b") is None, len(c)
(True, 2)
"""
from __future__ import annotations

import threading
from collections import OrderedDict


class LRUCache:
    """At most ``size`` entries; :meth:`get` marks an entry as used, :meth:`put` drops the least
    recently used ones beyond ``size``. A size of 0 keeps nothing."""

    def __init__(self, size: int):
        self.size = size
        self._d: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, default=None):
        if self.size <= 0:
            return default
        with self._lock:
            v = self._d.get(key, default)
            if v is not default:
                self._d.move_to_end(key)
            return v

    def put(self, key, value) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.size:
                self._d.popitem(last=False)

    def pop(self, key, default=None):
        with self._lock:
            return self._d.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()

    def __len__(self) -> int:
        return len(self._d)

    def __iter__(self):
        """The keys held, least recently used first (a snapshot)."""
        with self._lock:
            return iter(list(self._d))
