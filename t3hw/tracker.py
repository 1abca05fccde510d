# SPDX-License-Identifier: Apache-2.0
"""The tracker: counts the granted writes to each output tile and triggers its DMA command.

Lookup scheme: direct-mapped
----------------------------
Entry ``tile % tracker_entries`` holds the state of tile ``tile``; the tile id bits above the
index are kept in the entry as a tag and compared on every lookup. This is the scheme that

* maps the table onto one simple-dual-port block RAM (one read port for the lookup, one write
  port for the update), with no content-addressable search and no hash logic;
* keeps the lookup to one RAM read, so the only single-cycle loop is the count update;
* makes aliasing detectable instead of silent: a write whose tag does not match the armed
  entry is reported as ``unprogrammed``.

The price is that tiles armed at the same time must differ modulo ``tracker_entries``. The
tiles of one T3 collective are consecutive workgroup ids of one GEMM, so software (the
driver) numbers them consecutively and arms at most ``tracker_entries`` at once. A fully
associative table would lift that rule at the cost of a CAM (flip-flops and a comparator per
entry, no block RAM); a hashed table would trade it for a collision rule that software cannot
reason about.

Pipeline
--------
::

    cycle t     S0: select the request (observed write, else programming), read entry[index]
    cycle t+1   S1: entry = forwarded ? last written entry : RAM data
                    update it, write it back, push a trigger if it completed
    cycle t+2       trigger.valid (when the trigger queue was empty)

The RAM read is not transparent; the only read-after-write hazard (a request whose entry was
written at the end of the cycle in which it was read) is resolved by a one-entry forwarding
register, so back-to-back writes to one entry count exactly.

* **Throughput**: one observed write per cycle, every cycle. ``write`` has no ready signal.
* **Programming** is accepted only in cycles with no observed write (``program.ready`` is low
  while ``write.valid`` is high), so it never delays an observation.
* **Back-pressure** on ``trigger`` is absorbed by a ``trigger_depth`` queue
  (:class:`t3hw.queue.Queue`), which passes one trigger per cycle while ``trigger.ready`` is
  high, at any depth. A trigger that finds it full (and not being read) is lost: the ``overflow`` error bit is set and ``dropped`` counts it. With
  one-shot entries at most ``tracker_entries`` triggers can be outstanding, so a queue that
  deep can never overflow.
* **Reset**: block RAM has no reset, so after ``rst`` the tracker spends ``tracker_entries``
  cycles clearing the table, with ``busy`` high. Programming waits; a write observed in that
  time is counted as ``unprogrammed``.

Entry semantics
---------------
An armed entry has ``count < threshold``. A write of ``beats`` to it makes
``new = count + beats``. If ``new >= threshold`` the entry completes: it emits one trigger
``(cmd, tile)`` and is freed (one-shot) or restarts from 0 (re-arm); ``new > threshold`` also
sets ``overcount``. Otherwise the count becomes ``new``.
"""

from amaranth import *
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import (TrackOp, WriteSource, entry_layout, program_layout, trigger_layout,
                      tracker_errors_layout, tracker_stats_layout, write_layout)
from .params import EngineParams, check_params
from .queue import Queue


__all__ = ["Tracker"]


class Tracker(wiring.Component):
    """Tracker table and trigger logic.

    Parameters
    ----------
    params : EngineParams
        Uses ``tracker_entries``, ``tile_width``, ``count_width``, ``beats_width``,
        ``cmd_width``, ``trigger_depth`` and ``counter_width``.

    Members
    -------
    write : In(stream.Signature(write_layout, always_ready=True))
        Granted memory writes to count, at most one per cycle. Never stalled.
    program : In(stream.Signature(program_layout))
        Arm / disarm requests. Ready only in cycles with no ``write`` and not ``busy``.
    trigger : Out(stream.Signature(trigger_layout))
        Completed tiles, in completion order. Latency 2 cycles from the completing write.
    errors : Out(tracker_errors_layout)
        Sticky error bits; each stays set until the same bit of ``clear`` is pulsed.
    clear : In(tracker_errors_layout)
        Write-one-to-clear strobe for ``errors``.
    stats : Out(tracker_stats_layout)
        Wrapping statistics counters.
    busy : Out(1)
        High while the table is being cleared after reset.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "write":   In(stream.Signature(write_layout(params), always_ready=True)),
            "program": In(stream.Signature(program_layout(params))),
            "trigger": Out(stream.Signature(trigger_layout(params))),
            "errors":  Out(tracker_errors_layout(params)),
            "clear":   In(tracker_errors_layout(params)),
            "stats":   Out(tracker_stats_layout(params)),
            "busy":    Out(1, init=1),
        })

    @property
    def params(self):
        return self._p

    def elaborate(self, platform):
        p = self._p
        m = Module()
        elayout = entry_layout(p)

        m.submodules.entries = table = memory.Memory(shape=elayout, depth=p.tracker_entries,
                                                   init=[])
        rd = table.read_port(domain="sync")
        wr = table.write_port()

        m.submodules.queue = queue = Queue(trigger_layout(p), depth=p.trigger_depth)
        wiring.connect(m, queue.o, wiring.flipped(self.trigger))

        # Reset sweep: clear every entry, one per cycle.
        sweep = Signal(range(p.tracker_entries))
        with m.If(self.busy):
            m.d.sync += sweep.eq(sweep + 1)
            with m.If(sweep == p.tracker_entries - 1):
                m.d.sync += self.busy.eq(0)

        # --- S0: select the request and read its entry -------------------------------------
        m.d.comb += self.program.ready.eq(~self.write.valid & ~self.busy)
        take_prog = self.program.valid & self.program.ready

        s1_valid = Signal()                          # an observed write is in S1
        s1_stale = Signal()                          # ...that arrived during the reset sweep
        s1_prog  = Signal()                          # a programming request is in S1
        s1_write = Signal(write_layout(p),   reset_less=True)
        s1_req   = Signal(program_layout(p), reset_less=True)

        m.d.sync += [
            s1_valid.eq(self.write.valid),
            s1_stale.eq(self.busy),
            s1_prog.eq(take_prog),
            s1_write.eq(self.write.payload),
            s1_req.eq(self.program.payload),
        ]
        s0_tile = Mux(self.write.valid, self.write.payload.tile, self.program.payload.tile)
        m.d.comb += rd.addr.eq(s0_tile[:p.index_width])

        # --- S1: resolve the hazard, update, write back, trigger -----------------------------
        s1_tile  = Mux(s1_valid, s1_write.tile, s1_req.tile)
        s1_index = s1_tile[:p.index_width]
        s1_tag   = s1_tile[p.index_width:]

        fwd_valid = Signal()
        fwd_index = Signal(p.index_width, reset_less=True)
        fwd_entry = Signal(elayout, reset_less=True)

        cur = Signal(elayout)
        m.d.comb += cur.eq(Mux(fwd_valid & (fwd_index == s1_index), fwd_entry, rd.data))
        # With no tag bits (tile_width == log2(entries)) every armed entry matches its tiles.
        cur_tag = cur.tag if p.tag_width else C(0, 0)
        tag_match = cur_tag == s1_tag
        hit = Signal()
        m.d.comb += hit.eq(cur.valid & tag_match & ~s1_stale)

        new_count = Signal(p.count_width + 1)
        m.d.comb += new_count.eq(cur.count + s1_write.beats)
        done = Signal()
        m.d.comb += done.eq(new_count >= cur.threshold)

        nxt = Signal(elayout)
        we  = Signal()
        m.d.comb += nxt.eq(cur)
        push = Signal()
        set_err = Signal(tracker_errors_layout(p))

        m.d.comb += wr.addr.eq(s1_index)
        with m.If(s1_valid):
            with m.If(~hit):
                m.d.comb += set_err.unprogrammed.eq(1)
            with m.Elif(done):
                m.d.comb += [
                    we.eq(1),
                    nxt.count.eq(0),
                    nxt.valid.eq(cur.rearm),
                    push.eq(1),
                    set_err.overcount.eq(new_count > cur.threshold),
                ]
            with m.Else():
                m.d.comb += [we.eq(1), nxt.count.eq(new_count)]
        with m.Elif(s1_prog):
            with m.If(s1_req.op == TrackOp.ARM):
                with m.If(s1_req.threshold == 0):
                    m.d.comb += set_err.bad_threshold.eq(1)
                with m.Elif(cur.valid):
                    m.d.comb += set_err.reprogram.eq(1)
                with m.Else():
                    m.d.comb += [
                        we.eq(1),
                        nxt.valid.eq(1),
                        nxt.rearm.eq(s1_req.rearm),
                        nxt.threshold.eq(s1_req.threshold),
                        nxt.count.eq(0),
                        nxt.cmd.eq(s1_req.cmd),
                    ]
                    if p.tag_width:
                        m.d.comb += nxt.tag.eq(s1_tag)
            with m.Else():                       # DISARM
                with m.If(cur.valid & tag_match):
                    m.d.comb += [we.eq(1), nxt.valid.eq(0)]
        # The reset sweep owns the write port. No request can update the table meanwhile:
        # programming is not accepted, and a write seen during the sweep is stale (no hit).
        with m.If(self.busy):
            m.d.comb += [wr.addr.eq(sweep), we.eq(1), nxt.eq(0)]

        m.d.comb += [wr.en.eq(Mux(we, -1, 0)), wr.data.eq(nxt)]
        m.d.sync += [fwd_valid.eq(we), fwd_index.eq(wr.addr), fwd_entry.eq(nxt)]

        # Trigger queue: the trigger leaves with the cmd and the full tile id.
        trig = Signal(trigger_layout(p))
        m.d.comb += [
            trig.cmd.eq(cur.cmd),
            trig.tile.eq(s1_tile),
            queue.data.eq(trig),
            queue.push.eq(push),
        ]
        lost = push & ~queue.accept
        m.d.comb += set_err.overflow.eq(lost)

        # Sticky errors: a bit set in the same cycle as its clear stays set.
        m.d.sync += self.errors.eq((self.errors.as_value() & ~self.clear.as_value())
                                   | set_err.as_value())

        # Statistics.
        st = self.stats
        with m.If(self.write.valid):
            with m.Switch(self.write.payload.source):
                with m.Case(WriteSource.COMPUTE):
                    m.d.sync += st.writes_compute.eq(st.writes_compute + 1)
                with m.Case(WriteSource.DMA):
                    m.d.sync += st.writes_dma.eq(st.writes_dma + 1)
                with m.Case(WriteSource.REMOTE):
                    m.d.sync += st.writes_remote.eq(st.writes_remote + 1)
        with m.If(set_err.unprogrammed):
            m.d.sync += st.unprogrammed.eq(st.unprogrammed + 1)
        with m.If(push & queue.accept):
            m.d.sync += st.triggers.eq(st.triggers + 1)
        with m.If(lost):
            m.d.sync += st.dropped.eq(st.dropped + 1)

        return m
