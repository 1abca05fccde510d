# SPDX-License-Identifier: Apache-2.0
"""Formal properties of the tracker (:mod:`t3hw.hw.tracker`; ``docs/formal.md``). Never part
of the generated Verilog."""

from amaranth import *
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assume, Cover
from amaranth.lib import data

from t3hw.spec.layouts import TrackOp, entry_layout
from t3hw.spec.params import EngineParams, check_params
from .formal import Spec, drive_inputs, past, stream_rules
from .tracker import Tracker


__all__ = ["formal_spec"]


def formal_spec(params: EngineParams, *, bug=None):
    """The formal spec top of a :class:`~t3hw.hw.tracker.Tracker` with ``params`` (small ones:
    see :data:`t3hw.tools.formal.TRACKER_PARAMS`).

    Every input is free in every cycle, ``trigger.ready`` included (the DMA may hold the
    trigger output for ever); ``program`` is assumed to obey the stream rules. The solver
    picks one table entry ``I`` (``AnyConst``), and the spec keeps a *shadow* of it, written
    from the entry semantics in the tracker's docstring and updated in the order the tracker
    takes requests (S0): writes, programming, and acks (a trigger of ``I`` taken earlier).
    Asserted, in every cycle:

    * **no write is lost or counted twice**: after the reset sweep, entry ``I`` of the table
      equals the shadow as it was three cycles earlier (the pipeline latency, the write
      through ``fwd_last`` included), and the entry that S3 works on equals it whenever S3
      holds a request for ``I``. Compared: ``valid`` and ``pending`` always; while valid
      ``rearm``, ``tag``, ``threshold``, ``count`` and ``cmd``; while firings are pending
      ``tag`` and ``cmd``;
    * **no completion is lost or sent twice, whatever the back-pressure**: the trigger queue
      and the ack queue accept every push (they can never overflow), and entry ``I`` has
      exactly one *token* (a trigger in the trigger queue, an ack in the ack queue or in
      S1-S3, or a push under way) while its shadow has firings pending, and none otherwise.
      Each trigger taken is one firing, and comes back as the ack that takes one firing off;
    * a token for ``I`` is pushed exactly when the shadow says (a first pending firing, or an
      ack that leaves some), with the entry's ``cmd`` and tile;
    * ``errors.overflow`` is set exactly for a completion of a saturated re-arm entry;
    * ``desc_held`` is high for the ``cmd`` of entry ``I`` whenever ``I`` has firings pending
      (as of the requests S3 has finished), so the DMA refuses to rewrite that descriptor;
    * ``program.ready`` is low in every cycle with a write or during the reset sweep;
    * ``trigger`` obeys the stream rules, and the trigger queue its
      :meth:`~t3hw.hw.queue.Queue.properties` (the ack queue's order does not matter: an
      ack names its entry; that it never overflows is asserted above).

    Covers: entry ``I`` sends two triggers (re-armed), completes on a write right behind
    another request to it, on one two cycles behind and on one three cycles behind (the
    forwarding paths), the trigger queue fills up, and an ARM of ``I`` is refused because
    its trigger is still pending.

    ``bug="drop_write"`` hides writes to the armed entry ``I`` (the solver picks which) from
    the tracker while the shadow counts them: a tracker that loses writes, which the proof
    must catch.
    """
    p = check_params(params)
    if bug not in (None, "drop_write"):
        raise ValueError(f"bug must be None or 'drop_write', not {bug!r}")
    iw, elayout = p.index_width, entry_layout(p)
    pmax = (1 << p.pending_width) - 1
    # The shadow counts beats up, as the entry semantics say; the table keeps the beats still
    # to come (``left``), which must always be ``threshold - count``.
    shadow_layout = data.StructLayout({**{k: v for k, v in elayout.members.items()
                                          if k != "left"}, "count": p.count_width})

    def same(a, b):
        """Table entry ``a`` equals shadow ``b`` in every field that matters."""
        fields = [a[name] == b[name] for name in elayout.members
                  if name not in ("valid", "left", "pending")]
        fields.append(a.left == (b.threshold - b.count)[:p.count_width])
        kept = [a.cmd == b.cmd] + ([a.tag == b.tag] if p.tag_width else [])
        return ((a.valid == b.valid) & (a.pending == b.pending)
                & (~a.valid | Cat(fields).all()) & ((b.pending == 0) | Cat(kept).all()))

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
        w, q, acks = dut.write.payload, dut.program.payload, view.acks

        def mine(tile):
            return tile[:iw] == index

        def tag_of(tile):
            return tile[iw:]

        # --- the shadow of entry `index`, updated in S0 order ----------------------------------
        sh, nxt = Signal(shadow_layout), Signal(shadow_layout)
        sh_tag = sh.tag if p.tag_width else C(0, 0)
        total = Signal(p.count_width + 1)
        done, lost, tok_push = Signal(), Signal(), Signal()
        take_write = seen & ~dut.busy & mine(w.tile)
        take_prog = dut.program.valid & dut.program.ready & mine(q.tile)
        take_ack = acks.o.valid & acks.o.ready & mine(acks.o.payload)
        m.d.comb += [nxt.eq(sh), total.eq(sh.count + w.beats)]
        with m.If(seen):
            with m.If(take_write & sh.valid & (sh_tag == tag_of(w.tile))):
                with m.If(total >= sh.threshold):
                    m.d.comb += [done.eq(1), nxt.count.eq(0), nxt.valid.eq(sh.rearm)]
                    with m.If(sh.pending == pmax):
                        m.d.comb += lost.eq(1)
                    with m.Else():
                        m.d.comb += [nxt.pending.eq(sh.pending + 1),
                                     tok_push.eq(sh.pending == 0)]
                with m.Else():
                    m.d.comb += nxt.count.eq(total)
        with m.Elif(take_prog):
            with m.If(q.op == TrackOp.ARM):
                with m.If((q.threshold != 0) & ~sh.valid & (sh.pending == 0)):
                    m.d.comb += [nxt.valid.eq(1), nxt.rearm.eq(q.rearm),
                                 nxt.threshold.eq(q.threshold), nxt.count.eq(0),
                                 nxt.cmd.eq(q.cmd)]
                    if p.tag_width:
                        m.d.comb += nxt.tag.eq(tag_of(q.tile))
            with m.Elif((q.op == TrackOp.DISARM) & sh.valid & (sh_tag == tag_of(q.tile))):
                m.d.comb += nxt.valid.eq(0)
        with m.Elif(take_ack):
            m.d.comb += [nxt.pending.eq(sh.pending - 1), tok_push.eq(sh.pending > 1)]
        m.d.sync += sh.eq(nxt)
        # The missed writes count (they hit the armed entry I), and no programming request
        # arrives instead of them.
        with m.If(drop):
            m.d.comb += Assume(take_write & sh.valid & (sh_tag == tag_of(w.tile))
                               & ~dut.program.valid)
        # An ack is taken only for an entry with a firing pending.
        m.d.comb += Assert(~take_ack | (sh.pending != 0), "tracker: ack without a firing")

        # --- the table and S3 against the shadow ----------------------------------------------
        def past3(value, name):
            return past(m, past(m, past(m, value, name=f"{name}_2"), name=f"{name}_1"),
                        name=name)
        before   = past3(sh, "before")                       # entry I before S3's request
        s3_mine  = past3(take_write | take_prog | take_ack, "s3_mine")
        s3_done  = past3(done, "s3_done")
        s3_lost  = past3(lost, "s3_lost")
        s3_push  = past3(tok_push, "s3_push")
        s3_tile  = past3(Mux(take_ack, acks.o.payload, w.tile), "s3_tile")
        m.d.comb += view.probe.addr.eq(index)
        with m.If(~dut.busy & ~past(m, dut.busy, name="busy_was")):
            m.d.comb += Assert(same(view.probe.data, past(m, before, name="table_shadow")),
                               "tracker: table entry differs from the shadow")
        with m.If(s3_mine):
            m.d.comb += Assert(same(view.cur, before),
                               "tracker: entry in S3 differs from the shadow")

        # --- triggers and tokens ----------------------------------------------------------
        queue = view.queue
        push_mine = queue.push & mine(queue.data.tile)
        s4_push = past(m, s3_push, name="s4_push")
        s4_tile = past(m, s3_tile, name="s4_tile")
        s4_cmd  = past(m, before.cmd, name="s4_cmd")
        m.d.comb += [
            Assert(~queue.push | queue.accept, "tracker: the trigger queue refused a token"),
            Assert(~acks.push | acks.accept, "tracker: the ack queue refused an ack"),
            Assert(push_mine == s4_push, "tracker: token pushed without cause, or not pushed"),
        ]
        with m.If(s4_push):
            m.d.comb += [Assert(queue.data.cmd == s4_cmd, "tracker: trigger with the wrong cmd"),
                         Assert(queue.data.tile == s4_tile,
                                "tracker: trigger with the wrong tile")]
        # (the error events are registered before the sticky bits: S3 + 2)
        with m.If(past(m, past(m, s3_lost, name="s4_lost"), name="s5_lost")):
            m.d.comb += Assert(dut.errors.overflow, "tracker: lost firing not reported")
        # Tokens of I in flight: in the trigger queue, in the ack queue, an ack in S1-S3
        # (an ack in S3 only if it pushes again), a push in S3 or S4.
        width = 4
        in_q, in_a = Signal(width), Signal(width)
        out = dut.trigger
        m.d.sync += [
            in_q.eq(in_q + push_mine - (out.valid & out.ready & mine(out.payload.tile))),
            in_a.eq(in_a + (acks.push & mine(acks.data)) - take_ack),
        ]
        s1, s2, s3 = view.s1, view.s2, view.s3
        tokens = (in_q + in_a + (view.s4_push & mine(queue.data.tile))
                  + (view.push & mine(s3.tile)) + (s2.ack & mine(s2.tile))
                  + (s1.ack & mine(s1.tile)))[:width]
        shadow2 = past(m, past(m, sh, name="sh_1"), name="sh_2")
        with m.If(~dut.busy):
            m.d.comb += Assert(tokens == (shadow2.pending != 0),
                               "tracker: entry I has no token while firings are pending, "
                               "or more than one")

        # A firing of I pending under cmd c holds descriptor c (``desc_held`` answers the
        # query of the cycle before, against every request S3 has finished, that is the
        # shadow as of ``before``, a cycle later).
        asked = past(m, dut.desc_query, name="query_1")
        named = past(m, ~dut.busy & (before.pending != 0) & (before.cmd == asked),
                     name="held_named")
        with m.If(named):
            m.d.comb += Assert(dut.desc_held,
                               "tracker: a descriptor named by a pending firing is not held")
        m.d.comb += Assert(~(dut.program.ready & (dut.write.valid | dut.busy)),
                           "tracker: programming accepted with a write or while busy")

        sent = Signal(4)
        m.d.sync += sent.eq(sent + (out.valid & out.ready & mine(out.payload.tile)))
        s3_arm_refused = past3(take_prog & (q.op == TrackOp.ARM) & (q.threshold != 0)
                               & ~sh.valid & (sh.pending != 0), "s3_arm_refused")
        m.d.comb += [
            Cover(sent == 2),
            Cover(s3_done & past(m, s3_mine, name="s3_mine_was")),
            Cover(s3_done & past(m, past(m, s3_mine, name="s3_mine_was2_1"),
                                 name="s3_mine_was2")
                  & ~past(m, s3_mine, name="s3_mine_was1")),
            Cover(s3_done & past3(s3_mine, "s3_mine_was3")
                  & ~past(m, s3_mine, name="s3_mine_was1b")
                  & ~past(m, past(m, s3_mine, name="s3_mine_was2b_1"), name="s3_mine_was2b")),
            Cover(queue.level == p.tracker_entries),
            Cover(s3_arm_refused),
        ]
    return Spec(body)
