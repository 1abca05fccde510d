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

from t3hw.spec.layouts import (LUTRAM_ATTR, dma_capture_layout, dma_descriptor_layout, dma_program_layout,
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
        Descriptor writes, one at a time: ``ready`` is a register, high when not ``busy`` and
        no write is being checked. A write taken in cycle t is checked in a four-stage
        pipeline (below) and, unless refused, written in cycle
        ``t + dma_verdict_cycles - 1``; it takes effect for triggers and fetches from the
        cycle after. A write is refused (the table is unchanged) with one pulse, in that
        cycle, of the first that applies of: ``bad_program`` (``valid`` and 0 rows or 0
        bytes per row), ``bad_pitch`` (``valid``, more than one row and ``pitch <
        row_bytes``), ``bad_range`` (``valid`` and the source or the destination range ends
        past ``2**addr_width - 1``: its last byte is ``base + (rows - 1) * pitch +
        row_bytes - 1``), ``desc_busy`` (the descriptor is in use as of cycle t, its
        retirements in t included, or ``desc_held`` was high in t + 2; whatever ``valid``).
        Programming has priority: from the cycle a write is presented until the cycle it
        is written no trigger is taken, and no descriptor is fetched in that last cycle.
    trigger : In(stream.Signature(trigger_layout))
        Triggers; ``cmd`` is the descriptor index (``tile`` only goes to ``detail``).
        Ready while not ``busy``, while no descriptor write is presented or being checked,
        and while the ready queue has room for it and for the triggers being checked (a
        register with the first two: a place freed by a fetch counts from the cycle after
        next); a full queue holds ``ready`` low: triggers are never dropped.
    desc_held : In(1)
        The descriptor of ``program``'s index is named by a firing still pending in the
        tracker (its ``desc_held``, a register, answering ``program.payload.index`` as
        queried in the cycle the write is taken), sampled two cycles after the write is
        taken: a write to it is refused as ``desc_busy``, as for a descriptor in use here.
        0 when no tracker drives it.
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
    descriptor, so each descriptor has a count of its uses, kept as three counters in three
    tables, one per event that changes it, so that each table has one writer: *issued*
    (+1 for an accepted trigger), *dropped* (+1 for a trigger dropped by the check) and
    *taken* (+1 for a take from ``descriptor``); the uses in flight are ``issued - dropped
    - taken`` modulo ``2**w``, ``w`` the width of ``dma_ready_depth + 1`` (the check stages
    and the ready queue hold at most ``dma_ready_depth`` triggers, the fetch stages and
    ``descriptor`` one more). A write to a descriptor with uses in flight is refused
    (``desc_busy``): a trigger always runs the descriptor it found valid when it was
    accepted, and a queued descriptor is never found invalid when it is fetched. The tables
    are LUT RAM (marked ``t3hw_lutram``), so their cost grows with ``2**cmd_width`` as RAM
    bits and a read multiplexer, not as counters and comparators. An event's cycle reads
    its counter into a register (or takes the value written in the same cycle, when the
    previous event wrote the same counter); the next cycle writes it plus one: the RAM read
    and the adder are in different cycles.

    Storage: two descriptor tables of ``2**cmd_width`` entries, written together (same
    index, same cycle) by ``program`` and by the reset sweep, each with one write port and
    one synchronous read port: the *check* table holds only the ``valid`` bit (the one field
    the trigger check reads; 1 bit per entry), the *fetch* table the whole descriptor. No
    read whose data is used ever meets a write: the sweep runs while no trigger is taken
    and the ready queue is empty, and a ``program`` write holds off triggers from the cycle
    it is presented and the fetch in the cycle it is written. So the tables need no
    read-before-write behaviour, and say so to the synthesis flow (``t3hw_rd_collision =
    "excluded"``): a table in block RAM needs no bypass logic between the RAM and the
    register its read data goes into. The three use-count tables (``2**cmd_width`` x ``w``
    bits) each have one write port and two asynchronous read ports (the
    read-modify-write's, and the programming check's), each read into a register; the reset
    sweep clears them too.

    Timing: a trigger accepted in cycle t has its descriptor's valid bit read in t + 1 and
    checked in t + 2 (invalid: the ``bad_descriptor`` pulse; valid: the index enters the
    ready queue). The descriptor of the head index is read in the cycle the index leaves the
    queue, which is as soon as ``descriptor`` is empty or being taken, no fetch is under way
    and no descriptor is being written; it is registered, then offered on ``descriptor``
    the cycle after. Every read of a table goes straight into a register. A descriptor
    write taken in cycle t: t + 1, ``(rows - 1) * pitch`` and the shape checks; t + 2, the
    span ``+ row_bytes - 1`` and the use counts read into registers; t + 3, the two range
    ends and their carries, and the in-use verdict; t + 4 (:func:`~t3hw.spec.contract.dma_verdict_cycles`
    - 1), the verdict from registers, the tables written or the refusal pulsed;
    ``program.ready`` again from t + 5. Throughput: one descriptor every 4 cycles at
    ``descriptor`` (the fetch starts the cycle after the last one is taken); with
    ``dma_ready_depth = 1`` one trigger every 5 cycles, otherwise up to 1 per cycle while
    the queue has room; a descriptor write costs the triggers of the
    5 cycles from its presentation and one fetch cycle.
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
        # holds triggers off from the cycle it is presented and the fetch in the cycle it is
        # written (below). The attribute tells the synthesis flow
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

        # --- program: a four-stage check, then write both tables unless refused ------------
        chk = self._program_pipeline(m)
        with m.If(self.busy):
            m.d.comb += [wr_check.addr.eq(sweep), wr_check.data.eq(0), wr_check.en.eq(1),
                         wr_fetch.addr.eq(sweep), wr_fetch.data.eq(0), wr_fetch.en.eq(1)]
        with m.Else():
            m.d.comb += [wr_check.addr.eq(chk.desc.index), wr_check.data.eq(chk.desc.valid),
                         wr_check.en.eq(chk.write),
                         wr_fetch.addr.eq(chk.desc.index), wr_fetch.en.eq(chk.write)]
            for name in dlayout.members:
                m.d.comb += wr_fetch.data[name].eq(chk.desc[name])

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
        # `held` counts the triggers being checked and the indices queued (rq.level + s1_valid
        # + s2_valid); `room` is a register, `held < dma_ready_depth` for the count this
        # cycle's takes and drops leave, so that `trigger.ready` is a few gates of registers
        # and no adder lies on the tracker's path into its trigger queue.
        held = Signal(range(p.dma_ready_depth + 1))
        room = Signal(init=1)
        # ``trigger.ready``: one register (not busy, no write being checked, room) and the
        # presented write (``program.valid``, the register block's register), one gate from
        # flip-flops into the tracker's trigger queue.
        ready = Signal()
        m.d.comb += self.trigger.ready.eq(ready & ~self.program.valid)
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
        with m.If(~chk.refused):
            m.d.comb += [self.detail.index.eq(s2_cmd), self.detail.tile.eq(s2_tile)]
        # `room` leaves out this cycle's pop (it would bring the walker's `descriptor.ready`
        # into it): in the cycle after a pop it may be low with one place free, never high
        # without one.
        # Both next values: sums and compares of ``held`` alone, selected by the handshakes.
        take, drop, pop = take_trig, self.bad_descriptor, rq.o.valid & rq.o.ready
        held_next = Signal.like(held)
        room_next = Signal()
        m.d.comb += [
            held_next.eq(Mux(take & ~drop & ~pop, held + 1,
                             Mux(~take & drop & pop, held - 2,
                                 Mux(take ^ drop ^ pop, held - 1, held)))),
            room_next.eq(Mux(take & ~drop, held + 1 < p.dma_ready_depth,
                             Mux(~take & drop, held - 1 < p.dma_ready_depth,
                                 held < p.dma_ready_depth))),
        ]
        m.d.sync += [held.eq(held_next), room.eq(room_next),
                     ready.eq(~(self.busy & (sweep != p.dma_descriptors - 1))
                              & ~chk.checking_next & room_next)]

        # --- fetch: pop the head index, read its descriptor, offer it ------------------------
        f = self._fetch(m, rq, rd_fetch, chk, dlayout)
        fetching, fetched, got, fetch_slot, out = f.fetching, f.fetched, f.got, f.slot, f.out
        taken = out.valid & out.ready
        uses = self._uses(m, sweep, chk, [("issued", take_trig, self.trigger.payload.cmd),
                                          ("dropped", self.bad_descriptor, s2_cmd),
                                          ("taken", taken, out.payload.index)], platform)
        m.d.comb += self.idle.eq(~s1_valid & ~s2_valid & ~rq.o.valid & ~fetching & ~fetched
                                 & ~out.valid)
        if platform == "formal":
            # Formal only (never in rtl/): what formal_spec() checks inside.
            self.formal_view = SimpleNamespace(
                ready_queue=rq, write=wr_check.en | wr_fetch.en, write_addr=wr_fetch.addr,
                check_read=take_trig, fetch_read=rq.o.valid & rq.o.ready,
                trigger_held=self.trigger.valid & ~self.busy & room
                             & (self.program.valid | chk.checking),
                fetch_held=rq.o.valid & fetch_slot & chk.writing,
                uses=uses, fetched=fetched, got=got, reject_cmd=s2_cmd,
                held=held, s1_valid=s1_valid, s2_valid=s2_valid)
        return m

    def _fetch(self, m, rq, rd_fetch, chk, dlayout):
        """The fetch: pop the head index of the ready queue ``rq`` when ``descriptor`` is
        empty (a register: whether the walker takes it this cycle stays out of the pop, the
        ready queue's level and the trigger room) and no fetch or descriptor write is under
        way, read its descriptor (``rd_fetch``, a synchronous read) into a register, and
        offer it on ``descriptor`` the cycle after. Returns the fetch's state
        (``fetching``, ``fetched``, ``got``), ``slot`` (the pop may happen) and ``out``
        (``descriptor``)."""
        p = self._p
        fetching = Signal()                 # the RAM shows the popped index's descriptor
        fetched  = Signal()                 # ...registered in `got`
        fetch_index = Signal(p.cmd_width, reset_less=True)
        got      = Signal(dlayout, reset_less=True)
        got_index = Signal(p.cmd_width, reset_less=True)
        out = self.descriptor
        fetch_slot = ~fetching & ~fetched & ~out.valid
        m.d.comb += [
            rq.o.ready.eq(fetch_slot & ~chk.writing),
            rd_fetch.addr.eq(rq.o.payload),
        ]
        m.d.sync += [fetching.eq(rq.o.valid & rq.o.ready), fetched.eq(fetching),
                     fetch_index.eq(rq.o.payload), got.eq(rd_fetch.data),
                     got_index.eq(fetch_index)]
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(fetched):
            # `out` is empty here: it was empty when the index was popped. The
            # descriptor is valid: it has been in use since its trigger was checked valid.
            m.d.sync += out.valid.eq(1)
            for name in dlayout.members:
                m.d.sync += out.payload[name].eq(got[name])
            m.d.sync += out.payload.index.eq(got_index)
        return SimpleNamespace(fetching=fetching, fetched=fetched, got=got, slot=fetch_slot,
                               out=out)

    def _program_pipeline(self, m):
        """The checks of a descriptor write, five stages after the cycle it is taken (t):

        * t + 1: ``rows - 1`` and ``pitch`` copied into the multipliers' own input
          registers; empty, overlapping rows;
        * t + 2: ``(rows - 1) * pitch``, in two products (the halves of ``pitch``); the use
          counts read (as the events up to t left them) into registers;
        * t + 3: the span ``+ row_bytes - 1``; in use (the counts, or ``desc_held`` as
          sampled in t + 2);
        * t + 4: the ends ``src + span``, ``dst + span`` and whether either wraps;
        * t + 5: the verdict from registers: the four refusal pulses, ``detail`` of a refused
          write, or the table write.

        Returns a namespace: ``desc`` (the write, registered), ``index_read`` (the index the
        use counts are read at, for :meth:`_uses`), ``in_use`` (to be driven by
        :meth:`_uses`: the counts it registered in t + 2 give uses in flight; taken in
        t + 3), ``stage`` (one-hot, the write in t + 1 .. t + 5), ``checking`` (a write is
        in t + 1 .. t + 5), ``writing`` (t + 5), ``write`` (t + 5, not refused) and
        ``refused``."""
        p = self._p
        prog = self.program
        # Stage registers: the write and what each stage found.
        desc = Signal(dma_program_layout(p), reset_less=True)
        held = Signal(reset_less=True)
        stage = Signal(5)                   # one-hot: the write is in t + 1 .. t + 5
        # ``quiet`` = ``stage == 0``, a register of its own: the register block keeps a chain
        # of the same takes (its verdict wait), which synthesis merges with ``stage``, so
        # that a compare of ``stage`` would be driven from the register block's flip-flops,
        # across the die, into the write register's enable (193 loads).
        quiet = Signal(init=1)
        m.d.comb += prog.ready.eq(~self.busy & quiet)
        take = prog.valid & prog.ready
        m.d.sync += [stage.eq(Cat(take, stage[:4])), quiet.eq(~take & (stage[:4] == 0))]
        # ``rows - 1`` is registered with the write (a decrement in front of the multipliers
        # was on the critical path).
        rows1 = Signal(p.rows_width, reset_less=True)
        # The write register loads whenever ``program.ready`` is high, a function of this
        # block's registers, not on the take (``valid & ready``): the take's ``valid`` comes
        # from the register block across the die, and fanned out to every bit's enable it was
        # the engine's worst path. Without a take the register holds garbage that no stage
        # looks at (``stage`` stays 0 and ``ready`` stays high until the next write).
        with m.If(prog.ready):
            m.d.sync += [desc.eq(prog.payload), rows1.eq(prog.payload.rows - 1)]
        with m.If(stage[1]):
            m.d.sync += held.eq(self.desc_held)
        # t + 1. The multipliers' operands, copied into registers that feed nothing else, so
        # that place and route can put them beside the DSP blocks: from the write register
        # (whose source is the register block, across the die) through a DSP block it was
        # the engine's critical path, 3.9 ns of it inside the MULT18X18D.
        m_rows1 = Signal(p.rows_width, name="mul_rows1", reset_less=True)
        m_pitch = Signal(p.pitch_width, name="mul_pitch", reset_less=True)
        empty   = Signal(reset_less=True)
        overlap = Signal(reset_less=True)
        m.d.sync += [m_rows1.eq(rows1), m_pitch.eq(desc.pitch),
                     empty.eq((desc.rows == 0) | (desc.row_bytes == 0)),
                     overlap.eq((desc.rows > 1) & (desc.pitch < desc.row_bytes))]
        # t + 2. The product in two halves of the pitch, each a multiplier of its own (one
        # DSP block each at the default widths: a single rows x pitch multiply is two DSPs
        # and an adder in one cycle), added in t + 3.
        half = (p.pitch_width + 1) // 2
        lo = Signal(p.rows_width + half, reset_less=True)
        hi = Signal(p.rows_width + p.pitch_width - half, reset_less=True)
        m.d.sync += [lo.eq(m_rows1 * m_pitch[:half]), hi.eq(m_rows1 * m_pitch[half:])]
        # t + 3. Last byte offset of each range: (rows - 1) * pitch + row_bytes - 1, for rows
        # and row_bytes of at least 1 (0 is refused first).
        span = Signal(max(p.rows_width + p.pitch_width, p.row_bytes_width) + 1,
                      reset_less=True)
        in_use = Signal()
        busy = Signal(reset_less=True)
        m.d.sync += span.eq(lo + (hi << half) + desc.row_bytes - 1)
        with m.If(stage[2]):
            m.d.sync += busy.eq(in_use | held)
        # t + 4. The ends have carry bits above addr_width: set when the range wraps.
        width = max(p.addr_width, len(span)) + 1
        wraps = Signal(reset_less=True)
        src_end, dst_end = Signal(width), Signal(width)
        m.d.comb += [src_end.eq(desc.src + span), dst_end.eq(desc.dst + span)]
        m.d.sync += wraps.eq(src_end[p.addr_width:].any() | dst_end[p.addr_width:].any())
        # t + 5: the verdict.
        writing = stage[4]
        bad = desc.valid & (empty | overlap | wraps)
        refused = Signal()
        m.d.comb += [
            self.bad_program.eq(writing & desc.valid & empty),
            self.bad_pitch.eq(writing & desc.valid & ~empty & overlap),
            self.bad_range.eq(writing & desc.valid & ~empty & ~overlap & wraps),
            self.desc_busy.eq(writing & ~bad & busy),
            refused.eq(self.bad_program | self.bad_pitch | self.bad_range | self.desc_busy),
        ]
        with m.If(refused):
            m.d.comb += [self.detail.index.eq(desc.index), self.detail.tile.eq(desc.tile),
                         self.detail.addr.eq(desc.src)]
        return SimpleNamespace(desc=desc, index_read=desc.index, in_use=in_use, stage=stage,
                               checking=stage.any(),
                               checking_next=take | stage[:-1].any(),
                               writing=writing,
                               write=writing & ~refused, refused=refused)

    def _uses(self, m, sweep, chk, events, platform):
        """The use counts (see the class docstring): one table per ``(name, event, index)``
        of ``events``, counting the cycles ``event`` was high for ``index``. Drives
        ``chk.in_use`` (the counts at ``chk.index_read``, read and registered in t + 2 of
        the programming check; it takes ``in_use`` in t + 3). Under
        ``platform == "formal"`` returns ``(index, count)``: the count of uses in flight of
        ``index`` (a signal to drive) after the events of the cycles before this one; else
        None."""
        p = self._p
        width = (p.dma_ready_depth + 1).bit_length()
        counts, formal_counts = [], []
        watch = Signal(p.cmd_width) if platform == "formal" else None
        for name, event, index in events:
            # LUT RAM, read asynchronously: each step of the read-modify-write has a register
            # between the RAM read and the adder (a block RAM's clock-to-out without its
            # output register is most of a cycle: 5.8 ns on the ECP5, where the DMA closed
            # at 76.4 MHz with these tables in DP16KD and the add after the read).
            table = memory.Memory(shape=width, depth=p.dma_descriptors, init=[],
                                  attrs={LUTRAM_ATTR: 1})
            m.submodules[f"{name}_count"] = table
            wr = table.write_port()
            pre = table.read_port(domain="comb")
            check = table.read_port(domain="comb")
            # The event's cycle: read the counter into `read`, and register whether the
            # previous event wrote the same counter (its write, this cycle, is not in the
            # read) with the value it wrote. The cycle after: write `old + 1`, `old` the
            # value written last or the one read. So the RAM read goes into a register with
            # no compare or multiplexer after it.
            pending = Signal()
            pending_index = Signal(p.cmd_width, reset_less=True)
            read = Signal(width, reset_less=True)
            again = Signal(reset_less=True)
            last = Signal(width, reset_less=True)
            old = Signal(width)
            value = Signal(width)
            m.d.comb += [old.eq(Mux(again, last, read)), value.eq(old + 1),
                         pre.addr.eq(index)]
            m.d.sync += [pending.eq(event & ~self.busy), pending_index.eq(index),
                         read.eq(pre.data), again.eq(pending & (pending_index == index)),
                         last.eq(value)]
            with m.If(self.busy):
                m.d.comb += [wr.addr.eq(sweep), wr.data.eq(0), wr.en.eq(1)]
            with m.Else():
                m.d.comb += [wr.addr.eq(pending_index), wr.data.eq(value),
                             wr.en.eq(pending)]
            # The programming check: in t + 2 the table holds the events up to t (the write
            # of t + 1 is t's). Registered, then compared in t + 3.
            count = Signal(width, name=f"{name}_checked", reset_less=True)
            m.d.comb += check.addr.eq(chk.index_read)
            with m.If(chk.stage[1]):
                m.d.sync += count.eq(check.data)
            counts.append(count)
            if watch is not None:
                peek = table.read_port(domain="comb")
                now = Signal(width, name=f"{name}_now")
                m.d.comb += [peek.addr.eq(watch),
                             now.eq(Mux(pending & (pending_index == watch), wr.data,
                                        peek.data))]
                formal_counts.append(now)
        issued, dropped, taken = counts
        m.d.comb += chk.in_use.eq((issued - dropped - taken)[:width] != 0)
        if watch is None:
            return None
        count = Signal(width)
        issued, dropped, taken = formal_counts
        m.d.comb += count.eq(issued - dropped - taken)
        return watch, count
