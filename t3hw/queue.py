# SPDX-License-Identifier: Apache-2.0
"""A first-word-fall-through queue whose full state does not cost a cycle.

Unlike :class:`amaranth.lib.fifo.SyncFIFO`, a full :class:`Queue` accepts a push in a cycle in
which its head is read, so a queue of any depth (1 included) passes one item per cycle while
its reader is ready.
"""

from amaranth import *
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out


__all__ = ["Queue"]


class Queue(wiring.Component):
    """FWFT queue with a push strobe in and a stream out.

    Parameters
    ----------
    shape : ShapeLike
        Shape of an item.
    depth : int
        Items held, at least 1.

    Members
    -------
    push : In(1)
        Write ``data`` this cycle if ``accept`` is high (otherwise the item is not taken).
    data : In(shape)
        Item to push.
    accept : Out(1)
        The queue takes a push this cycle: it is not full, or its head leaves this cycle.
        Depends combinationally on ``o.ready``.
    o : Out(stream.Signature(shape))
        Head of the queue; ``o.valid`` is a register output (not combinational on ``ready``).
    level : Out(range(depth + 1))
        Items held.

    Storage is a memory with an asynchronous read port (LUT RAM on FPGAs). Latency: an item
    pushed in cycle t is valid at ``o`` in cycle t + 1.
    """

    def __init__(self, shape, *, depth):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive integer, not {depth!r}")
        self._shape, self._depth = shape, depth
        super().__init__({
            "push":   In(1),
            "data":   In(shape),
            "accept": Out(1),
            "o":      Out(stream.Signature(shape)),
            "level":  Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self._depth
        pop = self.o.valid & self.o.ready
        m.d.comb += self.accept.eq((self.level != depth) | pop)
        do_push = self.push & self.accept
        m.d.comb += self.o.valid.eq(self.level != 0)

        if depth == 1:
            # A single register.
            store = Signal(self._shape, reset_less=True)
            with m.If(do_push):
                m.d.sync += store.eq(self.data)
            m.d.comb += self.o.payload.eq(store)
        else:
            m.submodules.storage = storage = memory.Memory(shape=self._shape, depth=depth,
                                                           init=[])
            wr = storage.write_port()
            rd = storage.read_port(domain="comb")
            head = Signal(range(depth))
            tail = Signal(range(depth))
            m.d.comb += [
                wr.addr.eq(tail), wr.data.eq(self.data), wr.en.eq(do_push),
                rd.addr.eq(head), self.o.payload.eq(rd.data),
            ]
            with m.If(do_push):
                m.d.sync += tail.eq(Mux(tail == depth - 1, 0, tail + 1))
            with m.If(pop):
                m.d.sync += head.eq(Mux(head == depth - 1, 0, head + 1))
        m.d.sync += self.level.eq(self.level + do_push - pop)
        return m
