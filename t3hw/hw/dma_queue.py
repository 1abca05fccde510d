# SPDX-License-Identifier: Apache-2.0
"""The DMA's frontend (:class:`DmaQueue`): the descriptor table and its checked write port,
the trigger check, the ready queue of descriptor indices, the per-descriptor count of uses in
flight, and the fetch of the next descriptor for :class:`~t3hw.hw.dma_engine.DmaEngine`.
The block that wires both is :class:`t3hw.hw.dma.Dma`.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from t3hw.spec.layouts import (dma_capture_layout, dma_descriptor_layout, dma_program_layout,
                               rd_collision_attrs, trigger_layout)
from t3hw.spec.params import EngineParams, check_params
from .queue import Queue


__all__ = ["DmaQueue"]


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
        fetches from the next cycle on. A write is refused (the table is unchanged) with one
        pulse, in the cycle it is taken, of the first that applies of: ``bad_program``
        (``valid`` and 0 rows or 0 bytes per row), ``bad_pitch`` (``valid``, more than one
        row and ``pitch < row_bytes``), ``bad_range`` (``valid`` and the source or the
        destination range ends past ``2**addr_width - 1``: its last byte is
        ``base + (rows - 1) * pitch + row_bytes - 1``), ``desc_busy`` (the descriptor is in
        use, or ``desc_held``; whatever ``valid``). Programming has priority: in a cycle in which
        ``program.valid`` is high no trigger is taken and no descriptor is fetched.
    trigger : In(stream.Signature(trigger_layout))
        Triggers; ``cmd`` is the descriptor index (``tile`` only goes to ``detail``). Ready
        while not ``busy``, while ``program.valid`` is low, and while the ready queue has
        room for it and for the triggers being checked; a full queue holds ``ready`` low:
        triggers are never dropped.
    desc_held : In(1)
        The descriptor of ``program``'s index is named by a firing still pending in the
        tracker (its ``desc_held``, queried with ``program.payload.index``): a write to it is
        refused as ``desc_busy``, as for a descriptor in use here. 0 when no tracker drives it.
    descriptor : Out(stream.Signature(dma_program_layout))
        The next descriptor to run, with its index (``valid`` field always 1). ``valid`` is a
        register.
    bad_descriptor : Out(1)
        A checked trigger found its descriptor invalid this cycle; it is dropped.
    bad_program, bad_range, bad_pitch, desc_busy : Out(1)
        A descriptor write was refused this cycle, for that reason.
    detail : Out(dma_capture_layout)
        The details of this cycle's event (see :func:`~t3hw.spec.layouts.dma_capture_layout`);
        a refused write wins over a dropped trigger.
    enqueued : Out(1)
        A descriptor index entered the ready queue this cycle.
    idle : Out(1)
        No trigger being checked, no index queued, no descriptor fetched or offered.
    busy : Out(1)
        High while the table is being invalidated after reset (``2**cmd_width`` cycles).

    **Uses in flight.** A descriptor is *in use* from the cycle after a trigger naming it is
    accepted until that trigger is dropped by the check or its descriptor is taken from
    ``descriptor`` (the cycle after the transfer). Several triggers may name the same
    descriptor: each descriptor has a counter of its uses (``range(dma_ready_depth + 2)``:
    the check stages and the ready queue hold at most ``dma_ready_depth`` triggers, the fetch
    stages and ``descriptor`` one more), incremented by an accepted trigger and decremented
    by a dropped one and by a take, in the same cycle if they coincide. A write to a
    descriptor whose counter is not 0 is refused (``desc_busy``): a trigger always runs the
    descriptor it found valid when it was accepted, and a queued descriptor is never found
    invalid when it is fetched.

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
    after. Every read of a table goes straight into a register. The write checks are
    combinational in the cycle the write is taken (a ``rows_width`` x ``pitch_width``
    multiply and two ``addr_width``-bit adds). Throughput: one descriptor every 3 cycles at
    ``descriptor``; with ``dma_ready_depth = 1`` one trigger every 4 cycles, otherwise up
    to 1 per cycle while the queue has room; each cycle with ``program.valid`` high costs
    triggers and fetches that cycle.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "program":        In(stream.Signature(dma_program_layout(params))),
            "trigger":        In(stream.Signature(trigger_layout(params))),
            "desc_held":      In(1),
            "descriptor":     Out(stream.Signature(dma_program_layout(params))),
            "bad_descriptor": Out(1),
            "bad_program":    Out(1),
            "bad_range":      Out(1),
            "bad_pitch":      Out(1),
            "desc_busy":      Out(1),
            "detail":         Out(dma_capture_layout(params)),
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

        # --- program: write both tables unless the write is refused --------------------------
        prog = self.program.payload
        m.d.comb += self.program.ready.eq(~self.busy)
        take_prog = self.program.valid & self.program.ready
        in_use = Signal()
        refused = self._program_checks(m, take_prog, in_use)
        with m.If(self.busy):
            m.d.comb += [wr_check.addr.eq(sweep), wr_check.data.eq(0), wr_check.en.eq(1),
                         wr_fetch.addr.eq(sweep), wr_fetch.data.eq(0), wr_fetch.en.eq(1)]
        with m.Else():
            m.d.comb += [wr_check.addr.eq(prog.index), wr_check.data.eq(prog.valid),
                         wr_check.en.eq(take_prog & ~refused),
                         wr_fetch.addr.eq(prog.index), wr_fetch.en.eq(take_prog & ~refused)]
            for name in dlayout.members:
                m.d.comb += wr_fetch.data[name].eq(prog[name])

        # --- trigger: read the valid bit, register it, enqueue -------------------------------
        # (the block RAM's data goes straight into a register: its clock-to-out is most of a
        # cycle on an FPGA without the RAM's own output register)
        s1_valid = Signal()
        s1_cmd   = Signal(p.cmd_width, reset_less=True)
        s1_tile  = Signal(p.tile_width, reset_less=True)
        s2_valid = Signal()
        s2_cmd   = Signal(p.cmd_width, reset_less=True)
        s2_tile  = Signal(p.tile_width, reset_less=True)
        s2_ok    = Signal(reset_less=True)
        room = rq.level + s1_valid + s2_valid < p.dma_ready_depth
        m.d.comb += self.trigger.ready.eq(~self.busy & ~self.program.valid & room)
        take_trig = self.trigger.valid & self.trigger.ready
        m.d.comb += rd_check.addr.eq(self.trigger.payload.cmd)
        m.d.sync += [s1_valid.eq(take_trig), s1_cmd.eq(self.trigger.payload.cmd),
                     s1_tile.eq(self.trigger.payload.tile),
                     s2_valid.eq(s1_valid), s2_cmd.eq(s1_cmd), s2_tile.eq(s1_tile),
                     s2_ok.eq(rd_check.data)]
        check_ok = Signal()
        m.d.comb += [
            check_ok.eq(s2_valid & s2_ok),
            rq.data.eq(s2_cmd),
            rq.push.eq(check_ok),           # always accepted: trigger.ready reserved the room
            self.enqueued.eq(check_ok),
            self.bad_descriptor.eq(s2_valid & ~s2_ok),
        ]
        with m.If(~refused):
            m.d.comb += [self.detail.index.eq(s2_cmd), self.detail.tile.eq(s2_tile)]

        # --- fetch: pop the head index, read its descriptor, offer it ------------------------
        fetching = Signal()                 # the RAM shows the popped index's descriptor
        fetched  = Signal()                 # ...registered in `got`
        fetch_index = Signal(p.cmd_width, reset_less=True)
        got      = Signal(dlayout, reset_less=True)
        got_index = Signal(p.cmd_width, reset_less=True)
        out = self.descriptor
        fetch_slot = ~fetching & ~fetched & (~out.valid | out.ready)
        m.d.comb += [
            rq.o.ready.eq(fetch_slot & ~self.program.valid),
            rd_fetch.addr.eq(rq.o.payload),
        ]
        m.d.sync += [fetching.eq(rq.o.valid & rq.o.ready), fetched.eq(fetching),
                     fetch_index.eq(rq.o.payload), got.eq(rd_fetch.data),
                     got_index.eq(fetch_index)]
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(fetched):
            # `out` is empty here: it was empty or being taken when the index was popped. The
            # descriptor is valid: it has been in use since its trigger was checked valid.
            m.d.sync += out.valid.eq(1)
            for name in dlayout.members:
                m.d.sync += out.payload[name].eq(got[name])
            m.d.sync += out.payload.index.eq(got_index)

        uses = self._uses(m, take_trig, self.bad_descriptor, s2_cmd, in_use)
        m.d.comb += self.idle.eq(~s1_valid & ~s2_valid & ~rq.o.valid & ~fetching & ~fetched
                                 & ~out.valid)
        if platform == "formal":
            # Formal only (never in rtl/): what formal_spec() checks inside.
            self.formal_view = SimpleNamespace(
                ready_queue=rq, write=wr_check.en | wr_fetch.en, write_addr=wr_fetch.addr,
                check_read=take_trig, fetch_read=rq.o.valid & rq.o.ready,
                trigger_held=self.trigger.valid & ~self.busy & room & self.program.valid,
                fetch_held=rq.o.valid & fetch_slot & self.program.valid,
                uses=uses, fetched=fetched, got=got, reject_cmd=s2_cmd)
        return m

    def _program_checks(self, m, take_prog, in_use):
        """The checks of a descriptor write taken this cycle: drives the four refusal pulses
        and, for a refused write, ``detail``; returns ``refused``. ``in_use``: the written
        descriptor has a use in flight."""
        p = self._p
        prog = self.program.payload
        # Last byte offset of each range: (rows - 1) * pitch + row_bytes - 1, for rows and
        # row_bytes of at least 1 (0 is refused first). The ends have a carry bit above
        # addr_width: set when the range wraps.
        span = Signal(max(p.rows_width + p.pitch_width, p.row_bytes_width) + 1)
        src_end = Signal(max(p.addr_width, len(span)) + 1)
        dst_end = Signal(max(p.addr_width, len(span)) + 1)
        m.d.comb += [
            span.eq((prog.rows - 1) * prog.pitch + prog.row_bytes - 1),
            src_end.eq(prog.src + span),
            dst_end.eq(prog.dst + span),
        ]
        empty    = (prog.rows == 0) | (prog.row_bytes == 0)
        overlap  = (prog.rows > 1) & (prog.pitch < prog.row_bytes)
        wraps    = src_end[p.addr_width:].any() | dst_end[p.addr_width:].any()
        refused = Signal()
        m.d.comb += [
            self.bad_program.eq(take_prog & prog.valid & empty),
            self.bad_pitch.eq(take_prog & prog.valid & ~empty & overlap),
            self.bad_range.eq(take_prog & prog.valid & ~empty & ~overlap & wraps),
            self.desc_busy.eq(take_prog & ~(prog.valid & (empty | overlap | wraps)) & in_use),
            refused.eq(self.bad_program | self.bad_pitch | self.bad_range | self.desc_busy),
        ]
        with m.If(refused):
            m.d.comb += [self.detail.index.eq(prog.index), self.detail.tile.eq(prog.tile),
                         self.detail.addr.eq(prog.src)]
        return refused

    def _uses(self, m, take_trig, dropped, dropped_cmd, in_use):
        """The per-descriptor use counters: +1 for a trigger taken, -1 for a trigger dropped
        by the check, -1 for a descriptor taken from ``descriptor``. Drives ``in_use`` (the
        counter of ``program``'s index is not 0, or the tracker holds it: ``desc_held``); returns
        the counters."""
        p = self._p
        out = self.descriptor
        taken = out.valid & out.ready
        cmd = self.trigger.payload.cmd
        uses = [Signal(range(p.dma_ready_depth + 2), name=f"uses_{i}")
                for i in range(p.dma_descriptors)]
        for i, u in enumerate(uses):
            m.d.sync += u.eq(u + (take_trig & (cmd == i)) - (dropped & (dropped_cmd == i))
                             - (taken & (out.payload.index == i)))
        busy = Cat(u != 0 for u in uses)
        m.d.comb += in_use.eq(busy.bit_select(self.program.payload.index, 1) | self.desc_held)
        return uses
