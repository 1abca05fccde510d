# SPDX-License-Identifier: Apache-2.0
"""The on-board memory behind the engine's ``dram`` port: :class:`DramModel`, a request queue
in front of a block RAM of per-burst counters, served one request per ``interval`` cycles.

Data does not flow through the engine (:mod:`t3hw.hw.engine`); the DRAM model keeps, per burst
line, a count instead of the data: a ``STORE`` sets it to 1, an ``UPDATE`` adds 1. After a
ring step the host reads it back (``DRAM_LINE``) and sees which lines got which writes.
"""

from amaranth import *
from amaranth.lib import fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from t3hw.spec.layouts import MemOp, mem_request_layout, mem_response_layout
from t3hw.spec.params import EngineParams, check_params
from .checks import check_int, check_pow2


__all__ = ["DramModel"]


class DramModel(wiring.Component):
    """The memory behind the engine's ``dram`` port: a request queue and a block RAM.

    Parameters
    ----------
    params : EngineParams
    lines : int
        Lines of the block RAM (16 bits each), a power of two in [16, 65536]. Request
        address ``addr`` is line ``(addr / burst_bytes) mod lines``.
    queue : int
        Depth of the request queue, in [2, 256].

    Members
    -------
    request : In(stream.Signature(mem_request_layout))
        From the engine's ``dram``; ``ready`` while the queue has room.
    response : Out(stream.Signature(mem_response_layout))
        One per ``READ``, in request order, with its ``source`` and ``tag``. ``valid`` is a
        register; the model takes no request while a response waits.
    occupancy : Out(occupancy_width)
        Requests in the queue, saturated at ``2**occupancy_width - 1``.
    busy : Out(1)
        The queue holds a request, or one is being served.
    interval : In(8)
        Cycles per request served (below 2: 2).
    peek : In(16)
        A line index (modulo ``lines``).
    line : Out(16)
        The count of line ``peek``, one cycle late (a block RAM read port).

    A request taken from the queue in cycle t reads its line in t, and writes it in t + 1:
    ``STORE`` writes 1, ``UPDATE`` the count plus 1, ``READ`` nothing (its response is
    valid from t + 1). The lines start at 0 (configuration); reset does not clear them.
    """

    def __init__(self, params: EngineParams = EngineParams(), *, lines=2048, queue=16):
        self._p = check_params(params, self)
        self._lines = check_pow2("lines", lines, 16, 65536, owner=self)
        self._queue = check_int("queue", queue, 2, 256, owner=self)
        super().__init__({
            "request":   In(stream.Signature(mem_request_layout(params))),
            "response":  Out(stream.Signature(mem_response_layout(params))),
            "occupancy": Out(params.occupancy_width),
            "busy":      Out(1),
            "interval":  In(8),
            "peek":      In(16),
            "line":      Out(16),
        })

    def elaborate(self, platform):
        p = self._p
        m = Module()
        req_layout = mem_request_layout(p)
        m.submodules.queue = queue = fifo.SyncFIFOBuffered(width=req_layout.size,
                                                           depth=self._queue)
        connect(m, flipped(self.request), queue.w_stream)
        m.submodules.mem = mem = memory.Memory(shape=16, depth=self._lines, init=[])
        wp = mem.write_port()
        rp = mem.read_port(domain="sync")
        peek = mem.read_port(domain="sync")

        offset = (p.burst_bytes - 1).bit_length()
        index_width = (self._lines - 1).bit_length()

        def line_of(addr):
            return addr[offset:offset + index_width]

        head = req_layout(queue.r_stream.payload)
        current = Signal(req_layout)
        writing = Signal()                 # ``current`` was taken last cycle
        wait = Signal(8)                   # cycles until the next request may be taken
        take = queue.r_stream.valid & (wait == 0) & ~self.response.valid
        top = (1 << p.occupancy_width) - 1

        m.d.comb += [
            queue.r_stream.ready.eq(take),
            rp.addr.eq(line_of(head.addr)),
            peek.addr.eq(self.peek),
            self.line.eq(peek.data),
            self.occupancy.eq(Mux(queue.level > top, top, queue.level)),
            self.busy.eq((queue.level != 0) | writing),
            wp.addr.eq(line_of(current.addr)),
            wp.data.eq(Mux(current.op == MemOp.UPDATE, rp.data + 1, 1)),
            wp.en.eq(writing & ((current.op == MemOp.STORE) | (current.op == MemOp.UPDATE))),
        ]
        m.d.sync += writing.eq(take)
        with m.If(take):
            m.d.sync += [current.eq(head),
                         wait.eq(Mux(self.interval < 2, 1, self.interval - 1))]
        with m.Elif(wait != 0):
            m.d.sync += wait.eq(wait - 1)
        with m.If(self.response.ready):
            m.d.sync += self.response.valid.eq(0)
        with m.If(writing & (current.op == MemOp.READ)):
            m.d.sync += [self.response.valid.eq(1),
                         self.response.payload.source.eq(current.source),
                         self.response.payload.tag.eq(current.tag)]
        return m
