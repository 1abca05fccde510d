# SPDX-License-Identifier: Apache-2.0
"""Reference model of the DMA (:mod:`t3hw.hw.dma`).

* :func:`walk`: the bursts of one descriptor, in the RTL's order.
* :class:`DmaModel`: the transaction semantics: descriptor table, trigger check, ready queue,
  the reads each descriptor issues (with their tags), the packet of each returned read, the
  sticky errors and the counters. Descriptors are read when they start, as in the RTL.

The cycle-level environment that drives and scores the RTL against the model, and the
scenarios, are in :mod:`t3hw.verif.dma_env`.

Field names come from :mod:`t3hw.spec.layouts` through :class:`~t3hw.spec.layouts.Codec`.
"""

from collections import deque
from dataclasses import dataclass

from t3hw.spec.layouts import dma_descriptor_layout, dma_errors_layout, dma_stats_layout
from t3hw.spec.params import EngineParams

from .env import BlockModel


__all__ = ["Read", "Packet", "walk", "DmaModel"]


@dataclass(frozen=True)
class Read:
    """A comm-stream read request (fields of :func:`t3hw.spec.layouts.read_request_layout`)."""
    addr:  int
    bytes: int
    tag:   int


@dataclass(frozen=True)
class Packet:
    """A network packet (fields of :func:`t3hw.spec.layouts.net_packet_layout`)."""
    device: int
    addr:   int
    kind:   int
    tile:   int
    bytes:  int


def walk(params: EngineParams, desc):
    """The bursts of descriptor ``desc`` (a dict of descriptor fields), in order.

    Yields ``(src_addr, dst_addr, bytes)``: row by row, each row from its start upward in
    steps of ``burst_bytes``, the last burst of a row short when it does not divide the row.
    Addresses wrap modulo ``2**addr_width``.
    """
    mask, burst = (1 << params.addr_width) - 1, params.burst_bytes
    for r in range(desc["rows"]):
        for c in range(0, desc["row_bytes"], burst):
            off = r * desc["pitch"] + c
            yield ((desc["src"] + off) & mask, (desc["dst"] + off) & mask,
                   min(burst, desc["row_bytes"] - c))


class DmaModel(BlockModel):
    """Transaction-level DMA.

    Parameters
    ----------
    params : EngineParams, optional

    Attributes
    ----------
    table : dict of int to dict
        Valid descriptors by index (fields of :func:`t3hw.spec.layouts.dma_descriptor_layout`);
        after reset every descriptor is invalid.
    queue : deque of int
        Ready queue: indices of accepted triggers not started yet.
    bursts_left : deque of (int, Packet, int)
        Source address, packet and index of the running descriptor's reads not requested yet.
    outstanding : deque of (Read, Packet, int)
        Reads requested and not returned, oldest first, with their packet and index.
    errors : dict of str to bool
        Sticky error bits, keyed by the RTL's field names.
    stats : dict of str to int
        Counters, keyed by the RTL's field names (wrapping at ``counter_width``).
    """

    def __init__(self, params: EngineParams = None):
        super().__init__(params, dma_errors_layout, dma_stats_layout)
        self.fields = list(dma_descriptor_layout(self.params).members)
        self.table  = {}
        self.queue  = deque()
        self.bursts_left = deque()  # (src, Packet, index) of the running descriptor
        self._tag = 0
        self.outstanding = deque()  # (Read, Packet, index) requested, not returned

    # -- requests ------------------------------------------------------------------------
    def program(self, index, **desc):
        """Write descriptor ``index``. Returns False (and sets ``bad_program``) when the
        write is rejected: ``valid`` with 0 rows or 0 bytes per row."""
        if not 0 <= index < self.params.dma_descriptors:
            raise ValueError(f"index must be in [0, {self.params.dma_descriptors - 1}], "
                             f"not {index!r}")
        if desc.get("valid", 0):
            if desc.get("rows", 0) == 0 or desc.get("row_bytes", 0) == 0:
                self.errors["bad_program"] = True
                return False
            self.table[index] = {name: int(getattr(desc.get(name, 0), "value", desc.get(name, 0)))
                                 for name in self.fields}
        else:
            self.table.pop(index, None)
        return True

    def trigger(self, cmd):
        """A trigger for descriptor ``cmd``: queue it, or reject it when it is invalid."""
        if cmd not in self.table:
            self.errors["bad_descriptor"] = True
            self._bump("rejected")
            return False
        self.queue.append(cmd)
        self._bump("triggers")
        return True

    def _start(self):
        """Start queued descriptors until one is valid; False when the queue is empty."""
        while self.queue:
            index = self.queue.popleft()
            desc = self.table.get(index)
            if desc is None:
                self.errors["bad_descriptor"] = True
                self._bump("rejected")
                continue
            for src, dst, nbytes in walk(self.params, desc):
                pkt = Packet(device=desc["device"], addr=dst, kind=desc["op"],
                             tile=desc["tile"], bytes=nbytes)
                self.bursts_left.append((src, pkt, index))
            return True
        return False

    def next_read(self):
        """The next read the DMA requests, starting queued descriptors as needed.

        Returns ``(Read, Packet, index)``: the read, the packet its return produces and the
        descriptor index; ``None`` when no work is queued. The read counts as requested
        (``reads``) and outstanding.
        """
        if not self.bursts_left and not self._start():
            return None
        src, pkt, index = self.bursts_left.popleft()
        read = Read(addr=src, bytes=pkt.bytes, tag=self._tag)
        self._tag = (self._tag + 1) % (1 << self.params.read_tag_width)
        self._bump("reads")
        item = (read, pkt, index)
        self.outstanding.append(item)
        return item

    def response(self, tag):
        """A read returns. Returns ``(Packet, index)`` of the oldest outstanding read, or
        ``None`` (and ``bad_response``) when none is outstanding; a tag other than that
        read's also sets ``bad_response``."""
        if not self.outstanding:
            self.errors["bad_response"] = True
            return None
        read, pkt, index = self.outstanding.popleft()
        if tag != read.tag:
            self.errors["bad_response"] = True
        return pkt, index

    def packet_sent(self):
        """A packet left (counted in ``packets``)."""
        self._bump("packets")

    def finish(self):
        """Start whatever is left queued (the RTL has gone idle): only invalid descriptors
        may remain, and they set their errors. Returns False if a valid one was found."""
        return not self.bursts_left and not self._start()
