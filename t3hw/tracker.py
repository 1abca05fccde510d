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
    cycle t+1   S1: register the RAM data; compare the request's index with the two
                    latest table writes (register the two match flags)
    cycle t+2   S2: entry = forwarded ? that write's entry : registered RAM data
                    update it, write it back; register a trigger if it completed
    cycle t+3   S3: push the trigger into the trigger queue
    cycle t+4       trigger.valid (when the trigger queue was empty)

The RAM read is not transparent and its data is registered before use, so a request reads
the table two cycles before it updates it: the entries written in those two cycles (by the
two requests ahead of it, or by the reset sweep) are kept in two forwarding registers, and
the match flags that select them are computed a cycle ahead, from registers. The only
single-cycle loop is then the count update (forwarding mux, subtract or compare, next
entry), and
back-to-back writes to one entry count exactly. The extra cycle buys timing: the block RAM's
clock-to-out reaches a register, not the adder (``docs/synthesis.md``).

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

The table stores the count as ``left = threshold - count`` (the beats still to come), so that
the hardware decides ``beats >= left`` and computes ``left - beats`` side by side, each one
carry chain; a completed entry reloads ``left = threshold``.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assume, Cover
from amaranth.lib import data, memory, stream, wiring
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
        Completed tiles, in completion order. Latency 4 cycles from the completing write.
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

        # Stage registers: S1 holds the request accepted last cycle, S2 the one before.
        # ``valid``: an observed write; ``stale``: ...that arrived during the reset sweep;
        # ``prog``: a programming request.
        def stage(name):
            return SimpleNamespace(
                valid=Signal(name=f"{name}_valid"), stale=Signal(name=f"{name}_stale"),
                prog=Signal(name=f"{name}_prog"),
                write=Signal(write_layout(p), name=f"{name}_write", reset_less=True),
                req=Signal(program_layout(p), name=f"{name}_req", reset_less=True))
        s1, s2 = stage("s1"), stage("s2")

        m.d.sync += [
            s1.valid.eq(self.write.valid),
            s1.stale.eq(self.busy),
            s1.prog.eq(take_prog),
            s1.write.eq(self.write.payload),
            s1.req.eq(self.program.payload),
            s2.valid.eq(s1.valid),
            s2.stale.eq(s1.stale),
            s2.prog.eq(s1.prog),
            s2.write.eq(s1.write),
            s2.req.eq(s1.req),
        ]
        s0_tile = Mux(self.write.valid, self.write.payload.tile, self.program.payload.tile)
        m.d.comb += rd.addr.eq(s0_tile[:p.index_width])

        # --- S1: register the RAM data; decide the forwarding from registers -----------------
        # Every table write (an S2 request's write-back, or the reset sweep) is also kept in
        # ``fwd_last`` (the write at the end of the last cycle) and ``fwd_prev`` (the one
        # before). A request in S1 read the RAM one cycle too early to see the write now
        # leaving S2, and two cycles too early for the one before it: ``hit_last`` and
        # ``hit_prev`` say which of them holds its entry. An S2 request that does not change
        # its entry writes it back unchanged, so "S2 holds a request" (a register) stands for
        # "the table is written" and no flag waits for S2's logic.
        s2_tile = Mux(s1.valid, s1.write.tile, s1.req.tile)
        s1_index = s2_tile[:p.index_width]
        rdata = Signal(elayout, reset_less=True)
        m.d.sync += rdata.eq(rd.data)

        fwd_last_valid = Signal()
        fwd_last_index = Signal(p.index_width, reset_less=True)
        fwd_last = Signal(elayout, reset_less=True)
        fwd_prev = Signal(elayout, reset_less=True)
        hit_last, hit_prev = Signal(name="hit_last"), Signal(name="hit_prev")
        s2_index = Signal(p.index_width)
        writing = self.busy | s2.valid | s2.prog                 # the table is written now
        m.d.sync += [
            hit_last.eq(writing & (wr.addr == s1_index)),
            hit_prev.eq(fwd_last_valid & (fwd_last_index == s1_index)),
        ]

        # --- S2: update the entry, write it back, trigger ------------------------------------
        s2_tile = Mux(s2.valid, s2.write.tile, s2.req.tile)
        m.d.comb += s2_index.eq(s2_tile[:p.index_width])
        s2_tag = s2_tile[p.index_width:]

        cur = Signal(elayout)
        with m.If(hit_last):
            m.d.comb += cur.eq(fwd_last)
        with m.Elif(hit_prev):
            m.d.comb += cur.eq(fwd_prev)
        with m.Else():
            m.d.comb += cur.eq(rdata)
        # With no tag bits (tile_width == log2(entries)) every armed entry matches its tiles.
        cur_tag = cur.tag if p.tag_width else C(0, 0)
        tag_match = cur_tag == s2_tag
        hit = Signal()
        m.d.comb += hit.eq(cur.valid & tag_match & ~s2.stale)

        # An entry keeps the beats still to come (``left``), so the two outcomes of a write
        # are one subtract and one compare side by side, not an add followed by a compare.
        beats = s2.write.beats
        done = Signal()
        new_left = Signal(p.count_width)             # the beats still to come after it
        m.d.comb += [done.eq(cur.left <= beats), new_left.eq(cur.left - beats)]

        nxt = Signal(elayout)
        we  = Signal()
        m.d.comb += nxt.eq(cur)
        push = Signal()
        set_err = Signal(tracker_errors_layout(p))

        m.d.comb += wr.addr.eq(s2_index)
        with m.If(s2.valid):
            with m.If(~hit):
                m.d.comb += set_err.unprogrammed.eq(1)
            with m.Elif(done):
                m.d.comb += [
                    we.eq(1),
                    nxt.left.eq(cur.threshold),
                    nxt.valid.eq(cur.rearm),
                    push.eq(1),
                    set_err.overcount.eq(cur.left < beats),
                ]
            with m.Else():
                m.d.comb += [we.eq(1), nxt.left.eq(new_left)]
        with m.Elif(s2.prog):
            with m.If(s2.req.op == TrackOp.ARM):
                with m.If(s2.req.threshold == 0):
                    m.d.comb += set_err.bad_threshold.eq(1)
                with m.Elif(cur.valid):
                    m.d.comb += set_err.reprogram.eq(1)
                with m.Else():
                    m.d.comb += [
                        we.eq(1),
                        nxt.valid.eq(1),
                        nxt.rearm.eq(s2.req.rearm),
                        nxt.threshold.eq(s2.req.threshold),
                        nxt.left.eq(s2.req.threshold),
                        nxt.cmd.eq(s2.req.cmd),
                    ]
                    if p.tag_width:
                        m.d.comb += nxt.tag.eq(s2_tag)
            with m.Else():                       # DISARM
                with m.If(cur.valid & tag_match):
                    m.d.comb += [we.eq(1), nxt.valid.eq(0)]
        # The reset sweep owns the write port. No request can update the table meanwhile:
        # programming is not accepted, and a write seen during the sweep is stale (no hit).
        with m.If(self.busy):
            m.d.comb += [wr.addr.eq(sweep), we.eq(1), nxt.eq(0)]

        m.d.comb += [wr.en.eq(Mux(we, -1, 0)), wr.data.eq(nxt)]
        m.d.sync += [
            fwd_last_valid.eq(writing), fwd_last_index.eq(wr.addr), fwd_last.eq(nxt),
            fwd_prev.eq(fwd_last),
        ]

        # Trigger queue: the trigger leaves with the cmd and the full tile id. It is
        # registered (S3) before the push, so the queue's accept logic and the counters are
        # not on the count-update loop.
        trig = Signal(trigger_layout(p), reset_less=True)
        s3_push = Signal()
        m.d.sync += [
            trig.cmd.eq(cur.cmd),
            trig.tile.eq(s2_tile),
            s3_push.eq(push),
        ]
        m.d.comb += [
            queue.data.eq(trig),
            queue.push.eq(s3_push),
        ]
        lost = s3_push & ~queue.accept
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
        with m.If(s3_push & queue.accept):
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
      that S2 works on (table or forwarding register) equals it whenever S2 holds a request
      for ``I``. Compared: ``valid``, and while valid ``rearm``, ``tag``, ``threshold``,
      ``count`` and ``cmd``;
    * **one trigger per completion**: a trigger for entry ``I`` enters the trigger queue in
      exactly the cycles after those in which S2 completes it in the shadow (S3), with the
      entry's ``cmd`` and
      the completing write's tile; a trigger that the full queue cannot take sets
      ``errors.overflow``; and whenever the trigger queue is empty, the triggers for ``I``
      that left on ``trigger`` plus those lost equal its completions;
    * ``program.ready`` is low in every cycle with a write or during the reset sweep;
    * ``trigger`` obeys the stream rules, and the trigger queue its
      :meth:`~t3hw.queue.Queue.properties` (never above its depth, stalled head unchanged,
      first in first out).

    Covers: entry ``I`` sends two triggers (re-armed), completes on a write right behind
    another request to it and on one two cycles behind (the two forwarding paths), and
    loses a trigger to a full queue.

    ``bug="drop_write"`` hides writes to the armed entry ``I`` (the solver picks which) from
    the tracker while the shadow counts them: a tracker that loses writes, which the proof
    must catch.
    """
    from .formal import Spec, drive_inputs, past, stream_rules
    p = check_params(params)
    if bug not in (None, "drop_write"):
        raise ValueError(f"bug must be None or 'drop_write', not {bug!r}")
    iw, elayout = p.index_width, entry_layout(p)
    # The shadow counts beats up, as the entry semantics say; the table keeps the beats still
    # to come (``left``), which must always be ``threshold - count``.
    shadow_layout = data.StructLayout({**{k: v for k, v in elayout.members.items()
                                          if k != "left"}, "count": p.count_width})

    def same(a, b):
        """Table entry ``a`` equals shadow ``b`` in every field that matters (all of them
        while valid)."""
        fields = [a[name] == b[name] for name in elayout.members
                  if name not in ("valid", "left")]
        fields.append(a.left == (b.threshold - b.count)[:p.count_width])
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
        sh, nxt = Signal(shadow_layout), Signal(shadow_layout)
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

        # --- the table and S2 against the shadow ----------------------------------------------
        # A request taken in cycle t is in S2 in t + 2: the shadow as it was before it is two
        # registers back, and so is every fact about it.
        def past2(value, name):
            return past(m, past(m, value, name=f"{name}_1"), name=name)
        before  = past2(sh, "before")                        # entry I before S2's request
        s2_mine = past2(take_write | take_prog, "s2_mine")
        s2_done = past2(done, "s2_done")
        s2_tile = past2(w.tile, "s2_tile")
        m.d.comb += view.probe.addr.eq(index)
        with m.If(~dut.busy):
            m.d.comb += Assert(same(view.probe.data, before),
                               "tracker: table entry differs from the shadow")
        with m.If(s2_mine):
            m.d.comb += Assert(same(view.cur, before),
                               "tracker: entry in S2 differs from the shadow")

        # --- triggers ---------------------------------------------------------------------
        queue = view.queue
        push_mine = queue.push & mine(queue.data.tile)
        lost = queue.push & ~queue.accept
        # S3 pushes what S2 completed a cycle before.
        s3_done = past(m, s2_done, name="s3_done")
        s3_tile = past(m, s2_tile, name="s3_tile")
        s3_cmd  = past(m, before.cmd, name="s3_cmd")
        m.d.comb += Assert(push_mine == s3_done,
                           "tracker: trigger pushed without a completion, or not pushed")
        with m.If(s3_done):
            m.d.comb += [
                Assert(queue.data.cmd == s3_cmd, "tracker: trigger with the wrong cmd"),
                Assert(queue.data.tile == s3_tile, "tracker: trigger with the wrong tile"),
            ]
        with m.If(past(m, lost, name="lost_was")):
            m.d.comb += Assert(dut.errors.overflow, "tracker: lost trigger not reported")
        completed, sent, dropped = (Signal(4, name=n) for n in ("completed", "sent", "dropped"))
        out = dut.trigger
        m.d.sync += [
            completed.eq(completed + s3_done),
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
            Cover(s2_done & past(m, s2_mine, name="s2_mine_was")),
            Cover(s2_done & past2(s2_mine, "s2_mine_was2")
                  & ~past(m, s2_mine, name="s2_mine_was1")),
            Cover(dropped != 0),
        ]
    return Spec(body)
