# SPDX-License-Identifier: Apache-2.0
"""A round-robin merge of streams into one registered stream (the engine's network output,
where address-map packets and DMA packets meet)."""

from amaranth import *
from amaranth.hdl import Assume, Cover
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from .formal import Spec, drive_inputs, past, stream_rules
from .logic import one_hot_select


__all__ = ["Merge", "formal_spec"]


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
        The merged stream; ``valid`` is a register, ``payload`` one level of logic over
        registers (one per input, and the one-hot choice).

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
        # The choice (``pick``, one-hot: the first valid input after ``last``) depends on the
        # inputs' valids and ``last`` only, not on ``slot``. Each input has a payload register
        # of its own, loaded with that input's payload in every slot, and a one-hot register
        # (``taken``) keeps which one was picked; ``o.payload`` is the AND-OR of the payload
        # registers by it (with no input valid, ``o.valid`` stays low and no one reads it).
        # So the choice reaches n flip-flops, not the payload's select, and the output's
        # ``ready`` reaches the payload registers' enable through one gate.
        pick = Signal(n)
        with m.Switch(last):
            for prev in range(n):
                with m.Case(prev):
                    order = [(prev + 1 + k) % n for k in range(n)]
                    for k, idx in enumerate(order):
                        cond = self.i[idx].valid
                        with (m.If(cond) if k == 0 else m.Elif(cond)):
                            m.d.comb += pick[idx].eq(1)
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        held = [Signal(self.i[k].payload.shape(), name=f"held{k}", reset_less=True)
                for k in range(n)]
        taken = Signal(n)
        with m.If(slot):
            for idx in range(n):
                with m.If(pick[idx]):
                    m.d.comb += self.i[idx].ready.eq(1)
                    m.d.sync += [self.o.valid.eq(1), last.eq(idx)]
            m.d.sync += [taken.eq(pick), *(held[k].eq(self.i[k].payload) for k in range(n))]
        m.d.comb += self.o.payload.eq(one_hot_select([taken[k] for k in range(n)], held))
        return m


# --- formal properties (docs/formal.md); never part of the generated Verilog ---------------

def formal_spec(*, n=3, width=2):
    """The formal spec top of a :class:`Merge` of ``n`` streams of ``width``-bit payloads.

    Every input is free in every cycle; the inputs are assumed to obey the stream rules.
    Asserted, in every cycle:

    * ``o`` obeys the stream rules (its register never changes while stalled);
    * at most one input is ready, only a valid one, and only in a cycle in which ``o`` is
      empty or being taken (a *slot*);
    * ``o`` holds an item in a cycle exactly when one was taken in the cycle before or it was
      stalled, and an item taken from input ``k`` is on ``o`` the next cycle, unchanged;
    * fairness: a valid input waits at most ``n - 1`` slots before it is taken.

    Covers: each input is taken after waiting exactly ``n - 1`` slots (the bound is reached).
    """

    def body(m, platform):
        m.submodules.dut = dut = Merge(width, n)
        drive_inputs(m, dut)
        for k in range(n):
            stream_rules(m, dut.i[k], Assume, f"i{k}")
        stream_rules(m, dut.o, Assert, "o")

        o = dut.o
        slot = ~o.valid | o.ready
        readies = Cat(dut.i[k].ready for k in range(n))
        taken = Signal(width)
        for k in range(n):
            with m.If(dut.i[k].ready):
                m.d.comb += taken.eq(dut.i[k].payload)
        m.d.comb += [
            Assert((readies & (readies - 1)) == 0, "merge: more than one input ready"),
            Assert(o.valid == past(m, readies.any() | (o.valid & ~o.ready), name="o_next"),
                   "merge: o.valid without a transfer"),
        ]
        with m.If(past(m, readies.any(), name="took")):
            m.d.comb += Assert(o.payload == past(m, taken, name="taken_was"),
                               "merge: o.payload is not the item taken")
        for k in range(n):
            i = dut.i[k]
            m.d.comb += Assert(~i.ready | (i.valid & slot), f"merge: i{k} ready out of turn")
            wait = Signal(range(n + 1), name=f"wait{k}")
            with m.If(~i.valid | i.ready):
                m.d.sync += wait.eq(0)
            with m.Elif(slot):
                m.d.sync += wait.eq(wait + 1)
            m.d.comb += [
                Assert(wait <= n - 1, f"merge: i{k} waited more than {n - 1} slots"),
                Cover((wait == n - 1) & i.ready),
            ]
    return Spec(body)
