# SPDX-License-Identifier: Apache-2.0
"""Simulation-only HDL of the co-simulation's ring network (:class:`sim_models.network.Ring`
without jitter or reordering), for the fast co-simulation.

Timing and packets only: the data stays in numpy (:mod:`t3hw.verif.simhdl.top` logs every
packet an engine sends). GPU ``i`` sends to GPU ``d = (i - 1) % n`` over link ``i``; at cycle
``c``, as :class:`~sim_models.cosim.SystemEnv` runs :class:`~sim_models.network.Ring`:

* ``tx<i>.ready`` is ``Ring.tx_ready(i, c, burst_bytes)``: the bytes of GPU ``i``'s packets
  whose last byte has not left by ``c``, plus one burst, fit in ``tx_bytes``;
* a packet taken on ``tx<i>`` (``valid & ready``) at ``c`` is ``Ring.send``: the link starts
  it when it is free, but not before ``c``, serializes its ``bytes`` at the exact rate
  ``P/Q`` (:func:`~sim_models.network.link_rate`: one byte takes ``Q/P`` cycles) and
  delivers it at its departure rounded up to a whole cycle, plus ``latency``;
* ``rx<d>`` offers the oldest packet of link ``(d + 1) % n`` from its arrival on (the
  ``payload`` bits unchanged), held until taken: ``Ring.arrived`` into the receiver's port.

Per link the HDL keeps the time the link is free as whole cycles and a remainder in ``1/P``
cycle, a FIFO of departures (the departure's cycle rounded up, and the bytes that leave
then: packets that leave in the same cycle share one entry, so at most one entry falls due
per cycle while ``cycle`` counts up by one per clock) with the running sum of their bytes,
and the wire, a FIFO of (arrival, packet). Departures are in order and arrivals too (one
link, no jitter), so a FIFO is exactly the Python model's heap. ``tx.ready``, ``rx.valid``
and ``rx.payload`` are functions of registers, memories and ``cycle`` only.

Integer ``//`` and ``%`` by constants and wide compares are used freely: this HDL is never
synthesised.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from sim_models.network import link_rate
from t3hw.spec.layouts import net_packet_layout
from t3hw.spec.params import EngineParams

from .dram import CYCLE_WIDTH


__all__ = ["RingHdl", "ring_rate"]

#: Largest FIFO depth (wire or departures), given or derived.
MAX_DEPTH = 1 << 16

#: Receivers' back-pressure the default wire depth allows for: packets that have arrived and
#: wait to be taken, beyond those in flight.
WIRE_SLACK = 256


def ring_rate(bytes_per_cycle):
    """``(P, Q)``: the link rate ``bytes_per_cycle`` as the exact fraction ``P/Q``
    (:func:`sim_models.network.link_rate`; a ValueError names a bad value and the range)."""
    rate = link_rate(bytes_per_cycle)
    return rate.numerator, rate.denominator


def _check(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], not {value!r}")


class RingHdl(wiring.Component):
    """The ring's links between ``n`` engines (module docstring).

    Parameters
    ----------
    params : EngineParams
        The engines' parameters (packet layout, ``burst_bytes``).
    n : int
        Ring size, in [2, ``min(2**device_width, 64)``].
    bytes_per_cycle : int, float or Fraction
        Link rate (:func:`ring_rate`).
    latency : int
        Cycles of flight, in [0, 2**20].
    tx_bytes : int
        Each GPU's transmit buffer, in [1, 2**24].
    wire_depth : int or None
        Packets each link's wire holds (in flight, or arrived and not taken), in
        [1, 65536]. None (the default): every packet that can be in flight, plus
        :data:`WIRE_SLACK` waiting at the receiver (at most 65536).
    tx_depth : int or None
        Departure entries per link, in [1, 65536]. None (the default): as many as the
        transmit buffer can need, ``min(held, ceil(held / bytes_per_cycle) + 2)`` with
        ``held = tx_bytes + 2**burst_width - 1`` (then bit 1 of ``error`` never rises,
        unless that is above 65536).
    ring : int or None
        None (the default): these ``n`` GPUs are the whole ring. Else they are GPUs
        ``first .. first + n - 1`` of a ring of ``ring``, in [n + 1, 64], that other
        processes simulate the rest of (``docs/cosim.md``, "Split over processes"): GPU 0's
        packets leave on ``xout`` with their arrival cycle, and those of the GPU after
        ``n - 1`` come in on ``xin``, at least a cycle before their arrival.

    Members
    -------
    cycle : In(40)
        The co-simulation's cycle number; it counts up by one per clock while packets move.
    tx<i> : In(stream.Signature(net_packet_layout))
        From engine ``i``'s ``net_tx``: the ring is the sink.
    rx<i> : Out(stream.Signature(net_packet_layout))
        To engine ``i``'s ``net_rx``: the packets of GPU ``(i + 1) % n``.
    packets<i> : Out(32)
        Packets taken on ``tx<i>``.
    idle : Out(1)
        No packet on any wire (:meth:`Ring.empty`, the receivers' ports included).
    first, xout, xin : In(range(ring)), Out(...), In(...)
        Only with ``ring``: the global index of GPU 0 here, the packets GPU 0 sends
        (``valid``, ``arrival``, ``payload``: what link 0's wire would take, for the part
        that holds GPU ``first - 1``), and the packets of GPU ``first + n`` (of the next
        part) for GPU ``n - 1``'s wire.
    xroom, xempty : Out(1), Out(1)
        Only with ``ring``: ``xin``'s wire has room for a packet even if none leaves it
        this cycle (it holds at most ``wire_depth - 2``; the exchange hands a packet only
        then, and keeps the others: a receiver that takes nothing for long loses nothing),
        and it is empty (a packet handed after its arrival is late only then: behind
        others, it would not have been taken sooner).
    error, error_cycle : Out(4), Out(40)
        Sticky: bit 0 a packet was lost, its wire full; bit 1 a departure was lost, its
        FIFO full (the packet still goes; its bytes are not counted in the buffer); bit 2 a
        packet taken with ``device`` not ``(i - 1) % n`` or ``bytes`` 0 (it still goes: the
        Python model raises); bit 3 two departure entries fell due in one cycle (``cycle``
        jumped: ``tx.ready`` was early). The cycle of the first error.
    """

    def __init__(self, params: EngineParams = EngineParams(), *, n, bytes_per_cycle, latency,
                 tx_bytes, wire_depth=None, tx_depth=None, ring=None):
        try:
            most = min(1 << params.device_width, 64)
            if ring is None:
                _check("n", n, 2, most)
            else:
                _check("ring", ring, 2, most)
                _check("n", n, 1, ring - 1)
            _check("latency", latency, 0, 1 << 20)
            _check("tx_bytes", tx_bytes, 1, 1 << 24)
            self.rate_p, self.rate_q = ring_rate(bytes_per_cycle)
            if wire_depth is not None:
                _check("wire_depth", wire_depth, 1, MAX_DEPTH)
            if tx_depth is not None:
                _check("tx_depth", tx_depth, 1, MAX_DEPTH)
        except ValueError:
            self._MustUse__silence = True
            raise
        p, q = self.rate_p, self.rate_q
        self._p, self.n, self.latency, self.tx_bytes = params, n, latency, tx_bytes
        self.ring = ring
        # Bytes held, at most: a packet is taken only while held + burst_bytes <= tx_bytes,
        # and its ``bytes`` field holds up to max_bytes.
        self.max_bytes = (1 << params.burst_width) - 1
        held = tx_bytes + self.max_bytes
        backlog = -(-held * q // p) + 1        # cycles the held bytes take on the link
        self.tx_depth = tx_depth or min(held, backlog + 1, MAX_DEPTH)
        self.wire_depth = wire_depth or min(latency + backlog + 2 + WIRE_SLACK, MAX_DEPTH)
        self._held_width = held.bit_length()
        self._due_width = ((1 << CYCLE_WIDTH) + backlog + 1).bit_length()
        self._arrival_width = ((1 << self._due_width) + latency).bit_length()
        layout = net_packet_layout(params)
        members = {"cycle": In(CYCLE_WIDTH)}
        for i in range(n):
            members[f"tx{i}"] = In(stream.Signature(layout))
            members[f"rx{i}"] = Out(stream.Signature(layout))
            members[f"packets{i}"] = Out(32)
        members.update(idle=Out(1), error=Out(4), error_cycle=Out(CYCLE_WIDTH))
        if ring is not None:
            cross = wiring.Signature({"valid": Out(1), "arrival": Out(self._arrival_width),
                                      "payload": Out(layout)})
            members.update(first=In(range(ring)), xout=Out(cross), xin=In(cross),
                           xroom=Out(1), xempty=Out(1))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        idle, errors = [], []
        for i in range(self.n):
            take = Signal(name=f"take{i}")
            tx = getattr(self, f"tx{i}")
            m.d.comb += take.eq(tx.valid & tx.ready)
            m.d.sync += getattr(self, f"packets{i}").eq(getattr(self, f"packets{i}") + take)
            due = self._serializer(m, i, take)
            errors.append(self._departures(m, i, take, due))
            arrival = due + self.latency
            if self.ring is not None and i == 0:           # to the previous part
                m.d.comb += [self.xout.valid.eq(take), self.xout.arrival.eq(arrival),
                             self.xout.payload.eq(tx.payload)]
                lost = C(0, 1)
            else:
                wire_idle, lost, _ = self._wire(m, f"{i}", take, arrival, tx.payload,
                                                getattr(self, f"rx{(i - 1) % self.n}"))
                idle.append(wire_idle)
            if self.ring is None:
                dst = (i - 1) % self.n
            else:
                dst = (self.first + (i - 1 + self.ring)) % self.ring
            bad = take & ((tx.payload.device != dst) | (tx.payload.bytes == 0))
            errors.append(Cat(lost, C(0, 1), bad))
        if self.ring is not None:                          # from the next part
            x = self.xin
            wire_idle, lost, count = self._wire(m, str(self.n), x.valid, x.arrival,
                                                x.payload, getattr(self, f"rx{self.n - 1}"))
            m.d.comb += [self.xroom.eq(count <= self.wire_depth - 2),
                         self.xempty.eq(wire_idle)]
            idle.append(wire_idle)
            errors.append(Cat(lost, C(0, 3)))
        new = Signal(4)
        m.d.comb += [new.eq(_or(errors, 4)), self.idle.eq(Cat(*idle).all())]
        with m.If((new != 0) & (self.error == 0)):
            m.d.sync += self.error_cycle.eq(self.cycle)
        m.d.sync += self.error.eq(self.error | new)
        return m

    def _next(self, ptr, depth):
        return Mux(ptr == depth - 1, 0, ptr + 1)

    def _serializer(self, m, i, take):
        """Link ``i``'s free time: whole cycles and a remainder in ``1/P`` cycle. Returns the
        departure cycle, rounded up, of a packet taken now."""
        p, q, c = self.rate_p, self.rate_q, self.cycle
        tx = getattr(self, f"tx{i}")
        whole = Signal(self._due_width, name=f"free_whole{i}")
        frac = Signal(range(p), name=f"free_frac{i}")
        later = whole >= c                     # the link is free at c or later: start then
        total = Mux(later, frac, 0) + tx.payload.bytes * q
        new_whole = Signal(self._due_width, name=f"new_whole{i}")
        new_frac = Signal(range(p), name=f"new_frac{i}")
        due = Signal(self._due_width, name=f"departure{i}")
        m.d.comb += [new_whole.eq(Mux(later, whole, c) + total // p),
                     new_frac.eq(total % p),
                     due.eq(new_whole + (new_frac != 0))]
        with m.If(take):
            m.d.sync += [whole.eq(new_whole), frac.eq(new_frac)]
        return due

    def _departures(self, m, i, take, due):
        """Link ``i``'s departures FIFO and held bytes; drives ``tx<i>.ready``. Returns the
        error bits 1 and 3 (as bits 1 and 3 of a 4-bit value)."""
        tx, c, depth = getattr(self, f"tx{i}"), self.cycle, self.tx_depth
        hw = self._held_width
        entry = data.StructLayout({"due": self._due_width, "bytes": hw})
        mem = m.submodules[f"departures{i}"] = Memory(shape=entry, depth=depth, init=[])
        wr, rd0, rd1 = mem.write_port(), mem.read_port(domain="comb"), \
            mem.read_port(domain="comb")
        head, tail = Signal(range(depth), name=f"dep_head{i}"), \
            Signal(range(depth), name=f"dep_tail{i}")
        count = Signal(range(depth + 1), name=f"dep_count{i}")
        held = Signal(hw, name=f"held{i}")
        tail_due = Signal(self._due_width, name=f"tail_due{i}")
        tail_bytes = Signal(hw, name=f"tail_bytes{i}")
        head_due = Signal(name=f"dep_pop{i}")
        held_now = Signal(hw, name=f"held_now{i}")
        m.d.comb += [
            rd0.addr.eq(head), rd1.addr.eq(self._next(head, depth)),
            head_due.eq((count != 0) & (rd0.data.due <= c)),
            held_now.eq(held - Mux(head_due, rd0.data.bytes, 0)),
            tx.ready.eq(held_now + self._p.burst_bytes <= self.tx_bytes),
        ]
        late = head_due & (count >= 2) & (rd1.data.due <= c)      # bit 3
        stays = (count >= 2) | ((count == 1) & ~head_due)         # the tail is not leaving
        merge = take & stays & (tail_due == due)
        push = take & ~merge & ((count != depth) | head_due)
        lost = take & ~merge & ~push                              # bit 1
        last = Mux(tail == 0, depth - 1, tail - 1)
        nbytes = tx.payload.bytes
        m.d.comb += [wr.addr.eq(Mux(merge, last, tail)), wr.en.eq(merge | push),
                     wr.data.due.eq(due), wr.data.bytes.eq(Mux(merge, tail_bytes, 0) + nbytes)]
        m.d.sync += [held.eq(held_now + Mux(merge | push, nbytes, 0)),
                     count.eq(count + push - head_due)]
        with m.If(merge | push):
            m.d.sync += tail_bytes.eq(wr.data.bytes)
        with m.If(push):
            m.d.sync += [tail.eq(self._next(tail, depth)), tail_due.eq(due)]
        with m.If(head_due):
            m.d.sync += head.eq(self._next(head, depth))
        return Cat(C(0, 1), lost, C(0, 1), late)

    def _wire(self, m, i, take, arrival, pkt, rx):
        """Wire ``i``'s FIFO of (arrival, packet) ``pkt``, pushed while ``take``; drives
        ``rx``. Returns (empty, a packet was lost, the packets it holds)."""
        c, depth = self.cycle, self.wire_depth
        entry = data.StructLayout({"arrival": self._arrival_width,
                                   "pkt": net_packet_layout(self._p)})
        mem = m.submodules[f"wire{i}"] = Memory(shape=entry, depth=depth, init=[])
        wr, rd = mem.write_port(), mem.read_port(domain="comb")
        head, tail = Signal(range(depth), name=f"wire_head{i}"), \
            Signal(range(depth), name=f"wire_tail{i}")
        count = Signal(range(depth + 1), name=f"wire_count{i}")
        pop, push = Signal(name=f"rx_pop{i}"), Signal(name=f"wire_push{i}")
        m.d.comb += [
            rd.addr.eq(head),
            rx.valid.eq((count != 0) & (rd.data.arrival <= c)),
            rx.payload.eq(rd.data.pkt),
            pop.eq(rx.valid & rx.ready),
            push.eq(take & ((count != depth) | pop)),
            wr.addr.eq(tail), wr.en.eq(push),
            wr.data.arrival.eq(arrival), wr.data.pkt.eq(pkt),
        ]
        m.d.sync += count.eq(count + push - pop)
        with m.If(push):
            m.d.sync += tail.eq(self._next(tail, depth))
        with m.If(pop):
            m.d.sync += head.eq(self._next(head, depth))
        return count == 0, take & ~push, count


def _or(values, width):
    """The bitwise OR of ``values``, each zero-extended to ``width`` bits."""
    out = C(0, width)
    for v in values:
        out = out | v
    return out[:width]
