"""An in-process LRU of serialized documents that cannot change: a finished run's result, a
finished experiment's comparison and its runs' counts by state (service/runs.py result_json,
routes/experiments.py comparison, service/experiments.py page_counts).

Building a comparison (every run's summary parsed from JSONB, the Fieller intervals, pydantic,
JSON), counting a page's runs by state (a scan of the runs table) and casting a result document's
JSONB to text were most of those requests' time (py-spy under make bench-api), repeated for
documents that are fixed once their run or experiment has ended. The callers put into the cache
only what is immutable and key it by what would change if it were not: a run's result by (run
id, attempt) and only in a terminal state (a retry starts a new attempt); a comparison and the
counts by the experiment's state and finished_at (a retried run makes the experiment running
again and gives it a new finished_at when it ends), the comparison by its query too.

Bounded in bytes (SATLAB_DOC_CACHE_BYTES, default 64 MiB per API process): the least recently
used documents go first; a document larger than an eighth of the bound is never kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

from satlab.settings import get_settings


class DocumentCache:
    def __init__(self, max_bytes: int | None = None) -> None:
        self._max_bytes = max_bytes  # None: the setting, read on first use (not at import)
        self.bytes = 0
        self._lock = threading.Lock()
        self._docs: OrderedDict[Hashable, bytes] = OrderedDict()

    @property
    def max_bytes(self) -> int:
        if self._max_bytes is None:
            self._max_bytes = get_settings().doc_cache_bytes
        return self._max_bytes

    def get(self, key: Hashable) -> bytes | None:
        with self._lock:
            doc = self._docs.get(key)
            if doc is not None:
                self._docs.move_to_end(key)
            return doc

    def put(self, key: Hashable, doc: bytes) -> None:
        if len(doc) > self.max_bytes // 8:
            return  # one huge document would push out many small ones
        with self._lock:
            old = self._docs.pop(key, None)
            self.bytes -= len(old) if old is not None else 0
            self._docs[key] = doc
            self.bytes += len(doc)
            while self.bytes > self.max_bytes:
                _, dropped = self._docs.popitem(last=False)
                self.bytes -= len(dropped)

    def __len__(self) -> int:
        return len(self._docs)

    def reset(self) -> None:
        with self._lock:
            self._docs.clear()
            self.bytes = 0


documents = DocumentCache()
