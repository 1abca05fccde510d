# SPDX-License-Identifier: Apache-2.0
"""The GPU's L2 for the GPU-core models (:mod:`sim_models.gpu`, which re-exports it): an LRU
of whole panels held by running tiles (the panel path) or of K-slices read through it (the
stepped GPU); :mod:`sim_models.gpu`'s docstring says which model uses which."""

from collections import OrderedDict
from numbers import Integral


__all__ = ["L2Model"]


class L2Model:
    """The L2: an LRU of ``capacity`` bytes. :meth:`access` reads a block through it (the
    stepped GPU's K-slices); :meth:`acquire` / :meth:`release` hold whole panels while
    running tiles use them (the panel path, module docstring).

    Parameters
    ----------
    capacity : int
        Bytes of L2.
    cache_outputs : bool
        Whether retired tiles' outputs are inserted (write-back baseline) or bypass (T3).
    """

    def __init__(self, *, capacity, cache_outputs):
        if isinstance(capacity, bool) or not isinstance(capacity, Integral) or capacity < 1:
            raise ValueError(f"capacity must be an integer in [1, inf), not {capacity!r}")
        self.capacity = capacity
        self.cache_outputs = bool(cache_outputs)
        self.live = {}              # key -> [users, nbytes]
        self.lru = OrderedDict()    # key -> nbytes, oldest first
        self.used = 0
        self.hits = self.misses = 0  # bytes read by :meth:`access`

    def _evict(self):
        while self.used > self.capacity and self.lru:
            _, nbytes = self.lru.popitem(last=False)
            self.used -= nbytes

    def acquire(self, key, nbytes):
        """A starting tile needs panel ``key``; return the bytes it must read from DRAM."""
        if key in self.live:
            self.live[key][0] += 1
            return 0
        cached = self.lru.pop(key, None)
        if cached is None:
            self.used += nbytes
        self.live[key] = [1, nbytes]
        self._evict()
        return 0 if cached is not None else nbytes

    def release(self, key):
        """A retiring tile is done with panel ``key``."""
        entry = self.live[key]
        entry[0] -= 1
        if entry[0] == 0:
            del self.live[key]
            self.lru[key] = entry[1]
            self._evict()

    def access(self, key, nbytes):
        """Read ``key`` (``nbytes``) through the LRU, nothing pinned: return the bytes it
        must read from DRAM (0 on a hit, which makes it the most recently used)."""
        if key in self.lru:
            self.lru.move_to_end(key)
            self.hits += nbytes
            return 0
        self.lru[key] = nbytes
        self.used += nbytes
        self.misses += nbytes
        self._evict()
        return nbytes

    def store_output(self, key, nbytes):
        """A retiring tile's output: inserted if ``cache_outputs``, else bypasses."""
        if self.cache_outputs:
            self.lru[key] = nbytes
            self.used += nbytes
            self._evict()
