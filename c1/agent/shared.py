"""Work that the runs of one search share.

The runs of ``--parallel N`` start from the same question and differ in the order and wording of some
of their queries, so they often make the same call in the same state: the question's own search before
anything is shown, the same read of the same document. A call's retrieval depends only on its argument,
the query in effect and the chunks the run has already been shown, so a run in that state gets the
payload that the first run to ask worked out, instead of working it out again; a run that asks while
another is still at it waits for that one. What a run is shown is still its own: each renders the
payload against its own context and budget.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future


class SharedWork:
    """Results by key, each worked out once by the first caller; later callers wait for it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._kept: dict[Hashable, Future] = {}
        self.hits = 0

    def get(self, key: Hashable, work: Callable[[], object]) -> object:
        with self._lock:
            kept = self._kept.get(key)
            mine = kept is None
            if mine:
                kept = self._kept[key] = Future()
            else:
                self.hits += 1
        if mine:
            try:
                kept.set_result(work())
            except BaseException as exc:  # every run that asks the same gets the same error
                kept.set_exception(exc)
        return kept.result()
