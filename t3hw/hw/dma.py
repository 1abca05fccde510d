# SPDX-License-Identifier: Apache-2.0
"""The DMA: a descriptor table and ready queue fed by triggers, and an engine that walks each
triggered tile into burst-sized comm-stream reads and one network packet per returned burst.

Three components meet at two streams, as in a frontend / backend DMA:

* :class:`~t3hw.hw.dma_queue.DmaQueue` (frontend, :mod:`t3hw.hw.dma_queue`): the descriptor
  table (``2**cmd_width`` entries, one per trigger command), the checked ``program`` write
  port, the trigger check, the ready queue of descriptor indices and the count of each
  descriptor's uses in flight. It fetches the descriptor at the head of the ready queue and
  offers it, with its index, on ``descriptor``.
* :class:`~t3hw.hw.dma_engine.DmaEngine` (backend, :mod:`t3hw.hw.dma_engine`): walks one
  descriptor at a time into reads of at most ``burst_bytes`` on ``read``, turns each good
  ``response`` into one ``packet`` through a packet queue, and aborts a descriptor on a bad
  one. A read is issued only with a place held for its packet (at most ``max_outstanding``
  reads and queued packets), so ``response`` is always ready: a network that holds the
  packets back holds the walk, never the memory's read returns, which the GPU's loads share.
* :class:`Dma`: the two wired together, with the sticky error bits, their ``capture`` and
  the counters. This is the generated block ``t3hw_dma``.

Guarantees
----------
* **A trigger runs the descriptor it was armed with.** From the cycle after a trigger is
  accepted until its descriptor is taken by the engine (or the trigger is dropped because
  the descriptor was invalid), a write to that descriptor is refused (``desc_busy``). So a
  descriptor found valid by the trigger check is the one that runs.
* **Checked descriptors.** A write of an empty shape, of rows that overlap (``pitch <
  row_bytes``) or of a range that wraps past ``2**addr_width`` is refused; the table is
  unchanged.
* **Bad returns abort.** A read return with its ``error`` bit or an unexpected tag aborts
  its descriptor: no packet for that read or any later read of the descriptor, the walk of
  the descriptor stops, the next descriptors run normally. Every other descriptor's packets
  are sent exactly once.

Ordering
--------
* The bursts of one descriptor are read, and their packets sent, in address-walk order: row
  by row, and within a row from the row start upward; the last burst of a row is short when
  ``burst_bytes`` does not divide ``row_bytes``.
* Across descriptors: descriptors run one at a time, in the order their triggers were
  accepted. Every read of a descriptor is requested before any read of the next one, and
  every packet of a descriptor is sent before any packet of the next one (responses return
  in request order). The reads of the next descriptor may be requested before the last
  packets of the previous one have been sent, so a consumer must not assume a descriptor
  is complete at its destination when the next one starts reading.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assume, Cover
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from t3hw.spec.layouts import (dma_capture_layout, dma_errors_layout, dma_program_layout,
                               dma_stats_layout, net_packet_layout, read_request_layout,
                               read_response_layout, trigger_layout)
from t3hw.spec.params import EngineParams, check_params
from .dma_engine import DmaEngine
from .dma_queue import DmaQueue
from .formal import Spec, drive_inputs, stream_rules
from .queue import Queue
from .status import count, sticky_errors


__all__ = ["DmaQueue", "DmaEngine", "Dma", "formal_spec"]


class Dma(wiring.Component):
    """The DMA block: :class:`DmaQueue` feeding :class:`DmaEngine`, with errors and counters.

    Parameters
    ----------
    params : EngineParams
        See :class:`DmaQueue` and :class:`DmaEngine`; also ``counter_width``.

    Members
    -------
    program : In(stream.Signature(dma_program_layout))
        Descriptor table writes (from the register block), one at a time: ready when not
        ``busy`` and no write is being checked
        (:func:`~t3hw.spec.contract.dma_program_cycles`). A refused write (``bad_program``,
        ``bad_pitch``, ``bad_range``, ``desc_busy``: see :class:`DmaQueue`) shows its bit
        on ``errors`` :func:`~t3hw.spec.contract.dma_verdict_cycles` cycles after it is
        taken.
    desc_held : In(1)
        The tracker holds the descriptor of ``program``'s index, sampled the cycle after the
        write is taken (see :class:`DmaQueue`): a write to it is refused as ``desc_busy``.
        Tie to 0 without a tracker.
    trigger : In(stream.Signature(trigger_layout))
        Triggers from the tracker; back-pressured (never dropped) when the ready queue is
        full, and while a descriptor write is presented or checked (programming goes first).
    read : Out(stream.Signature(read_request_layout))
        Comm-stream burst reads; see :class:`DmaEngine`.
    response : In(stream.Signature(read_response_layout))
        Read returns, in request order; a bad one aborts its descriptor (:class:`DmaEngine`).
    packet : Out(stream.Signature(net_packet_layout))
        Network packets, one per good return of a descriptor not aborted.
    errors : Out(dma_errors_layout)
        Sticky error bits; each stays set until the same bit of ``clear`` is pulsed (a bit set
        in the same cycle as its clear stays set). An event shows the cycle after it happens;
        a read response's (``bad_response``, ``read_error``), two cycles after.
    clear : In(dma_errors_layout)
        Write-one-to-clear strobe for ``errors``.
    capture : Out(dma_capture_layout)
        The details of the events that ``errors`` shows in the same cycle, registered with
        them (it holds its value in cycles without an event). When events coincide, a read
        response's wins, then a refused write's, then a dropped trigger's.
    stats : Out(dma_stats_layout)
        Wrapping counters.
    busy : Out(1)
        High while the descriptor table is invalidated after reset (``2**cmd_width`` cycles);
        ``program`` and ``trigger`` wait meanwhile.
    idle : Out(1)
        No trigger, descriptor, read, response or packet is in progress anywhere.

    Latency, with an idle engine, no back-pressure and no descriptor write presented: the
    first read of a trigger accepted in cycle t is valid in cycle t + 8 (valid-bit read,
    check, ready queue, table read, fetch register, ``descriptor`` register, walker, ``read``
    register). Registers that hold payloads are ``reset_less``; only valid bits, the walker's
    ``active``, its run number, the abort mark, the read tag and the programming check's
    stage bits are reset; the reset sweep clears the descriptor and use-count tables.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "program":  In(stream.Signature(dma_program_layout(params))),
            "trigger":  In(stream.Signature(trigger_layout(params))),
            "desc_held": In(1),
            "read":     Out(stream.Signature(read_request_layout(params))),
            "response": In(stream.Signature(read_response_layout(params))),
            "packet":   Out(stream.Signature(net_packet_layout(params))),
            "errors":   Out(dma_errors_layout(params)),
            "clear":    In(dma_errors_layout(params)),
            "capture":  Out(dma_capture_layout(params)),
            "stats":    Out(dma_stats_layout(params)),
            "busy":     Out(1),
            "idle":     Out(1),
        })

    @property
    def params(self):
        return self._p

    def elaborate(self, platform):
        p = self._p
        m = Module()
        m.submodules.queue  = queue  = DmaQueue(p)
        m.submodules.engine = engine = DmaEngine(p)
        wiring.connect(m, wiring.flipped(self.program), queue.program)
        wiring.connect(m, wiring.flipped(self.trigger), queue.trigger)
        m.d.comb += queue.desc_held.eq(self.desc_held)
        wiring.connect(m, queue.descriptor, engine.descriptor)
        wiring.connect(m, engine.read, wiring.flipped(self.read))
        wiring.connect(m, wiring.flipped(self.response), engine.response)
        wiring.connect(m, engine.packet, wiring.flipped(self.packet))
        m.d.comb += [
            self.busy.eq(queue.busy),
            self.idle.eq(queue.idle & engine.idle),
        ]

        # A read response's events and details (a tag compare behind the response stream)
        # are registered before they reach the sticky bits, the capture and the counter, so
        # that the compare drives a few flip-flops, not the enable of every capture bit:
        # they show two cycles after the response.
        resp = SimpleNamespace(bad_response=Signal(name="resp_bad_response"),
                               read_error=Signal(name="resp_read_error"),
                               aborted=Signal(name="resp_aborted"),
                               detail=Signal.like(engine.detail, name="resp_detail"))
        m.d.sync += [resp.bad_response.eq(engine.bad_response),
                     resp.read_error.eq(engine.read_error), resp.aborted.eq(engine.aborted),
                     resp.detail.eq(engine.detail)]
        set_err = Signal(dma_errors_layout(p))
        m.d.comb += [
            set_err.bad_descriptor.eq(queue.bad_descriptor),
            set_err.bad_program.eq(queue.bad_program),
            set_err.bad_range.eq(queue.bad_range),
            set_err.bad_pitch.eq(queue.bad_pitch),
            set_err.desc_busy.eq(queue.desc_busy),
            set_err.bad_response.eq(resp.bad_response),
            set_err.read_error.eq(resp.read_error),
        ]
        sticky_errors(m, self.errors, self.clear, set_err)
        with m.If(resp.bad_response | resp.read_error):
            m.d.sync += self.capture.eq(resp.detail)
        with m.Elif(Value.cast(set_err).any()):
            m.d.sync += self.capture.eq(queue.detail)

        st = self.stats
        for name, event in (("triggers", queue.enqueued), ("rejected", queue.bad_descriptor),
                            ("reads", self.read.valid & self.read.ready),
                            ("packets", self.packet.valid & self.packet.ready),
                            ("bad_program", queue.bad_program),
                            ("bad_range", queue.bad_range), ("bad_pitch", queue.bad_pitch),
                            ("desc_busy", queue.desc_busy), ("aborted", resp.aborted)):
            count(m, st[name], event)
        if platform == "formal":
            # Formal only (never in rtl/): what formal_spec() checks inside.
            self.formal_view = SimpleNamespace(queue=queue, engine=engine)
        return m


# --- formal properties (docs/formal.md); never part of the generated Verilog ---------------

def formal_spec(params: EngineParams):
    """The formal spec top of a :class:`Dma` with ``params`` (small ones: see
    :data:`t3hw.tools.formal.DMA_PARAMS`).

    Every input is free in every cycle; ``program``, ``trigger`` and ``response`` are assumed
    to obey the stream rules. Asserted, in every cycle:

    * ``read``, ``packet`` and the internal ``descriptor`` stream (:class:`DmaQueue` to
      :class:`DmaEngine`) obey the stream rules;
    * the ready queue, the queue of outstanding reads and the packet queue keep their
      :meth:`~t3hw.hw.queue.Queue.properties` (never above their depth; stalled head
      unchanged; first in first out);
    * **a response never waits**: ``response`` is always ready, the places held are the
      outstanding reads plus the queued packets (never above ``max_outstanding``), and a
      response that makes a packet always finds the packet queue with room;
    * **a trigger is never dropped**: every checked trigger whose descriptor is valid is
      taken by the ready queue (``trigger.ready`` reserved its room), and the count of
      triggers held behind ``trigger.ready`` is the ready queue's level plus the triggers
      being checked;
    * ``program`` and ``trigger`` are not ready during the reset sweep;
    * **no table read whose data is used meets a write**: no cycle writes the descriptor
      tables and takes a trigger (check read) or pops an index (fetch read), which is what
      their ``t3hw_rd_collision = "excluded"`` attribute declares;
    * a packet is queued only for a good response (no error bit, the expected tag) that
      found a read outstanding of a descriptor not aborted, and every queued packet leaves
      on ``packet`` (the queue's level is the packets made less the packets sent);
    * **uses in flight**, for one descriptor index chosen by the solver (``AnyConst``): its use
      counter equals the triggers accepted for it minus those dropped by the check minus
      the takes of it by the engine (counted at the ports of the streams), and stays within
      its range; **no table write reaches it while that count is not 0**; a fetched
      descriptor is always valid;
    * **an aborted descriptor emits nothing more**: for one descriptor run chosen by the
      solver (a take of ``descriptor``; a ghost queue beside the outstanding reads marks its
      reads), once a response has aborted it no further packet of it is made, and from the
      next cycle on no read of it is issued.

    Covers: a packet is sent; the ready queue, the outstanding reads and the packet queue
    are full; the walk waits with every place held by a queued packet; the engine
    takes the next descriptor while it is still busy with the previous one; a descriptor
    write holds off a trigger that the queue has room for, and a fetch; a write is refused
    as busy; the watched descriptor is aborted while the walker is on it, and a later
    descriptor's packet is sent after an abort.
    """
    p = check_params(params)

    def body(m, platform):
        dut = Dma(p)
        m.submodules.dut = Fragment.get(dut, platform)
        drive_inputs(m, dut)
        for name in ("program", "trigger", "response"):
            stream_rules(m, getattr(dut, name), Assume, name)
        for name in ("read", "packet"):
            stream_rules(m, getattr(dut, name), Assert, name)
        queue, engine = dut.formal_view.queue, dut.formal_view.engine
        rq, pending = queue.formal_view.ready_queue, engine.formal_view.pending
        packets = engine.formal_view.packets
        stream_rules(m, queue.descriptor, Assert, "descriptor")
        rq.properties(m)
        pending.properties(m)
        packets.properties(m)

        qv = queue.formal_view
        m.d.comb += [
            Assert(~rq.push | rq.accept, "dma: a checked trigger found the ready queue full"),
            Assert(qv.held == rq.level + qv.s1_valid + qv.s2_valid,
                   "dma: the count of triggers held is not the queue's level plus the checks"),
            Assert(~(dut.busy & (dut.program.ready | dut.trigger.ready)),
                   "dma: program or trigger ready during the reset sweep"),
            Assert(~(queue.formal_view.write
                     & (queue.formal_view.check_read | queue.formal_view.fetch_read)),
                   "dma: a descriptor table read whose data is used meets a write"),
        ]
        resp = dut.response
        returned = resp.valid & resp.ready & pending.o.valid
        pkt = dut.packet
        send = engine.formal_view.send
        made = Signal(range(2 * p.max_outstanding + 2))     # packets made less packets sent
        m.d.sync += made.eq(made + send - (pkt.valid & pkt.ready))
        m.d.comb += [
            Assert(resp.ready, "dma: a response was held"),
            Assert(engine.formal_view.held == pending.level + packets.level,
                   "dma: the places held are not the outstanding reads plus the packets"),
            Assert(engine.formal_view.held <= p.max_outstanding,
                   "dma: more places held than max_outstanding"),
            Assert(~send | packets.accept, "dma: a packet found the packet queue full"),
            Assert(~send | returned, "dma: a packet without a response to an outstanding read"),
            Assert(made == packets.level, "dma: a packet other than the one of a good response"),
        ]
        desc = queue.descriptor
        _uses_properties(m, p, dut, queue, desc)
        _abort_properties(m, p, dut, engine, desc)
        m.d.comb += [
            Cover(pkt.valid & pkt.ready),
            Cover(rq.level == p.dma_ready_depth),
            Cover(pending.level == p.max_outstanding),
            Cover(packets.level == p.max_outstanding),
            Cover(engine.formal_view.active & (packets.level == p.max_outstanding)
                  & ~pkt.ready),
            Cover(desc.valid & desc.ready & ~engine.idle),
            Cover(queue.formal_view.trigger_held),
            Cover(queue.formal_view.fetch_held),
            Cover(queue.desc_busy),
        ]
    return Spec(body)


def _uses_properties(m, p, dut, queue, desc):
    """The use count of a solver-chosen descriptor against a shadow count from the ports."""
    j = Signal(p.cmd_width)
    m.d.comb += j.eq(AnyConst(p.cmd_width))
    fv = queue.formal_view
    shadow = Signal(8)
    trig = dut.trigger
    m.d.sync += shadow.eq(shadow + (trig.valid & trig.ready & (trig.payload.cmd == j))
                          - (queue.bad_descriptor & (fv.reject_cmd == j))
                          - (desc.valid & desc.ready & (desc.payload.index == j)))
    watch, use = fv.uses
    m.d.comb += watch.eq(j)
    m.d.comb += [
        Assert(use == shadow[:len(use)],
               "dma: a use count differs from triggers taken minus retired"),
        Assert(shadow <= p.dma_ready_depth + 1, "dma: more uses in flight than the bound"),
        Assert(~(fv.write & ~dut.busy & (fv.write_addr == j) & (shadow != 0)),
               "dma: a descriptor in use was written"),
        Assert(~fv.fetched | fv.got.valid, "dma: a fetched descriptor is invalid"),
    ]


def _abort_properties(m, p, dut, engine, desc):
    """No packet and no further read of a solver-chosen descriptor run once it is aborted."""
    fv = engine.formal_view
    pending = fv.pending
    started = Signal()      # the watched run has been chosen
    walking = Signal()      # ...and the walker is on it
    with m.If(fv.start):    # the walker starts a descriptor (a run)
        pick = AnySeq(1)
        m.d.sync += walking.eq(pick & ~started)
        with m.If(pick):
            m.d.sync += started.eq(1)
    # Ghost: one bit per outstanding read, set for the watched run's; pushed and popped with
    # the queue of outstanding reads.
    m.submodules.ghost = ghost = Queue(1, depth=p.max_outstanding)
    m.d.comb += [ghost.push.eq(pending.push & pending.accept), ghost.data.eq(walking),
                 ghost.o.ready.eq(pending.o.ready)]
    aborted = Signal()      # the watched run was aborted (from the cycle after)
    with m.If(fv.abort & ghost.o.payload):
        m.d.sync += aborted.eq(1)
    m.d.comb += [
        Assert(ghost.o.valid == pending.o.valid, "dma: ghost queue out of step"),
        Assert(~(fv.send & ghost.o.payload & aborted),
               "dma: an aborted descriptor made a packet"),
        Assert(~(pending.push & walking & aborted), "dma: an aborted descriptor issued a read"),
        Cover(aborted & walking & fv.stop),
        Cover(aborted & fv.send & ~ghost.o.payload),
    ]
