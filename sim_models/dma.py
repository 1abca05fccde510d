# SPDX-License-Identifier: Apache-2.0
"""Reference model of the DMA (:mod:`t3hw.hw.dma`).

* :func:`walk`: the bursts of one descriptor, in the RTL's order.
* :func:`refusal`: why a descriptor write is refused on its content.
* :class:`DmaModel`: the transaction semantics: descriptor table and its checked writes
  (refused while the descriptor is in use), trigger check, ready queue, the reads each
  descriptor issues (with their tags), the packet of each returned read, the abort of a
  descriptor on a bad return, the sticky errors with their details, and the counters.

The cycle-level environment that drives and scores the RTL against the model, and the
scenarios, are in :mod:`t3hw.verif.dma_env`.

Field names come from :mod:`t3hw.spec.layouts` through :class:`~t3hw.spec.layouts.Codec`.
"""

from collections import deque
from dataclasses import dataclass

from t3hw.spec.layouts import dma_descriptor_layout, dma_errors_layout, dma_stats_layout
from t3hw.spec.params import EngineParams

from .env import BlockModel


__all__ = ["Read", "Packet", "walk", "refusal", "DmaModel"]


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


def refusal(params: EngineParams, desc):
    """Why a write of ``desc`` (a dict of descriptor fields, missing ones 0) is refused on its
    content, or None: ``bad_program`` (0 rows or 0 bytes per row), ``bad_pitch`` (rows
    overlap), ``bad_range`` (the source or destination range wraps past
    ``2**addr_width``), in that order; only a ``valid`` descriptor is checked."""
    if not desc.get("valid", 0):
        return None
    rows, row_bytes, pitch = desc.get("rows", 0), desc.get("row_bytes", 0), desc.get("pitch", 0)
    if rows == 0 or row_bytes == 0:
        return "bad_program"
    if rows > 1 and pitch < row_bytes:
        return "bad_pitch"
    span = (rows - 1) * pitch + row_bytes - 1
    if max(desc.get("src", 0), desc.get("dst", 0)) + span >= 1 << params.addr_width:
        return "bad_range"
    return None


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
    queue : deque of (int, dict)
        Accepted triggers whose descriptor has not started yet: the index and the descriptor
        as the trigger found it (it cannot change while queued: such a write is refused with
        ``desc_busy``).
    bursts_left : deque of (int, Packet, int, int)
        Source address, packet, index and run number of the running descriptor's reads not
        requested yet.
    outstanding : deque of (Read, Packet, int, int)
        Reads requested and not returned, oldest first, with their packet, index and run.
    killed : int or None
        Run number of the last aborted descriptor.
    errors : dict of str to bool
        Sticky error bits, keyed by the RTL's field names.
    stats : dict of str to int
        Counters, keyed by the RTL's field names (wrapping at ``counter_width``).
    capture : dict
        Details of the last error event (fields of
        :func:`t3hw.spec.layouts.dma_capture_layout`).
    events : list of (str, dict)
        Error events since the list was last emptied (by the caller), with their details.

    In use: a descriptor is in use while an accepted trigger for it waits in :attr:`queue`.
    The RTL's use ends earlier, when its engine takes the descriptor, which is before the
    descriptor's first read (when it starts here); at most the first two entries of
    :attr:`queue` may already be taken (a caller that needs the exact verdict avoids writing
    a descriptor that only they name).
    """

    def __init__(self, params: EngineParams = None):
        super().__init__(params, dma_errors_layout, dma_stats_layout)
        self.fields = list(dma_descriptor_layout(self.params).members)
        self.table  = {}
        self.queue  = deque()
        self.bursts_left = deque()  # (src, Packet, index, run) of the running descriptor
        self._tag = 0
        self._run = 0               # descriptors started
        self.killed = None
        self.outstanding = deque()  # (Read, Packet, index, run) requested, not returned
        self.capture = {"index": 0, "tile": 0, "addr": 0}
        self.events = []

    def _event(self, name, index=0, tile=0, addr=0):
        self.errors[name] = True
        self.capture = {"index": index, "tile": tile, "addr": addr}
        self.events.append((name, dict(self.capture)))

    # -- requests ------------------------------------------------------------------------
    def in_use(self, index):
        """Whether an accepted trigger for descriptor ``index`` has not started yet."""
        return any(i == index for i, _ in self.queue)

    def program(self, index, *, held=False, **desc):
        """Write descriptor ``index``. Returns False when the write is refused (the table is
        unchanged; the reason's error bit, counter and capture): :func:`refusal`, then
        ``desc_busy`` (the descriptor is in use, or ``held`` by a firing pending in the
        tracker; whatever ``valid``)."""
        if not 0 <= index < self.params.dma_descriptors:
            raise ValueError(f"index must be in [0, {self.params.dma_descriptors - 1}], "
                             f"not {index!r}")
        fields = {name: int(getattr(desc.get(name, 0), "value", desc.get(name, 0)))
                  for name in self.fields}
        reason = refusal(self.params, fields) or (
            "desc_busy" if held or self.in_use(index) else None)
        if reason is not None:
            self._event(reason, index, fields["tile"], fields["src"])
            self._bump(reason)
            return False
        if fields["valid"]:
            self.table[index] = fields
        else:
            self.table.pop(index, None)
        return True

    def trigger(self, cmd, tile=0):
        """A trigger for descriptor ``cmd``: queue it, or reject it when it is invalid."""
        if cmd not in self.table:
            self._event("bad_descriptor", cmd, tile, 0)
            self._bump("rejected")
            return False
        self.queue.append((cmd, dict(self.table[cmd])))
        self._bump("triggers")
        return True

    def _start(self):
        """Start the next queued descriptor; False when the queue is empty."""
        if not self.queue:
            return False
        index, desc = self.queue.popleft()
        run, self._run = self._run, self._run + 1
        for src, dst, nbytes in walk(self.params, desc):
            pkt = Packet(device=desc["device"], addr=dst, kind=desc["op"],
                         tile=desc["tile"], bytes=nbytes)
            self.bursts_left.append((src, pkt, index, run))
        return True

    def next_read(self):
        """The next read the DMA requests, starting queued descriptors as needed.

        Returns ``(Read, Packet, index)``: the read, the packet its return produces and the
        descriptor index; ``None`` when no work is queued. The read counts as requested
        (``reads``) and outstanding.
        """
        if not self.bursts_left and not self._start():
            return None
        src, pkt, index, run = self.bursts_left.popleft()
        read = Read(addr=src, bytes=pkt.bytes, tag=self._tag)
        self._tag = (self._tag + 1) % (1 << self.params.read_tag_width)
        self._bump("reads")
        self.outstanding.append((read, pkt, index, run))
        return read, pkt, index

    def response(self, tag, error=0):
        """A read returns. Returns ``(Packet, index)`` of the oldest outstanding read, or
        ``None`` when it makes no packet: no read outstanding (dropped, ``bad_response``),
        a bad return (``error``: ``read_error``; a tag other than that read's:
        ``bad_response``) that aborts its descriptor (``aborted``), or a return of a
        descriptor aborted before. After an abort, call :meth:`stop_walk` the next cycle."""
        if not self.outstanding:
            self._event("bad_response")
            return None
        read, pkt, index, run = self.outstanding.popleft()
        if error:
            self._event("read_error", index, pkt.tile, read.addr)
        if tag != read.tag:
            self._event("bad_response", index, pkt.tile, read.addr)
        if run == self.killed:
            return None
        if error or tag != read.tag:
            self.killed = run
            self._bump("aborted")
            return None
        return pkt, index

    def stop_walk(self, held):
        """The cycle after an abort: the walk of the aborted descriptor stops, except for the
        read the RTL holds in its ``read`` register (``held``: it has one there that was not
        taken before this cycle, which is then the next read here)."""
        if self.bursts_left and self.bursts_left[0][3] == self.killed:
            keep = 1 if held else 0
            while len(self.bursts_left) > keep:
                self.bursts_left.pop()

    def packet_sent(self):
        """A packet left (counted in ``packets``)."""
        self._bump("packets")

    def finish(self):
        """Whether no descriptor is queued or running (the RTL has gone idle)."""
        return not self.bursts_left and not self.queue
