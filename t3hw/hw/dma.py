# SPDX-License-Identifier: Apache-2.0
"""The DMA: a descriptor table and ready queue fed by triggers, and an engine that walks each
triggered tile into burst-sized comm-stream reads and one network packet per returned burst.

Three components meet at two streams, as in a frontend / backend DMA:

* :class:`DmaQueue` (frontend): the descriptor table (``2**cmd_width`` entries, one per
  trigger command), the ``program`` write port, the trigger check and the ready queue of
  descriptor indices. It fetches the descriptor at the head of the ready queue and offers it
  on ``descriptor``.
* :class:`DmaEngine` (backend): walks one descriptor at a time into reads of at most
  ``burst_bytes`` on ``read``, with up to ``max_outstanding`` reads in flight, and turns each
  ``response`` into one ``packet``.
* :class:`Dma`: the two wired together, with the sticky error bits and the counters. This is
  the generated block ``t3hw_dma``.

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
from amaranth.hdl import Assume, Cover
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from t3hw.spec.layouts import (dma_descriptor_layout, dma_errors_layout, dma_program_layout,
                      dma_stats_layout, net_packet_layout, rd_collision_attrs,
                      read_request_layout, read_response_layout, trigger_layout)
from t3hw.spec.params import EngineParams, check_params
from .queue import Queue
from .formal import Spec, drive_inputs, past, stream_rules
from .status import sticky_errors


__all__ = ["DmaQueue", "DmaEngine", "Dma", "formal_spec"]


class DmaQueue(wiring.Component):
    """Descriptor table, trigger check and ready queue.

    Parameters
    ----------
    params : EngineParams
        Uses ``cmd_width`` (table of ``dma_descriptors = 2**cmd_width`` entries),
        ``dma_ready_depth`` and the descriptor field widths.

    Members
    -------
    program : In(stream.Signature(dma_program_layout))
        Descriptor writes. Ready whenever not ``busy``; a write takes effect for triggers and
        fetches from the next cycle on. A write with ``valid = 1`` and ``rows = 0`` or
        ``row_bytes = 0`` is rejected (the table is unchanged) and pulses ``bad_program``.
        Programming has priority: in a cycle in which ``program.valid`` is high no trigger
        is taken and no descriptor is fetched (see Storage).
    trigger : In(stream.Signature(trigger_layout))
        Triggers; ``cmd`` is the descriptor index (``tile`` is not used). Ready while not
        ``busy``, while ``program.valid`` is low, and while the ready queue has room for it
        and for the triggers being checked; a full queue holds ``ready`` low: triggers are
        never dropped.
    descriptor : Out(stream.Signature(dma_descriptor_layout))
        The next descriptor to run (``valid`` field always 1). ``valid`` is a register.
    bad_descriptor : Out(range(3))
        Triggers and fetches that found their descriptor invalid this cycle (0, 1 or 2); they
        are dropped.
    bad_program : Out(1)
        A descriptor write was rejected this cycle.
    enqueued : Out(1)
        A descriptor index entered the ready queue this cycle.
    idle : Out(1)
        No trigger being checked, no index queued, no descriptor fetched or offered.
    busy : Out(1)
        High while the table is being invalidated after reset (``2**cmd_width`` cycles).

    Storage: two tables of ``2**cmd_width`` entries, written together (same index, same
    cycle) by ``program`` and by the reset sweep, each with one write port and one
    synchronous read port: the *check* table holds only the ``valid`` bit (the one field the
    trigger check reads; 1 bit per entry), the *fetch* table the whole descriptor. No read
    whose data is used ever meets a write: the sweep runs while no trigger is taken and the
    ready queue is empty, and a ``program`` write presented holds off both reads that cycle.
    So the tables need no read-before-write behaviour, and say so to the synthesis flow
    (``t3hw_rd_collision = "excluded"``): a table in block RAM needs no bypass logic between
    the RAM and the register its read data goes into.

    Timing: a trigger accepted in cycle t has its descriptor's valid bit read in t + 1 and
    checked in t + 2 (invalid: the ``bad_descriptor`` pulse; valid: the index enters the
    ready queue). The descriptor of the head index is read in the cycle the index leaves the
    queue, which is as soon as ``descriptor`` is empty or being taken, no fetch is under way
    and ``program.valid`` is low; it is registered, then offered on ``descriptor`` the cycle
    after, when it is checked again (a descriptor invalidated while queued is dropped with
    ``bad_descriptor``). Every read of a table goes straight into a register. Throughput:
    one descriptor every 3 cycles at ``descriptor``; with ``dma_ready_depth = 1`` one
    trigger every 4 cycles, otherwise up to 1 per cycle while the queue has room; each cycle
    with ``program.valid`` high costs triggers and fetches that cycle.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "program":        In(stream.Signature(dma_program_layout(params))),
            "trigger":        In(stream.Signature(trigger_layout(params))),
            "descriptor":     Out(stream.Signature(dma_descriptor_layout(params))),
            "bad_descriptor": Out(range(3)),
            "bad_program":    Out(1),
            "enqueued":       Out(1),
            "idle":           Out(1),
            "busy":           Out(1, init=1),
        })

    def elaborate(self, platform):
        p = self._p
        m = Module()
        dlayout = dma_descriptor_layout(p)

        # The check table holds the valid bit, the fetch table the whole descriptor; both
        # are written with the same index in the same cycle. A table read whose data is used
        # (a trigger taken, an index popped for its fetch) never happens in a cycle with a
        # write: the sweep keeps triggers out and the ready queue empty, and a program write
        # presented holds both reads off (below). The attribute tells the synthesis flow
        # (``t3hw/tools/synth_scripts/ecp5.ys``) that no read-before-write bypass is needed
        # after the RAMs.
        no_collision = rd_collision_attrs("excluded")
        m.submodules.check_table = check_table = memory.Memory(
            shape=1, depth=p.dma_descriptors, init=[], attrs=no_collision)
        m.submodules.fetch_table = fetch_table = memory.Memory(
            shape=dlayout, depth=p.dma_descriptors, init=[], attrs=no_collision)
        wr_check = check_table.write_port()
        wr_fetch = fetch_table.write_port()
        rd_check = check_table.read_port(domain="sync")
        rd_fetch = fetch_table.read_port(domain="sync")

        m.submodules.ready_queue = rq = Queue(p.cmd_width, depth=p.dma_ready_depth)

        # Reset sweep: invalidate every descriptor, one per cycle. It owns the write ports.
        sweep = Signal(range(p.dma_descriptors))
        with m.If(self.busy):
            m.d.sync += sweep.eq(sweep + 1)
            with m.If(sweep == p.dma_descriptors - 1):
                m.d.sync += self.busy.eq(0)

        # --- program: write both tables unless the shape is empty ----------------------------
        prog = self.program.payload
        m.d.comb += self.program.ready.eq(~self.busy)
        take_prog = self.program.valid & self.program.ready
        empty = prog.valid & ((prog.rows == 0) | (prog.row_bytes == 0))
        m.d.comb += self.bad_program.eq(take_prog & empty)
        with m.If(self.busy):
            m.d.comb += [wr_check.addr.eq(sweep), wr_check.data.eq(0), wr_check.en.eq(1),
                         wr_fetch.addr.eq(sweep), wr_fetch.data.eq(0), wr_fetch.en.eq(1)]
        with m.Else():
            m.d.comb += [wr_check.addr.eq(prog.index), wr_check.data.eq(prog.valid),
                         wr_check.en.eq(take_prog & ~empty),
                         wr_fetch.addr.eq(prog.index), wr_fetch.en.eq(take_prog & ~empty)]
            for name in dlayout.members:
                m.d.comb += wr_fetch.data[name].eq(prog[name])

        # --- trigger: read the valid bit, register it, enqueue -------------------------------
        # (the block RAM's data goes straight into a register: its clock-to-out is most of a
        # cycle on an FPGA without the RAM's own output register)
        s1_valid = Signal()
        s1_cmd   = Signal(p.cmd_width, reset_less=True)
        s2_valid = Signal()
        s2_cmd   = Signal(p.cmd_width, reset_less=True)
        s2_ok    = Signal(reset_less=True)
        room = rq.level + s1_valid + s2_valid < p.dma_ready_depth
        m.d.comb += self.trigger.ready.eq(~self.busy & ~self.program.valid & room)
        take_trig = self.trigger.valid & self.trigger.ready
        m.d.comb += rd_check.addr.eq(self.trigger.payload.cmd)
        m.d.sync += [s1_valid.eq(take_trig), s1_cmd.eq(self.trigger.payload.cmd),
                     s2_valid.eq(s1_valid), s2_cmd.eq(s1_cmd), s2_ok.eq(rd_check.data)]
        check_ok = Signal()
        m.d.comb += [
            check_ok.eq(s2_valid & s2_ok),
            rq.data.eq(s2_cmd),
            rq.push.eq(check_ok),           # always accepted: trigger.ready reserved the room
            self.enqueued.eq(check_ok),
        ]

        # --- fetch: pop the head index, read its descriptor, offer it ------------------------
        fetching = Signal()                 # the RAM shows the popped index's descriptor
        fetched  = Signal()                 # ...registered in `got`
        got      = Signal(dlayout, reset_less=True)
        out = self.descriptor
        fetch_slot = ~fetching & ~fetched & (~out.valid | out.ready)
        m.d.comb += [
            rq.o.ready.eq(fetch_slot & ~self.program.valid),
            rd_fetch.addr.eq(rq.o.payload),
        ]
        m.d.sync += [fetching.eq(rq.o.valid & rq.o.ready), fetched.eq(fetching),
                     got.eq(rd_fetch.data)]
        fetch_bad = fetched & ~got.valid
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(fetched & got.valid):
            # `out` is empty here: it was empty or being taken when the index was popped.
            m.d.sync += [out.valid.eq(1), out.payload.eq(got)]

        m.d.comb += [
            self.bad_descriptor.eq((s2_valid & ~s2_ok) + fetch_bad),
            self.idle.eq(~s1_valid & ~s2_valid & ~rq.o.valid & ~fetching & ~fetched
                         & ~out.valid),
        ]
        if platform == "formal":
            # Formal only (never in rtl/): what formal_spec() checks inside.
            self.formal_view = SimpleNamespace(
                ready_queue=rq, write=wr_check.en | wr_fetch.en, check_read=take_trig,
                fetch_read=rq.o.valid & rq.o.ready,
                trigger_held=self.trigger.valid & ~self.busy & room & self.program.valid,
                fetch_held=rq.o.valid & fetch_slot & self.program.valid)
        return m


class DmaEngine(wiring.Component):
    """Walks descriptors into burst reads and turns each returned read into a packet.

    Parameters
    ----------
    params : EngineParams
        Uses ``burst_bytes``, ``max_outstanding`` and the address and descriptor widths.

    Members
    -------
    descriptor : In(stream.Signature(dma_descriptor_layout))
        The descriptor to run (its ``valid`` field is not looked at). Taken when the engine
        is idle or issuing the last burst of the current descriptor.
    read : Out(stream.Signature(read_request_layout))
        Comm-stream reads: address ``src + r * pitch + c`` for row ``r`` and row offset ``c``
        (multiples of ``burst_bytes``), ``bytes = min(burst_bytes, row_bytes - c)``, ``tag``
        counting requests modulo ``2**read_tag_width``. ``valid`` is a register.
    response : In(stream.Signature(read_response_layout))
        Read returns, in request order. Ready when the packet register is empty or being
        taken. A response with no read outstanding is dropped; one with a tag other than the
        oldest outstanding read's is used as that read's return. Both pulse ``bad_response``.
    packet : Out(stream.Signature(net_packet_layout))
        One packet per returned read: ``device``, ``addr = dst + r * pitch + c``,
        ``kind = op``, ``tile`` of the descriptor, and the read's ``bytes``. ``valid`` is a
        register.
    bad_response : Out(1)
        A bad response arrived this cycle.
    idle : Out(1)
        No descriptor in progress, no read requested or outstanding, no packet held.

    Latency: the first read of a descriptor is valid the cycle after the descriptor is taken;
    a packet is valid the cycle after its response. Throughput: one read per cycle (also
    across descriptors, while ``descriptor`` has the next one waiting), as long as fewer than
    ``max_outstanding`` reads are requested and not returned (a read counts from the cycle
    it appears on ``read``); one packet per cycle. Back-pressure on ``read`` holds the walk;
    back-pressure on ``packet`` holds ``response``; nothing is lost. Addresses wrap modulo
    ``2**addr_width``.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "descriptor":   In(stream.Signature(dma_descriptor_layout(params))),
            "read":         Out(stream.Signature(read_request_layout(params))),
            "response":     In(stream.Signature(read_response_layout(params))),
            "packet":       Out(stream.Signature(net_packet_layout(params))),
            "bad_response": Out(1),
            "idle":         Out(1),
        })

    def elaborate(self, platform):
        # Two halves meet at ``pending``, the queue of outstanding reads: the walker
        # (``_walk``) takes descriptors, loads each burst into the ``read`` register and
        # pushes its packet fields and tag; the response side (``_respond``) pops the head
        # for each response into the ``packet`` register.
        p = self._p
        m = Module()
        meta_layout = data.StructLayout({"packet": net_packet_layout(p),
                                         "tag":    p.read_tag_width})

        # Every read from the cycle it is loaded into the `read` register until its response
        # holds one entry of `pending` (its packet fields and tag): the queue's depth is the
        # outstanding limit, and its head is the packet of the next response.
        m.submodules.pending = pending = Queue(meta_layout, depth=p.max_outstanding)
        active = self._walk(m, pending, meta_layout)
        self._respond(m, pending, active)
        if platform == "formal":
            # Formal only (never in rtl/): what formal_spec() checks inside.
            self.formal_view = SimpleNamespace(pending=pending)
        return m

    def _walk(self, m, pending, meta_layout):
        """The walker: its state, the ``read`` register and the push into ``pending`` of each
        burst, and the take of the next ``descriptor``. Returns ``active`` (a descriptor is
        in progress)."""
        p = self._p

        # --- walker state ------------------------------------------------------------------
        active    = Signal()
        cur       = Signal(dma_descriptor_layout(p), reset_less=True)
        src_row   = Signal(p.addr_width, reset_less=True)
        dst_row   = Signal(p.addr_width, reset_less=True)
        col       = Signal(p.row_bytes_width, reset_less=True)
        rows_left = Signal(p.rows_width, reset_less=True)
        tag       = Signal(p.read_tag_width)

        # The walk's decisions are registers, updated with the state they derive from, so
        # that no subtract or compare lies between the walker and the descriptor queue's
        # ready: ``remaining`` = row_bytes - col, ``row_end`` = remaining <= burst,
        # ``one_row`` = rows_left == 1, ``short_row`` = row_bytes <= burst.
        remaining = Signal(p.row_bytes_width, reset_less=True)
        row_end   = Signal(reset_less=True)     # this burst is the last (maybe short) of its row
        one_row   = Signal(reset_less=True)
        short_row = Signal(reset_less=True)
        nbytes    = Signal(p.burst_width)
        last      = Signal()                    # ...and of the descriptor
        m.d.comb += [
            nbytes.eq(Mux(row_end, remaining, p.burst_bytes)),
            last.eq(row_end & one_row),
        ]

        req = self.read
        issue = Signal()                   # load the next burst into the `read` register
        m.d.comb += issue.eq(active & (~req.valid | req.ready) & pending.accept)

        with m.If(req.ready):
            m.d.sync += req.valid.eq(0)
        meta = Signal(meta_layout)
        m.d.comb += [
            meta.packet.device.eq(cur.device),
            meta.packet.addr.eq(dst_row + col),
            meta.packet.kind.eq(cur.op),
            meta.packet.tile.eq(cur.tile),
            meta.packet.bytes.eq(nbytes),
            meta.tag.eq(tag),
            pending.data.eq(meta),
            pending.push.eq(issue),
        ]
        with m.If(issue):
            m.d.sync += [
                req.valid.eq(1),
                req.payload.addr.eq(src_row + col),
                req.payload.bytes.eq(nbytes),
                req.payload.tag.eq(tag),
                tag.eq(tag + 1),
            ]
            with m.If(row_end):
                m.d.sync += [
                    col.eq(0),
                    rows_left.eq(rows_left - 1),
                    src_row.eq(src_row + cur.pitch),
                    dst_row.eq(dst_row + cur.pitch),
                    remaining.eq(cur.row_bytes),
                    row_end.eq(short_row),
                    one_row.eq(rows_left == 2),
                ]
            with m.Else():
                m.d.sync += [
                    col.eq(col + p.burst_bytes),
                    remaining.eq(remaining - p.burst_bytes),
                    row_end.eq(remaining <= 2 * p.burst_bytes),
                ]
            with m.If(last):
                m.d.sync += active.eq(0)

        # Take the next descriptor when idle, or while issuing the last burst of this one.
        desc = self.descriptor
        m.d.comb += desc.ready.eq(~active | (issue & last))
        with m.If(desc.valid & desc.ready):
            m.d.sync += [
                active.eq(1),
                cur.eq(desc.payload),
                src_row.eq(desc.payload.src),
                dst_row.eq(desc.payload.dst),
                col.eq(0),
                rows_left.eq(desc.payload.rows),
                remaining.eq(desc.payload.row_bytes),
                row_end.eq(desc.payload.row_bytes <= p.burst_bytes),
                short_row.eq(desc.payload.row_bytes <= p.burst_bytes),
                one_row.eq(desc.payload.rows == 1),
            ]
        return active

    def _respond(self, m, pending, active):
        """The response side: each response pops ``pending``'s head into the ``packet``
        register; ``bad_response``, and ``idle`` (from the walker's ``active``)."""
        # --- responses to packets ----------------------------------------------------------
        pkt  = self.packet
        resp = self.response
        m.d.comb += resp.ready.eq(~pkt.valid | pkt.ready)
        take_resp = resp.valid & resp.ready
        m.d.comb += pending.o.ready.eq(take_resp)
        head = pending.o.payload
        with m.If(pkt.ready):
            m.d.sync += pkt.valid.eq(0)
        with m.If(take_resp & pending.o.valid):
            m.d.sync += [pkt.valid.eq(1), pkt.payload.eq(head.packet)]
        m.d.comb += [
            self.bad_response.eq(take_resp & (~pending.o.valid | (head.tag != resp.payload.tag))),
            self.idle.eq(~active & ~pending.o.valid & ~pkt.valid),
        ]


class Dma(wiring.Component):
    """The DMA block: :class:`DmaQueue` feeding :class:`DmaEngine`, with errors and counters.

    Parameters
    ----------
    params : EngineParams
        See :class:`DmaQueue` and :class:`DmaEngine`; also ``counter_width``.

    Members
    -------
    program : In(stream.Signature(dma_program_layout))
        Descriptor table writes (from the register block); ready whenever not ``busy``. See
        :class:`DmaQueue`.
    trigger : In(stream.Signature(trigger_layout))
        Triggers from the tracker; back-pressured (never dropped) when the ready queue is
        full, and in a cycle in which ``program.valid`` is high (programming goes first).
    read : Out(stream.Signature(read_request_layout))
        Comm-stream burst reads; see :class:`DmaEngine`.
    response : In(stream.Signature(read_response_layout))
        Read returns, in request order.
    packet : Out(stream.Signature(net_packet_layout))
        Network packets, one per returned read.
    errors : Out(dma_errors_layout)
        Sticky error bits; each stays set until the same bit of ``clear`` is pulsed (a bit set
        in the same cycle as its clear stays set).
    clear : In(dma_errors_layout)
        Write-one-to-clear strobe for ``errors``.
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
    ``active`` and the read tag are reset.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "program":  In(stream.Signature(dma_program_layout(params))),
            "trigger":  In(stream.Signature(trigger_layout(params))),
            "read":     Out(stream.Signature(read_request_layout(params))),
            "response": In(stream.Signature(read_response_layout(params))),
            "packet":   Out(stream.Signature(net_packet_layout(params))),
            "errors":   Out(dma_errors_layout(params)),
            "clear":    In(dma_errors_layout(params)),
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
        wiring.connect(m, queue.descriptor, engine.descriptor)
        wiring.connect(m, engine.read, wiring.flipped(self.read))
        wiring.connect(m, wiring.flipped(self.response), engine.response)
        wiring.connect(m, engine.packet, wiring.flipped(self.packet))
        m.d.comb += [
            self.busy.eq(queue.busy),
            self.idle.eq(queue.idle & engine.idle),
        ]

        set_err = Signal(dma_errors_layout(p))
        m.d.comb += [
            set_err.bad_descriptor.eq(queue.bad_descriptor != 0),
            set_err.bad_program.eq(queue.bad_program),
            set_err.bad_response.eq(engine.bad_response),
        ]
        sticky_errors(m, self.errors, self.clear, set_err)

        st = self.stats
        m.d.sync += [
            st.triggers.eq(st.triggers + queue.enqueued),
            st.rejected.eq(st.rejected + queue.bad_descriptor),
            st.reads.eq(st.reads + (self.read.valid & self.read.ready)),
            st.packets.eq(st.packets + (self.packet.valid & self.packet.ready)),
        ]
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
    * the ready queue and the queue of outstanding reads keep their
      :meth:`~t3hw.hw.queue.Queue.properties` (never above their depth, so never more than
      ``max_outstanding`` reads outstanding; stalled head unchanged; first in first out);
    * **a trigger is never dropped**: every checked trigger whose descriptor is valid is
      taken by the ready queue (``trigger.ready`` reserved its room);
    * ``program`` and ``trigger`` are not ready during the reset sweep;
    * **no table read whose data is used meets a write**: no cycle writes the descriptor
      tables and takes a trigger (check read) or pops an index (fetch read), which is what
      their ``t3hw_rd_collision = "excluded"`` attribute declares;
    * a packet leaves only for a response that found a read outstanding, the cycle after it.

    Covers: a packet is sent; the ready queue and the outstanding reads are full; the engine
    takes the next descriptor while it is still busy with the previous one; a descriptor
    write holds off a trigger that the queue has room for, and a fetch.
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
        stream_rules(m, queue.descriptor, Assert, "descriptor")
        rq.properties(m)
        pending.properties(m)

        m.d.comb += [
            Assert(~rq.push | rq.accept, "dma: a checked trigger found the ready queue full"),
            Assert(~(dut.busy & (dut.program.ready | dut.trigger.ready)),
                   "dma: program or trigger ready during the reset sweep"),
            Assert(~(queue.formal_view.write
                     & (queue.formal_view.check_read | queue.formal_view.fetch_read)),
                   "dma: a descriptor table read whose data is used meets a write"),
        ]
        resp = dut.response
        returned = resp.valid & resp.ready & pending.o.valid
        pkt = dut.packet
        m.d.comb += Assert(
            pkt.valid == past(m, returned | (pkt.valid & ~pkt.ready), name="packet_next"),
            "dma: a packet without a response to an outstanding read")
        desc = queue.descriptor
        m.d.comb += [
            Cover(pkt.valid & pkt.ready),
            Cover(rq.level == p.dma_ready_depth),
            Cover(pending.level == p.max_outstanding),
            Cover(desc.valid & desc.ready & ~engine.idle),
            Cover(queue.formal_view.trigger_held),
            Cover(queue.formal_view.fetch_held),
        ]
    return Spec(body)
