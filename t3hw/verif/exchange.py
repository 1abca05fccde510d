# SPDX-License-Identifier: Apache-2.0
"""The shared file of a fast co-simulation split over processes
(:mod:`t3hw.tools.cosim_split`), seen from Python: the testbench of each part reads every
part's progress from it and marks its own part stopped.

Layout: per part a progress block of six int64 (cycle finished, done, packets sent,
packets received, stopped, ready to run) on a cache line of its own; then per part the channel of the
packets it sends to the part before it, a ring of :data:`CAPACITY` entries of three uint64
(arrival, payload bits 0-63, 64-127) behind its tail and head, each on a line of its own.
The simulation's side is the C code of :data:`t3hw.tools.cosim_split.CPP`.
"""

import mmap
import struct
import time
from pathlib import Path


__all__ = ["CAPACITY", "MARGIN", "LINE", "Exchange", "quiescent"]

#: Entries of one channel; a sender waits while it is full.
CAPACITY = 1 << 16
#: Cycles of margin below the link latency in each part's wait (packets that arrive in the
#: same cycle enter the wire one per cycle, before it).
MARGIN = 8
#: Bytes of a cache line (a progress block, a channel's tail, its head).
LINE = 64
_ENTRY = 24
_CHANNEL = 2 * LINE + CAPACITY * _ENTRY


class Exchange:
    """The shared file of a split run's ``parts`` processes, seen from Python: :meth:`create`
    makes it; a part's testbench reads every part's progress (:meth:`progress`) and marks
    its own stopped (:meth:`stop`), so that no other part waits for it any more."""

    def __init__(self, path, parts):
        self.path, self.parts = Path(path), parts
        self._file = open(self.path, "r+b")
        self._map = mmap.mmap(self._file.fileno(), 0)

    @staticmethod
    def size(parts):
        return parts * LINE + parts * _CHANNEL

    @classmethod
    def create(cls, path, parts):
        """A fresh file for ``parts`` processes: nobody has finished a cycle."""
        path = Path(path)
        with open(path, "wb") as f:
            f.truncate(cls.size(parts))
        ex = cls(path, parts)
        for p in range(parts):
            struct.pack_into("<q", ex._map, p * LINE, -1)
        ex._map.flush()
        return ex

    def env(self, part, latency):
        """The ``T3HW_XCHG`` setting of part ``part`` (:data:`CPP` reads it)."""
        return f"{self.path.resolve()}|{part}|{self.parts}|{latency}|{MARGIN}"

    def progress(self):
        """Per part: ``(cycle finished, done, sent, received, stopped)``."""
        return [struct.unpack_from("<5q", self._map, p * LINE) for p in range(self.parts)]

    def start(self, part, timeout_s=600.0):
        """Mark part ``part`` ready to run, then wait (wall time, up to ``timeout_s``) until
        every part is: the parts start their runs together, not as their processes happened
        to finish starting and programming (a run's time then counts none of that, as in one
        process). Raises ``RuntimeError`` when a part never gets ready."""
        struct.pack_into("<q", self._map, part * LINE + 40, 1)
        t0 = time.monotonic()
        while not all(struct.unpack_from("<q", self._map, p * LINE + 40)[0]
                      for p in range(self.parts)):
            if time.monotonic() - t0 > timeout_s:
                raise RuntimeError(f"part {part}: the other parts were not ready to run "
                                   f"after {timeout_s:.0f} s")
            time.sleep(0.0002)

    def stop(self, part):
        """Mark part ``part`` stopped: its neighbour no longer waits for its cycles."""
        struct.pack_into("<q", self._map, part * LINE + 32, 1)

    def close(self):
        self._map.close()
        self._file.close()


def quiescent(progress):
    """True when every part is done and every packet sent has been received: the whole
    ring's ``done`` (nothing can arrive any more)."""
    n = len(progress)
    return all(p[1] for p in progress) and \
        all(progress[q][2] == progress[(q - 1) % n][3] for q in range(n))
