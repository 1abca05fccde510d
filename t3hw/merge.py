# SPDX-License-Identifier: Apache-2.0
"""A round-robin merge of streams into one registered stream (the engine's network output,
where address-map packets and DMA packets meet)."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


__all__ = ["Merge"]


class Merge(wiring.Component):
    """Round-robin merge of ``n`` streams of one payload shape.

    Parameters
    ----------
    shape : shape-like
        The payload shape of every stream.
    n : int
        Inputs, at least 2.

    Members
    -------
    i : In(stream.Signature(shape)) array of ``n``
        The inputs, named ``i__0`` ... in Verilog.
    o : Out(stream.Signature(shape))
        The merged stream; ``valid`` and ``payload`` are registers.

    In each cycle in which ``o`` is empty or being taken, the first requesting input after
    the one granted last (in index order, wrapping) is taken into ``o``. Each input's order
    is kept; with ``n`` inputs requesting, each gets one transfer in ``n``. Latency 1 cycle,
    throughput 1 per cycle.
    """

    def __init__(self, shape, n):
        if not isinstance(n, int) or isinstance(n, bool) or n < 2:
            self._MustUse__silence = True
            raise ValueError(f"n must be an integer in [2, inf), not {n!r}")
        self._n = n
        super().__init__({
            "i": In(stream.Signature(shape)).array(n),
            "o": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._n
        last = Signal(range(n), init=n - 1)
        slot = ~self.o.valid | self.o.ready
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        # The candidates in priority order after ``last``: one If chain per value of ``last``.
        with m.Switch(last):
            for prev in range(n):
                with m.Case(prev):
                    order = [(prev + 1 + k) % n for k in range(n)]
                    with m.If(slot):
                        for k, idx in enumerate(order):
                            cond = self.i[idx].valid
                            with (m.If(cond) if k == 0 else m.Elif(cond)):
                                m.d.comb += self.i[idx].ready.eq(1)
                                m.d.sync += [self.o.valid.eq(1),
                                             self.o.payload.eq(self.i[idx].payload),
                                             last.eq(idx)]
        return m
