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
    cycle t+1   S1: the RAM's read (its data lands in the RAM's output register); compare
                    the request's index with the three latest entries written (registered)
    cycle t+2   S2: base = forwarded ? that entry : RAM data; register it, and the request's
                    flags and operands, for S3
    cycle t+3   S3: entry = S3 wrote it last cycle ? fwd_last : base; update it, write it
                    to fwd_last; register a trigger if it completed
    cycle t+4   S4: fwd_last goes into the table; push the trigger into the trigger queue
    cycle t+5       trigger.valid (when the trigger queue was empty)

A request reads the table three cycles before it updates it, and an entry reaches the table
a cycle after S3 computes it (from the register ``fwd_last``, so that the count-update loop
ends next to its own logic, not at the block RAM). The entries S3 wrote in the four cycles
in between are forwarded: the last from ``fwd_last`` straight into S3, the three before from
``fwd_last``, ``fwd_prev`` and ``fwd_old`` into S2, with the select flags computed a cycle
ahead, from registers. S2 also precomputes everything S3 needs that the loop does not
change (the request's kind, the tag compare, the subtrahends, the fields only an ARM
writes), so the only single-cycle loop is the count update of one entry (``valid`` and
``left``: a 3:1 operand mux, a carry chain, a 2:1 select), and back-to-back writes to one
entry count exactly. The block RAM's clock-to-out reaches a register, not the adder
(``docs/synthesis.md``).

* **Throughput**: one observed write per cycle, every cycle. ``write`` has no ready signal.
* **Programming** is accepted only in cycles with no observed write (``program.ready`` is low
  while ``write.valid`` is high), so it never delays an observation.
* **Back-pressure** on ``trigger`` is absorbed by a ``trigger_depth`` queue
  (:class:`t3hw.hw.queue.Queue`), which passes one trigger per cycle while ``trigger.ready`` is
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

from t3hw.spec.layouts import (TrackOp, WriteSource, entry_layout, program_layout, rd_collision_attrs,
                      tracker_errors_layout, tracker_stats_layout, trigger_layout,
                      write_layout)
from t3hw.spec.params import EngineParams, check_params
from .queue import Queue
from .formal import Spec, drive_inputs, past, stream_rules
from .status import count, sticky_errors


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
        Completed tiles, in completion order. Latency 5 cycles from the completing write.
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
        # One helper per stage of the pipeline in the module docstring, called in the order
        # their statements enter the module: the table and the trigger queue, the reset sweep,
        # S0 and the stage registers, the forwarding registers (declared before the stages
        # that read them), S1 and S2 (the lookup), S3, S4, the sticky errors, the statistics.
        m = Module()
        table, rd, wr, queue = self._table(m)
        sweep = self._reset_sweep(m)
        s1, s2, s3 = self._s0(m, rd)
        fw = self._forwarding(s3)
        ops = self._lookup(m, rd, sweep, s1, s2, fw)
        out = self._s3(m, wr, sweep, s3, fw, ops)
        s4_push, lost = self._s4(m, queue, s3, ops.ent, out.push, out.set_err)
        sticky_errors(m, self.errors, self.clear, out.set_err)
        self._stats(m, queue, out.set_err, s4_push, lost)
        if platform == "formal":
            # Formal only (`t3hw generate` elaborates with no platform, so never in rtl/): the
            # internals that formal_spec() checks. `probe` is an extra asynchronous read port.
            self.formal_view = SimpleNamespace(probe=table.read_port(domain="comb"),
                                               cur=out.cur, queue=queue)
        return m

    def _tag_of(self, entry):
        """The tag of table entry ``entry`` (a 0-bit constant when tiles have no tag bits)."""
        return entry.tag if self._p.tag_width else C(0, 0)

    def _table(self, m):
        """The entry table, its ports ``rd`` and ``wr``, and the trigger queue. A read that
        collides with a write to the same entry is never used: S2 forwards that write
        (``fwd_old``). The attribute says so to the synthesis flow
        (``t3hw/tools/synth_scripts/ecp5.ys``), which then needs no read-before-write bypass
        after the RAM."""
        p = self._p
        m.submodules.entries = table = memory.Memory(
            shape=entry_layout(p), depth=p.tracker_entries, init=[],
            attrs=rd_collision_attrs("forwarded"))
        rd = table.read_port(domain="sync")
        wr = table.write_port()
        m.submodules.queue = queue = Queue(trigger_layout(p), depth=p.trigger_depth)
        wiring.connect(m, queue.o, wiring.flipped(self.trigger))
        return table, rd, wr, queue

    def _reset_sweep(self, m):
        """The reset sweep: clear every entry, one per cycle, then end ``busy``. ``sweep + 1``
        (``sweep1``) and "the last entry" (``last``) are registers of their own, so S1's
        look-ahead (which entry S3 writes next) starts at a register, not at an adder."""
        n = self._p.tracker_entries
        sweep = Signal(range(n))
        sweep1 = Signal(range(n + 1), init=1)              # sweep + 1
        sweep_last = Signal(init=n == 1)                   # sweep == n - 1
        with m.If(self.busy):
            m.d.sync += [sweep.eq(sweep1), sweep1.eq(sweep1 + 1),
                         sweep_last.eq(sweep1 == n - 1)]
            with m.If(sweep_last):
                m.d.sync += self.busy.eq(0)
        return SimpleNamespace(sweep=sweep, sweep1=sweep1, last=sweep_last)

    def _s0(self, m, rd):
        """S0: select the request (an observed write, else programming) and read its entry;
        the stage registers of S1, S2 and S3."""
        p = self._p
        m.d.comb += self.program.ready.eq(~self.write.valid & ~self.busy)
        take_prog = self.program.valid & self.program.ready
        s0_tile = Mux(self.write.valid, self.write.payload.tile, self.program.payload.tile)
        m.d.comb += rd.addr.eq(s0_tile[:p.index_width])
        # Stage registers: S1 holds the request accepted last cycle, S2 and S3 the ones
        # before. ``valid``: an observed write; ``stale``: ...that arrived during the reset
        # sweep; ``prog``: a programming request; ``tile``: the tile of either.
        def stage(name):
            return SimpleNamespace(
                valid=Signal(name=f"{name}_valid"), stale=Signal(name=f"{name}_stale"),
                prog=Signal(name=f"{name}_prog"),
                tile=Signal(p.tile_width, name=f"{name}_tile", reset_less=True),
                write=Signal(write_layout(p), name=f"{name}_write", reset_less=True),
                req=Signal(program_layout(p), name=f"{name}_req", reset_less=True))
        s1, s2, s3 = stage("s1"), stage("s2"), stage("s3")
        m.d.sync += [s1.valid.eq(self.write.valid), s1.stale.eq(self.busy),
                     s1.prog.eq(take_prog), s1.write.eq(self.write.payload),
                     s1.req.eq(self.program.payload), s1.tile.eq(s0_tile)]
        for src, dst in ((s1, s2), (s2, s3)):
            m.d.sync += [dst.valid.eq(src.valid), dst.stale.eq(src.stale),
                         dst.prog.eq(src.prog), dst.write.eq(src.write), dst.req.eq(src.req),
                         dst.tile.eq(src.tile)]
        return s1, s2, s3

    def _forwarding(self, s3):
        """The forwarding registers ``fwd_last``, ``fwd_prev``, ``fwd_old`` (``regs``, each
        an entry with its write enable and index) and the entry S3 writes (``nxt``). Every
        entry S3 (or the reset sweep) writes goes to ``fwd_last`` first, and from there to the
        table a cycle later, so that the count-update loop ends in a register next to it
        rather than at the block RAM. It then stays visible for two more cycles in
        ``fwd_prev`` and ``fwd_old``. Every S3 request writes its entry back, changed or not,
        so "S3 holds a request" (a register) stands for "an entry is written" (``writing``)."""
        elayout, iw = entry_layout(self._p), self._p.index_width
        writing = self.busy | s3.valid | s3.prog
        fwd = [SimpleNamespace(we=Signal(name=f"fwd_{n}_we"),
                               index=Signal(iw, name=f"fwd_{n}_index", reset_less=True),
                               entry=Signal(elayout, name=f"fwd_{n}", reset_less=True))
               for n in ("last", "prev", "old")]
        nxt = Signal(elayout)                                    # S3: the entry written
        nxt_index = Signal(iw)
        nxt_tag_eq1 = Signal()                                   # nxt.tag == s1's tag
        return SimpleNamespace(writing=writing, regs=fwd, last=fwd[0].entry,
                               prev=fwd[1].entry, old=fwd[2].entry, nxt=nxt,
                               nxt_index=nxt_index, nxt_tag_eq1=nxt_tag_eq1)

    def _lookup(self, m, rd, sweep, s1, s2, fw):
        """S1 and S2: the request's entry, read in S1 and forwarded in S2; S3's operands and
        flags, registered. In S1 the RAM reads. A request read the table in S0, so it missed
        the entries S3 wrote in the cycle before S0 and in S0, S1 and S2's cycles (each
        reaches the table a cycle later). In S2 the first three are in ``fwd_old``,
        ``fwd_prev`` and ``fwd_last``: ``fwd_hit`` says (from registers) which, the latest
        first, holds its entry. ``base`` is the request's entry as of the last cycle's table,
        from registers only; the entry S3 writes in this cycle, if it is the same one
        (``s3_hit``), reaches S3 through ``fwd_last`` instead. S2 registers everything S3
        needs that does not wait for the count-update loop, so that S3 starts from registers:

        * ``ent``: the entry's fields that only an ARM changes (``rearm``, ``tag``,
          ``threshold``, ``cmd``), from ``base`` or from what S3 writes now;
        * ``ok_next``: the entry's tag matches the request's tile (from the same sources);
          with the request's kind, ``count_ok`` (a write that counts if the entry is armed)
          and ``disarm_ok``;
        * the subtract's operands: ``beats`` (0 unless ``count_ok``, so that any other
          request leaves ``left`` unchanged), ``beats + 1``, and ``base_left``, the minuend
          when ``s3_hit`` is low: ``base``'s ``left``, or the ARM's threshold if ``base`` is
          not armed (an unarmed entry's ``left`` is don't-care)."""
        p = self._p
        iw, elayout, fwd, nxt, s1_tile, s2_tile = (p.index_width, entry_layout(p), fw.regs,
                                                   fw.nxt, s1.tile, s2.tile)
        # --- S1: the RAM reads; decide S2's forwarding -------------------------------------
        rdata = Signal(elayout, reset_less=True)      # the RAM's output register in S2
        fwd_hit = Signal(3)                           # fwd_last, fwd_prev, fwd_old
        s1_index = s1_tile[:iw]
        # Also for S2: whether S3 will then write the request's entry (``s3_hit_next``),
        # whether the request ahead has the same tag (``tag_ahead``), and ``beats + 1``.
        busy_next = self.busy & ~sweep.last
        s3_hit_next, tag_ahead = Signal(), Signal()
        # ...and, if a forwarding register will hold its entry, whether its tag matches
        # (``fwd_tag_eq``; ``fwd_last`` will hold what S3 writes now).
        fwd_tag_eq = Signal()
        s1_tag = s1_tile[iw:]
        s2_beats1 = Signal(p.beats_width + 1, reset_less=True)
        hits = Cat(fw.writing & (fw.nxt_index == s1_index),
                   fwd[0].we & (fwd[0].index == s1_index),
                   fwd[1].we & (fwd[1].index == s1_index))
        m.d.sync += [
            s3_hit_next.eq((busy_next | s2.valid | s2.prog)
                           & (Mux(busy_next, sweep.sweep1[:iw], s2_tile[:iw]) == s1_index)),
            tag_ahead.eq(s2_tile[iw:] == s1_tile[iw:]), s2_beats1.eq(s1.write.beats + 1),
            fwd_tag_eq.eq(Mux(hits[0], fw.nxt_tag_eq1,
                              Mux(hits[1], self._tag_of(fw.last) == s1_tag,
                                  self._tag_of(fw.prev) == s1_tag))),
            rdata.eq(rd.data), fwd_hit.eq(hits),
        ]
        # --- S2: forward; prepare S3's operands and flags ----------------------------------
        s2_tag = s2_tile[iw:]
        base = Signal(elayout)
        tag_eq = Signal()                                        # base.tag == s2_tag
        with m.If(fwd_hit[0]):
            m.d.comb += base.eq(fw.last)
        with m.Elif(fwd_hit[1]):
            m.d.comb += base.eq(fw.prev)
        with m.Elif(fwd_hit[2]):
            m.d.comb += base.eq(fw.old)
        with m.Else():
            m.d.comb += base.eq(rdata)
        m.d.comb += tag_eq.eq(Mux(fwd_hit.any(), fwd_tag_eq, self._tag_of(rdata) == s2_tag))
        hold = [name for name in elayout.members if name not in ("valid", "left")]
        ent = Signal(data.StructLayout({name: elayout.members[name] for name in hold}),
                     reset_less=True)
        base_valid = Signal()
        base_left = Signal(p.count_width, reset_less=True)
        s3_hit, count_ok, disarm_ok, s3_arm = (
            Signal(name=n) for n in ("s3_hit", "count_ok", "disarm_ok", "s3_arm"))
        s3_beats = Signal(p.beats_width, reset_less=True)
        s3_beats1 = Signal(p.beats_width + 1, reset_less=True)
        ok_next = Signal()
        nxt_tag_eq = Signal()                                    # nxt.tag == s2_tag
        m.d.comb += ok_next.eq(Mux(s3_hit_next, nxt_tag_eq, tag_eq))
        count_next = s2.valid & ~s2.stale & ok_next
        m.d.sync += [
            s3_hit.eq(s3_hit_next), base_valid.eq(base.valid),
            base_left.eq(Mux(base.valid, base.left, s2.req.threshold)), count_ok.eq(count_next),
            disarm_ok.eq(s2.prog & (s2.req.op == TrackOp.DISARM) & ok_next),
            s3_arm.eq(s2.prog & (s2.req.op == TrackOp.ARM) & (s2.req.threshold != 0)),
            s3_beats.eq(Mux(count_next, s2.write.beats, 0)),
            s3_beats1.eq(Mux(count_next, s2_beats1, 1)),
        ]
        for name in hold:
            m.d.sync += ent[name].eq(Mux(s3_hit_next, nxt[name], base[name]))
        return SimpleNamespace(hold=hold, ent=ent, base_valid=base_valid, base_left=base_left,
                               s3_hit=s3_hit, count_ok=count_ok, disarm_ok=disarm_ok,
                               s3_arm=s3_arm, s3_beats=s3_beats, s3_beats1=s3_beats1,
                               s1_tag=s1_tag, s2_tag=s2_tag, tag_ahead=tag_ahead,
                               nxt_tag_eq=nxt_tag_eq)

    def _s3(self, m, wr, sweep, s3, fw, ops):
        """S3: update the entry (``cur``, into ``nxt``) and write it back through
        ``fwd_last``; the trigger to push (``push``) and the error events (``set_err``, all
        but ``overflow``). The count-update loop (``fwd_last`` -> ``nxt`` -> ``fwd_last``,
        taken by back-to-back requests to one entry) is only ``valid`` and ``left``: a 3:1
        mux with registered selects (the minuend), two carry chains side by side
        (``left - beats``, and ``left - (beats + 1)`` whose borrow is ``done``: the entry
        completes), then one LUT per bit: ``left = done ? threshold : left - beats`` with
        ``threshold`` a register, and ``valid`` from ``done`` and registered flags. A request
        that does not count subtracts 0, never completes (an armed entry has ``left >= 1``)
        and writes ``left`` back unchanged; an ARM that is accepted subtracts 0 from its
        threshold. The fields of an entry that is not armed are don't-care: only ``valid`` is
        kept exact, so the reset sweep and a DISARM clear ``valid`` alone."""
        p = self._p
        nxt, fwd, fwd_last, ent, s3_hit, s3_arm = (fw.nxt, fw.regs, fw.last, ops.ent,
                                                   ops.s3_hit, ops.s3_arm)
        s3_tag = s3.tile[p.index_width:]
        cur = Signal(entry_layout(p))            # the entry S3 works on
        arm = Signal()                           # an ARM that is accepted
        hit = Signal()                           # a write that counts: its entry is armed
        m.d.comb += [
            cur.valid.eq(Mux(s3_hit, fwd_last.valid, ops.base_valid)),
            cur.left.eq(Mux(s3_hit, Mux(fwd_last.valid, fwd_last.left, s3.req.threshold),
                            ops.base_left)),
            arm.eq(s3_arm & ~cur.valid), hit.eq(ops.count_ok & cur.valid),
        ]
        for name in ops.hold:
            m.d.comb += [
                cur[name].eq(ent[name]),
                nxt[name].eq(Mux(arm, s3_tag if name == "tag" else s3.req[name], ent[name])),
            ]
        new_left = Signal(p.count_width)         # left - beats
        over = Signal()                          # its borrow: left < beats
        done = Signal()                          # left - (beats + 1) < 0: left <= beats
        m.d.comb += [
            Cat(new_left, over).eq(cur.left - ops.s3_beats),
            done.eq((cur.left - ops.s3_beats1)[-1]),
            nxt.left.eq(Mux(done, ent.threshold, new_left)),
            nxt.valid.eq(~self.busy & Mux(cur.valid, ~ops.disarm_ok
                                          & ~(ops.count_ok & ~ent.rearm & done), s3_arm)),
            # What ``ok`` registers when S2's request finds this entry in ``fwd_last``.
            ops.nxt_tag_eq.eq(Mux(arm, ops.tag_ahead, self._tag_of(ent) == ops.s2_tag)),
            fw.nxt_tag_eq1.eq(Mux(arm, s3_tag == ops.s1_tag, self._tag_of(ent) == ops.s1_tag)),
        ]
        push = Signal()
        set_err = Signal(tracker_errors_layout(p))
        m.d.comb += [
            push.eq(hit & done),
            set_err.unprogrammed.eq(s3.valid & ~hit), set_err.overcount.eq(hit & over),
            set_err.reprogram.eq(s3_arm & cur.valid),
            set_err.bad_threshold.eq(s3.prog & (s3.req.op == TrackOp.ARM)
                                     & (s3.req.threshold == 0)),
        ]
        # The reset sweep takes S3's place (``nxt.valid`` is 0). No request can update the
        # table meanwhile: programming is not accepted, and a write seen during the sweep is
        # stale (it does not count).
        m.d.comb += fw.nxt_index.eq(Mux(self.busy, sweep.sweep, s3.tile[:p.index_width]))
        m.d.sync += [
            fwd[0].we.eq(fw.writing), fwd[0].index.eq(fw.nxt_index), fwd[0].entry.eq(nxt),
            *(f.eq(g) for f, g in zip((fwd[2].we, fwd[2].index, fwd[2].entry,
                                         fwd[1].we, fwd[1].index, fwd[1].entry),
                                        (fwd[1].we, fwd[1].index, fwd[1].entry,
                                         fwd[0].we, fwd[0].index, fwd[0].entry))),
        ]
        m.d.comb += [wr.addr.eq(fwd[0].index), wr.en.eq(Mux(fwd[0].we, -1, 0)),
                     wr.data.eq(fwd_last)]
        return SimpleNamespace(cur=cur, push=push, set_err=set_err)

    def _s4(self, m, queue, s3, ent, push, set_err):
        """S4: push the trigger into the trigger queue; ``(s4_push, lost)``, ``lost`` a push
        the full queue did not take. The trigger leaves with the cmd and the full tile id.
        It is registered before the push, so the queue's accept logic and the counters are
        not on the count-update loop."""
        trig = Signal(trigger_layout(self._p), reset_less=True)
        s4_push = Signal()
        m.d.sync += [trig.cmd.eq(ent.cmd), trig.tile.eq(s3.tile), s4_push.eq(push)]
        m.d.comb += [queue.data.eq(trig), queue.push.eq(s4_push)]
        lost = s4_push & ~queue.accept
        m.d.comb += set_err.overflow.eq(lost)
        return s4_push, lost

    def _stats(self, m, queue, set_err, s4_push, lost):
        """The statistics: writes by source, unprogrammed writes, triggers sent and dropped."""
        st = self.stats
        with m.If(self.write.valid):
            with m.Switch(self.write.payload.source):
                for source in (WriteSource.COMPUTE, WriteSource.DMA, WriteSource.REMOTE):
                    with m.Case(source):
                        c = st[f"writes_{source.name.lower()}"]
                        m.d.sync += c.eq(c + 1)
        count(m, st.unprogrammed, set_err.unprogrammed)
        count(m, st.triggers, s4_push & queue.accept)
        count(m, st.dropped, lost)


# --- formal properties (docs/formal.md); never part of the generated Verilog ---------------

def formal_spec(params: EngineParams, *, bug=None):
    """The formal spec top of a :class:`Tracker` with ``params`` (small ones: see
    :data:`t3hw.tools.formal.TRACKER_PARAMS`).

    Every input is free in every cycle; ``program`` is assumed to obey the stream rules (the
    tracker does not need it). The solver picks one table entry ``I`` (``AnyConst``), and the
    spec keeps a *shadow* of it, written from the entry semantics in this module's docstring
    and updated in the order the tracker takes requests (S0). Asserted, in every cycle:

    * **no write is lost or counted twice**: after the reset sweep, entry ``I`` of the table
      equals the shadow as it was three cycles earlier (the pipeline latency, the write
      through ``fwd_last`` included), and the entry that S3 works on equals it whenever S3
      holds a request for ``I``. Compared: ``valid``, and while valid ``rearm``, ``tag``,
      ``threshold``, ``count`` and ``cmd``;
    * **one trigger per completion**: a trigger for entry ``I`` enters the trigger queue in
      exactly the cycles after those in which S3 completes it in the shadow (S4), with the
      entry's ``cmd`` and the completing write's tile; a trigger that the full queue cannot
      take sets ``errors.overflow``; and whenever the trigger queue is empty, the triggers
      for ``I`` that left on ``trigger`` plus those lost equal its completions;
    * ``program.ready`` is low in every cycle with a write or during the reset sweep;
    * ``trigger`` obeys the stream rules, and the trigger queue its
      :meth:`~t3hw.hw.queue.Queue.properties` (never above its depth, stalled head unchanged,
      first in first out).

    Covers: entry ``I`` sends two triggers (re-armed), completes on a write right behind
    another request to it, on one two cycles behind and on one three cycles behind (the
    forwarding paths through ``fwd_last`` in S3, and ``fwd_last`` and ``fwd_prev`` in S2),
    and loses a trigger to a full queue.

    ``bug="drop_write"`` hides writes to the armed entry ``I`` (the solver picks which) from
    the tracker while the shadow counts them: a tracker that loses writes, which the proof
    must catch.
    """
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

        # --- the table and S3 against the shadow ----------------------------------------------
        # A request taken in cycle t is in S3 in t + 3: the shadow as it was before it is
        # three registers back, and so is every fact about it. Its write reaches the table
        # through ``fwd_last`` in t + 4.
        def past3(value, name):
            return past(m, past(m, past(m, value, name=f"{name}_2"), name=f"{name}_1"),
                        name=name)
        before  = past3(sh, "before")                        # entry I before S3's request
        s3_mine = past3(take_write | take_prog, "s3_mine")
        s3_done = past3(done, "s3_done")
        s3_tile = past3(w.tile, "s3_tile")
        m.d.comb += view.probe.addr.eq(index)
        with m.If(~dut.busy & ~past(m, dut.busy, name="busy_was")):
            m.d.comb += Assert(same(view.probe.data, past(m, before, name="table_shadow")),
                               "tracker: table entry differs from the shadow")
        with m.If(s3_mine):
            m.d.comb += Assert(same(view.cur, before),
                               "tracker: entry in S3 differs from the shadow")

        # --- triggers ---------------------------------------------------------------------
        queue = view.queue
        push_mine = queue.push & mine(queue.data.tile)
        lost = queue.push & ~queue.accept
        # S4 pushes what S3 completed a cycle before.
        s4_done = past(m, s3_done, name="s4_done")
        s4_tile = past(m, s3_tile, name="s4_tile")
        s4_cmd  = past(m, before.cmd, name="s4_cmd")
        m.d.comb += Assert(push_mine == s4_done,
                           "tracker: trigger pushed without a completion, or not pushed")
        with m.If(s4_done):
            m.d.comb += [Assert(queue.data.cmd == s4_cmd, "tracker: trigger with the wrong cmd"),
                         Assert(queue.data.tile == s4_tile, "tracker: trigger with the wrong tile")]
        with m.If(past(m, lost, name="lost_was")):
            m.d.comb += Assert(dut.errors.overflow, "tracker: lost trigger not reported")
        completed, sent, dropped = (Signal(4, name=n) for n in ("completed", "sent", "dropped"))
        out = dut.trigger
        m.d.sync += [
            completed.eq(completed + s4_done),
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
            Cover(s3_done & past(m, s3_mine, name="s3_mine_was")),
            Cover(s3_done & past(m, past(m, s3_mine, name="s3_mine_was2_1"),
                                 name="s3_mine_was2")
                  & ~past(m, s3_mine, name="s3_mine_was1")),
            Cover(s3_done & past3(s3_mine, "s3_mine_was3")
                  & ~past(m, s3_mine, name="s3_mine_was1b")
                  & ~past(m, past(m, s3_mine, name="s3_mine_was2b_1"), name="s3_mine_was2b")),
            Cover(dropped != 0),
        ]
    return Spec(body)
