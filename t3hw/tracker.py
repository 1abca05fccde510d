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

from types import SimpleNamespace

from amaranth import *
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assume, Cover
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import (TrackOp, WriteSource, entry_layout, program_layout, trigger_layout,
                      tracker_errors_layout, tracker_stats_layout, write_layout)
from .params import EngineParams, check_params
from .queue import Queue


__all__ = ["Tracker", "formal_spec"]


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

        if platform == "formal":
            # Formal only (`t3hw generate` elaborates with no platform, so never in rtl/): the
            # internals that formal_spec() checks. `probe` is an extra asynchronous read port.
            self.formal_view = SimpleNamespace(probe=table.read_port(domain="comb"), cur=cur,
                                               queue=queue)
        return m


# --- formal properties (docs/formal.md); never part of the generated Verilog ---------------

def formal_spec(params: EngineParams, *, bug=None):
    """The formal spec top of a :class:`Tracker` with ``params`` (small ones: see
    :data:`t3hw.formal.TRACKER_PARAMS`).

    Every input is free in every cycle; ``program`` is assumed to obey the stream rules (the
    tracker does not need it). The solver picks one table entry ``I`` (``AnyConst``), and the
    spec keeps a *shadow* of it, written from the entry semantics in this module's docstring
    and updated in the order the tracker takes requests (S0). Asserted, in every cycle:

    * **no write is lost or counted twice**: after the reset sweep, entry ``I`` of the table
      equals the shadow as it was two cycles earlier (the pipeline latency), and the entry
      that S1 works on (table or forwarding register) equals it whenever S1 holds a request
      for ``I``. Compared: ``valid``, and while valid ``rearm``, ``tag``, ``threshold``,
      ``count`` and ``cmd``;
    * **one trigger per completion**: a trigger for entry ``I`` enters the trigger queue in
      exactly the cycles in which S1 completes it in the shadow, with the entry's ``cmd`` and
      the completing write's tile; a trigger that the full queue cannot take sets
      ``errors.overflow``; and whenever the trigger queue is empty, the triggers for ``I``
      that left on ``trigger`` plus those lost equal its completions;
    * ``program.ready`` is low in every cycle with a write or during the reset sweep;
    * ``trigger`` obeys the stream rules, and the trigger queue its
      :meth:`~t3hw.queue.Queue.properties` (never above its depth, stalled head unchanged,
      first in first out).

    Covers: entry ``I`` sends two triggers (re-armed), completes on a write right behind
    another request to it (the forwarding path), and loses a trigger to a full queue.

    ``bug="drop_write"`` hides writes to the armed entry ``I`` (the solver picks which) from
    the tracker while the shadow counts them: a tracker that loses writes, which the proof
    must catch.
    """
    from .formal import Spec, drive_inputs, past, stream_rules
    p = check_params(params)
    if bug not in (None, "drop_write"):
        raise ValueError(f"bug must be None or 'drop_write', not {bug!r}")
    iw, elayout = p.index_width, entry_layout(p)

    def same(a, b):
        """Entries equal in every field that matters (all of them while valid)."""
        fields = [a[name] == b[name] for name in elayout.members if name != "valid"]
        return (a.valid == b.valid) & (~a.valid | Cat(fields).all())

    def body(m, platform):
        dut = Tracker(p)
        m.submodules.dut = Fragment.get(dut, platform)
        view = dut.formal_view
        drive_inputs(m, dut)
        stream_rules(m, dut.program, Assume, "program")
        stream_rules(m, dut.trigger, Assert, "trigger")
        view.queue.properties(m)

        seen = Signal()                       # a write, as the shadow sees it
        drop = Signal()                       # bug="drop_write": the tracker misses it
        if bug == "drop_write":
            m.d.comb += [seen.eq(AnySeq(1)), drop.eq(AnySeq(1)),
                         dut.write.valid.eq(seen & ~drop)]
        else:
            m.d.comb += seen.eq(dut.write.valid)

        index = Signal(iw)
        m.d.comb += index.eq(AnyConst(iw))
        w, q = dut.write.payload, dut.program.payload

        def mine(tile):
            return tile[:iw] == index

        def tag_of(tile):
            return tile[iw:]

        # --- the shadow of entry `index`, updated in S0 order ----------------------------------
        sh, nxt = Signal(elayout), Signal(elayout)
        sh_tag = sh.tag if p.tag_width else C(0, 0)
        total = Signal(p.count_width + 1)
        done = Signal()
        take_write = seen & ~dut.busy & mine(w.tile)
        take_prog = dut.program.valid & dut.program.ready & mine(q.tile)
        m.d.comb += [nxt.eq(sh), total.eq(sh.count + w.beats)]
        with m.If(seen):
            with m.If(take_write & sh.valid & (sh_tag == tag_of(w.tile))):
                with m.If(total >= sh.threshold):
                    m.d.comb += [done.eq(1), nxt.count.eq(0), nxt.valid.eq(sh.rearm)]
                with m.Else():
                    m.d.comb += nxt.count.eq(total)
        with m.Elif(take_prog):
            with m.If(q.op == TrackOp.ARM):
                with m.If((q.threshold != 0) & ~sh.valid):
                    m.d.comb += [nxt.valid.eq(1), nxt.rearm.eq(q.rearm),
                                 nxt.threshold.eq(q.threshold), nxt.count.eq(0),
                                 nxt.cmd.eq(q.cmd)]
                    if p.tag_width:
                        m.d.comb += nxt.tag.eq(tag_of(q.tile))
            with m.Elif(sh.valid & (sh_tag == tag_of(q.tile))):
                m.d.comb += nxt.valid.eq(0)
        m.d.sync += sh.eq(nxt)
        # The missed writes count (they hit the armed entry I), and no programming request
        # arrives instead of them.
        with m.If(drop):
            m.d.comb += Assume(take_write & sh.valid & (sh_tag == tag_of(w.tile))
                               & ~dut.program.valid)

        # --- the table and S1 against the shadow ----------------------------------------------
        before  = past(m, sh, name="before")                 # entry I before S1's request
        s1_mine = past(m, take_write | take_prog, name="s1_mine")
        s1_done = past(m, done, name="s1_done")
        s1_tile = past(m, w.tile, name="s1_tile")
        m.d.comb += view.probe.addr.eq(index)
        with m.If(~dut.busy):
            m.d.comb += Assert(same(view.probe.data, before),
                               "tracker: table entry differs from the shadow")
        with m.If(s1_mine):
            m.d.comb += Assert(same(view.cur, before),
                               "tracker: entry in S1 differs from the shadow")

        # --- triggers ---------------------------------------------------------------------
        queue = view.queue
        push_mine = queue.push & mine(queue.data.tile)
        lost = queue.push & ~queue.accept
        m.d.comb += Assert(push_mine == s1_done,
                           "tracker: trigger pushed without a completion, or not pushed")
        with m.If(s1_done):
            m.d.comb += [
                Assert(queue.data.cmd == before.cmd, "tracker: trigger with the wrong cmd"),
                Assert(queue.data.tile == s1_tile, "tracker: trigger with the wrong tile"),
            ]
        with m.If(past(m, lost, name="lost_was")):
            m.d.comb += Assert(dut.errors.overflow, "tracker: lost trigger not reported")
        completed, sent, dropped = (Signal(4, name=n) for n in ("completed", "sent", "dropped"))
        out = dut.trigger
        m.d.sync += [
            completed.eq(completed + s1_done),
            dropped.eq(dropped + (push_mine & ~queue.accept)),
            sent.eq(sent + (out.valid & out.ready & mine(out.payload.tile))),
        ]
        with m.If(queue.level == 0):
            m.d.comb += Assert((sent + dropped)[:4] == completed,
                               "tracker: triggers sent + lost differ from completions")

        m.d.comb += Assert(~(dut.program.ready & (dut.write.valid | dut.busy)),
                           "tracker: programming accepted with a write or while busy")

        m.d.comb += [
            Cover(sent == 2),
            Cover(s1_done & past(m, s1_mine, name="s1_mine_was")),
            Cover(dropped != 0),
        ]
    return Spec(body)
