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

    cycle t     S0: select the request (observed write, else programming, else an ack),
                    read entry[index]
    cycle t+1   S1: the RAM's read (its data lands in the RAM's output register); compare
                    the request's index with the three latest entries written (registered)
    cycle t+2   S2: base = forwarded ? that entry : RAM data; register it, and the request's
                    flags and operands, for S3
    cycle t+3   S3: entry = S3 wrote it last cycle ? fwd_last : base; update it, write it
                    to fwd_last; register a token to push, a verdict, the error details
    cycle t+4   S4: fwd_last goes into the table; push the token into the trigger queue;
                    result.valid for a programming request
    cycle t+5       trigger.valid (when the trigger queue was empty)

A request reads the table three cycles before it updates it, and an entry reaches the table
a cycle after S3 computes it (from the register ``fwd_last``, so that the count-update loop
ends next to its own logic, not at the block RAM). The entries S3 wrote in the four cycles
in between are forwarded: the last from ``fwd_last`` straight into S3, the three before from
``fwd_last``, ``fwd_prev`` and ``fwd_old`` into S2, with the select flags computed a cycle
ahead, from registers. S2 also precomputes everything S3 needs that the loop does not
change (the request's kind, the tag compare, the subtrahends, the fields only an ARM
writes), so the only single-cycle loop is the count update of one entry (``valid``,
``left`` and ``pending``: a 3:1 operand mux, a carry chain, a 2:1 select), and back-to-back
writes to one entry count exactly. The block RAM's clock-to-out reaches a register, not the
adder (``docs/synthesis.md``).

* **Throughput**: one observed write per cycle, every cycle. ``write`` has no ready signal.
* **Programming** is accepted only in cycles with no observed write (``program.ready`` is low
  while ``write.valid`` is high), so it never delays an observation.
* **No completion is lost or sent twice, whatever the back-pressure on ``trigger``.** A
  completion is a *firing* of its entry, counted in the entry's ``pending`` until the DMA
  takes its trigger. The entry has one *token* while firings are pending: a trigger
  ``(cmd, tile)`` in the trigger queue, or, once the DMA took it, an *ack* in the ack queue
  that comes back through S0 like any request and takes one firing off (and pushes the token
  again if firings remain). So the two queues (:class:`t3hw.hw.queue.Queue`, both
  ``tracker_entries`` deep) hold at most one item per entry and can never overflow, the
  trigger queue passes one trigger per cycle while ``trigger.ready`` is high, and an entry
  with a firing pending cannot be armed again (the ARM is refused: ``TrackResult.BUSY``,
  ``errors.reprogram``), so a trigger always names the entry's command and tile as they were
  when it fired. A one-shot entry has at most one firing pending. A re-arm entry keeps
  counting: its firings pile up in ``pending``, and are sent one after the other (each ack
  pushes the token again, at the tail of the queue); a completion that finds
  ``2**pending_width - 1`` firings pending is the one firing that can be lost (``overflow``,
  ``dropped``, with the tile in ``capture``), after that many completions of one entry with
  none taken. ``t3hw.hw.tracker_formal`` proves all of this with ``trigger`` held at will.
* **Programming and acks** are taken only in cycles with no observed write (programming
  first), so they never delay an observation; every programming request gets one verdict on
  ``result`` (:class:`~t3hw.spec.layouts.TrackResult`, with the entry's state after it: a
  READ is the read-back). Under writes in every cycle they would wait for ever, so while one
  waits in a cycle with a write the tracker raises ``hold`` for one cycle, at most once every
  :data:`HOLD_INTERVAL` cycles: a request to the producer of ``write`` (the engine's arbiter)
  for one cycle without a write. The engine's arbiter gives it within a few cycles
  (``docs/arbiter.md``), so a programming request waits at most ``HOLD_INTERVAL`` plus that
  many cycles, and acks are served at least once every ``HOLD_INTERVAL`` cycles.
* **A queued trigger runs the descriptor it was armed with.** The tracker counts, for each
  DMA command (descriptor index), the entries that have a firing pending under it
  (``held``, a small table of ``2**cmd_width`` counters in distributed RAM, one update per
  cycle at S4: +1 when an entry's first firing becomes pending, -1 when an ack takes its
  last one). ``desc_held`` answers, two cycles later (the query is registered as it enters,
  the answer is a register), whether descriptor ``desc_query`` is named by such a firing;
  the DMA refuses a write to it (``desc_busy``). The DMA's own use counters cover a trigger
  from the cycle after it takes it, long before its ack reaches S3, so a descriptor is held
  from the cycle after the completion until its DMA starts.
* **Reset**: block RAM has no reset, so after ``rst`` the tracker spends
  ``max(tracker_entries, 2**cmd_width)`` cycles clearing the table and the ``held`` counters,
  with ``busy`` high (``desc_held`` is high meanwhile). Programming waits; a write observed
  in that time is counted as ``unprogrammed``.

Entry semantics
---------------
An armed entry has ``count < threshold``. A write of ``beats`` to it makes
``new = count + beats``. If ``new >= threshold`` the entry completes: it fires (one more
firing pending: one trigger ``(cmd, tile)`` will leave) and is disarmed (one-shot) or
restarts from 0 (re-arm); ``new > threshold`` also sets ``overcount``. Otherwise the count
becomes ``new``. An ARM is accepted when the entry is neither armed nor has firings pending
and the threshold is not 0; a DISARM disarms the entry if it is armed for the tile (its
pending firings still leave); a READ changes nothing. An ARM with threshold 0 is refused
(``bad_threshold``) whatever the entry's state, armed or not.

The table stores the count as ``left = threshold - count`` (the beats still to come), so that
the hardware decides ``beats >= left`` and computes ``left - beats`` side by side, each one
carry chain; a completed entry reloads ``left = threshold``."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from t3hw.spec.layouts import (
    TrackOp, TrackResult, WriteSource, entry_layout, program_layout, rd_collision_attrs,
    tracker_capture_layout, tracker_errors_layout, tracker_result_layout, tracker_stats_layout,
    trigger_layout, write_layout)
from t3hw.spec.params import EngineParams, check_params
from .queue import BLOCK_MIN_DEPTH, Queue
from .status import count, sticky_errors


__all__ = ["Tracker", "HOLD_INTERVAL"]

#: Cycles between two ``hold`` requests (see the module docstring).
HOLD_INTERVAL = 8


class Tracker(wiring.Component):
    """Tracker table and trigger logic.

    Parameters
    ----------
    params : EngineParams
        Uses ``tracker_entries``, ``tile_width``, ``count_width``, ``beats_width``,
        ``cmd_width``, ``pending_width`` and ``counter_width``.

    Members
    -------
    write : In(stream.Signature(write_layout, always_ready=True))
        Granted memory writes to count, at most one per cycle. Never stalled.
    program : In(stream.Signature(program_layout))
        Arm / disarm / read requests. Ready only in cycles with no ``write`` and not ``busy``.
    result : Out(stream.Signature(tracker_result_layout, always_ready=True))
        One verdict per programming request taken, in order, 4 cycles after it was taken
        (``valid`` for one cycle).
    trigger : Out(stream.Signature(trigger_layout))
        Completed tiles, 5 cycles after the completing write; each exactly once, whatever
        the back-pressure.
    hold : Out(1)
        Asks the producer of ``write`` for one cycle without a write (see the docstring).
    errors : Out(tracker_errors_layout)
        Sticky error bits, set two cycles after S3's event, until ``clear`` pulses the bit.
    clear : In(tracker_errors_layout)
        Write-one-to-clear strobe for ``errors``.
    capture : Out(tracker_capture_layout)
        The tile and command of the request whose error events ``errors`` shows this cycle.
    stats : Out(tracker_stats_layout)
        Wrapping statistics counters; an event shows two cycles after it.
    desc_query : In(cmd_width)
        A descriptor index (the DMA's descriptor write, in the engine).
    desc_held : Out(1)
        A register (high from reset): in cycle t + 2, whether in t + 1 a pending firing named
        descriptor ``desc_query`` of cycle t (from the cycle after its completion to the
        cycle of the ack of the entry's last firing, both in S3), or the reset sweep ran.
    busy : Out(1)
        High while the table is being cleared after reset.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "write":   In(stream.Signature(write_layout(params), always_ready=True)),
            "program": In(stream.Signature(program_layout(params))),
            "result":  Out(stream.Signature(tracker_result_layout(params), always_ready=True)),
            "trigger": Out(stream.Signature(trigger_layout(params))),
            "hold":    Out(1),
            "errors":  Out(tracker_errors_layout(params)),
            "clear":   In(tracker_errors_layout(params)),
            "capture": Out(tracker_capture_layout(params)),
            "stats":   Out(tracker_stats_layout(params)),
            "desc_query": In(params.cmd_width),
            "desc_held":  Out(1, init=1),
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
        table, rd, wr, queue, acks = self._table(m)
        sweep = self._reset_sweep(m)
        s1, s2, s3 = self._s0(m, rd, acks)
        fw = self._forwarding(s3)
        ops = self._lookup(m, rd, sweep, s1, s2, fw)
        out = self._s3(m, wr, sweep, s3, fw, ops)
        s4_push, events = self._s4(m, queue, s3, ops.ent, out)
        self._held(m, sweep, s3, ops.ent, out)
        sticky_errors(m, self.errors, self.clear, events)
        self._stats(m, out)
        self._hold(m, acks)
        if platform == "formal":    # what tracker_formal checks (never in rtl/); `probe`:
            self.formal_view = SimpleNamespace(      # an extra asynchronous read port
                probe=table.read_port(domain="comb"), cur=out.cur, queue=queue, acks=acks,
                push=out.push, s1=s1, s2=s2, s3=s3, s4_push=s4_push)
        return m

    def _tag_of(self, entry):       # a 0-bit constant when tiles have no tag bits
        return entry.tag if self._p.tag_width else C(0, 0)

    def _table(self, m):
        """The entry table, its ports ``rd`` and ``wr``, the trigger queue and the queue of
        taken triggers (``acks``), each ``tracker_entries`` deep: an entry has at most one
        trigger in either (its *token*), so neither can overflow. A read that collides with a
        write to the same entry is never used: S2 forwards that write (``fwd_old``). The
        attribute says so to the synthesis flow (``t3hw/tools/synth_scripts/ecp5.ys``), which
        then needs no read-before-write bypass after the RAM. The queues are in block RAM
        (``head="block"``): neither the depth nor a LUT RAM read is on a head's path."""
        p = self._p
        m.submodules.entries = table = memory.Memory(shape=entry_layout(p), init=[],
                                                     depth=p.tracker_entries,
                                                     attrs=rd_collision_attrs("forwarded"))
        rd, wr = table.read_port(domain="sync"), table.write_port()
        head = "block" if p.tracker_entries >= BLOCK_MIN_DEPTH else "register"
        m.submodules.queue = queue = Queue(trigger_layout(p), depth=p.tracker_entries, head=head)
        wiring.connect(m, queue.o, wiring.flipped(self.trigger))
        # Every trigger the DMA takes comes back as an ``ack`` request for its entry:
        m.submodules.acks = acks = Queue(p.tile_width, depth=p.tracker_entries, head=head)
        m.d.comb += [acks.push.eq(self.trigger.valid & self.trigger.ready),
                     acks.data.eq(self.trigger.payload.tile)]
        return table, rd, wr, queue, acks

    def _reset_sweep(self, m):
        """The reset sweep: clear every entry and every ``held`` counter, one per cycle, then
        end ``busy``; with more descriptors than entries the table is cleared more than once.
        ``sweep + 1`` (``sweep1``) and "the last entry" (``last``) are registers of their own,
        so S1's look-ahead (which entry S3 writes next) starts at a register, not at an
        adder."""
        n = self._p.sweep_cycles
        sweep = Signal(range(n))
        sweep1 = Signal(range(n + 1), init=1)              # sweep + 1
        sweep_last = Signal(init=n == 1)                   # sweep == n - 1
        with m.If(self.busy):
            m.d.sync += [sweep.eq(sweep1), sweep1.eq(sweep1 + 1),
                         sweep_last.eq(sweep1 == n - 1)]
            with m.If(sweep_last):
                m.d.sync += self.busy.eq(0)
        return SimpleNamespace(sweep=sweep, sweep1=sweep1, last=sweep_last)

    def _s0(self, m, rd, acks):
        """S0: select the request (an observed write, else programming, else an ack) and
        read its entry; the stage registers of S1, S2 and S3."""
        p = self._p
        m.d.comb += self.program.ready.eq(~self.write.valid & ~self.busy)
        take_prog = self.program.valid & self.program.ready
        take_ack = ~self.write.valid & ~self.busy & ~self.program.valid & acks.o.valid
        m.d.comb += acks.o.ready.eq(take_ack)
        s0_tile = Mux(self.write.valid, self.write.payload.tile,
                      Mux(self.program.valid, self.program.payload.tile, acks.o.payload))
        m.d.comb += rd.addr.eq(s0_tile[:p.index_width])
        # Stage registers: S1 holds the request accepted last cycle, S2 and S3 the ones
        # before. ``valid``: an observed write; ``stale``: ...that arrived during the reset
        # sweep; ``prog``: a programming request; ``ack``: a trigger of the entry was taken;
        # ``tile``: the tile of any.
        def stage(name):
            return SimpleNamespace(
                valid=Signal(name=f"{name}_valid"), stale=Signal(name=f"{name}_stale"),
                prog=Signal(name=f"{name}_prog"), ack=Signal(name=f"{name}_ack"),
                tile=Signal(p.tile_width, name=f"{name}_tile", reset_less=True),
                write=Signal(write_layout(p), name=f"{name}_write", reset_less=True),
                req=Signal(program_layout(p), name=f"{name}_req", reset_less=True))
        s1, s2, s3 = stage("s1"), stage("s2"), stage("s3")
        m.d.sync += [s1.valid.eq(self.write.valid), s1.stale.eq(self.busy),
                     s1.prog.eq(take_prog), s1.ack.eq(take_ack), s1.write.eq(self.write.payload),
                     s1.req.eq(self.program.payload), s1.tile.eq(s0_tile)]
        for src, dst in ((s1, s2), (s2, s3)):
            m.d.sync += [dst.valid.eq(src.valid), dst.stale.eq(src.stale),
                         dst.prog.eq(src.prog), dst.ack.eq(src.ack), dst.write.eq(src.write),
                         dst.req.eq(src.req),
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
        writing = self.busy | s3.valid | s3.prog | s3.ack
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
            s3_hit_next.eq((busy_next | s2.valid | s2.prog | s2.ack)
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
        hold = [name for name in elayout.members if name not in ("valid", "left", "pending")]
        ent = Signal(data.StructLayout({name: elayout.members[name] for name in hold}),
                     reset_less=True)
        base_valid = Signal()
        base_left = Signal(p.count_width, reset_less=True)
        base_pending = Signal(p.pending_width, reset_less=True)
        s3_hit, count_ok, disarm_ok, s3_arm, tag_ok = (
            Signal(name=n) for n in ("s3_hit", "count_ok", "disarm_ok", "s3_arm", "tag_ok"))
        s3_beats = Signal(p.beats_width, reset_less=True)
        s3_beats1 = Signal(p.beats_width + 1, reset_less=True)
        ok_next = Signal()
        nxt_tag_eq = Signal()                                    # nxt.tag == s2_tag
        m.d.comb += ok_next.eq(Mux(s3_hit_next, nxt_tag_eq, tag_eq))
        count_next = s2.valid & ~s2.stale & ok_next
        m.d.sync += [
            s3_hit.eq(s3_hit_next), base_valid.eq(base.valid), base_pending.eq(base.pending),
            tag_ok.eq(ok_next),
            base_left.eq(Mux(base.valid, base.left, s2.req.threshold)), count_ok.eq(count_next),
            disarm_ok.eq(s2.prog & (s2.req.op == TrackOp.DISARM) & ok_next),
            s3_arm.eq(s2.prog & (s2.req.op == TrackOp.ARM) & (s2.req.threshold != 0)),
            s3_beats.eq(Mux(count_next, s2.write.beats, 0)),
            s3_beats1.eq(Mux(count_next, s2_beats1, 1)),
        ]
        for name in hold:
            m.d.sync += ent[name].eq(Mux(s3_hit_next, nxt[name], base[name]))
        return SimpleNamespace(hold=hold, ent=ent, base_valid=base_valid, base_left=base_left,
                               base_pending=base_pending, tag_ok=tag_ok,
                               s3_hit=s3_hit, count_ok=count_ok, disarm_ok=disarm_ok,
                               s3_arm=s3_arm, s3_beats=s3_beats, s3_beats1=s3_beats1,
                               s1_tag=s1_tag, s2_tag=s2_tag, tag_ahead=tag_ahead,
                               nxt_tag_eq=nxt_tag_eq)

    def _s3(self, m, wr, sweep, s3, fw, ops):
        """S3: update the entry (``cur``, into ``nxt``) and write it back through
        ``fwd_last``; the token to push (``push``), the verdict of a programming request
        (``code``) and the error events (``set_err``). The count-update loop
        (``fwd_last`` -> ``nxt`` -> ``fwd_last``, taken by back-to-back requests to one entry)
        is ``valid``, ``left`` and ``pending``: a 3:1 mux with registered selects (the
        minuend), two carry chains side by side (``left - beats``, and ``left - (beats + 1)``
        whose borrow is ``done``: the entry completes), then one LUT per bit:
        ``left = done ? threshold : left - beats`` with ``threshold`` a register, ``valid``
        from ``done`` and registered flags, and ``pending`` one up (a completion) or down (an
        ack). A request that does not count subtracts 0, never completes (an armed entry has
        ``left >= 1``) and writes ``left`` back unchanged; an ARM that is accepted subtracts 0
        from its threshold. ``left`` of an entry that is not armed is don't-care; the other
        fields are kept while ``pending`` is not 0 (a re-push needs ``cmd`` and ``tag``), and
        the reset sweep clears ``valid`` and ``pending``."""
        p = self._p
        nxt, fwd, fwd_last, ent, s3_hit, s3_arm = (fw.nxt, fw.regs, fw.last, ops.ent,
                                                   ops.s3_hit, ops.s3_arm)
        s3_tag = s3.tile[p.index_width:]
        cur = Signal(entry_layout(p))            # the entry S3 works on
        arm = Signal()                           # an ARM that is accepted
        hit = Signal()                           # a write that counts: its entry is armed
        idle = Signal()                          # no firing of the entry is pending
        m.d.comb += [
            cur.valid.eq(Mux(s3_hit, fwd_last.valid, ops.base_valid)),
            cur.left.eq(Mux(s3_hit, Mux(fwd_last.valid, fwd_last.left, s3.req.threshold),
                            ops.base_left)),
            cur.pending.eq(Mux(s3_hit, fwd_last.pending, ops.base_pending)),
            idle.eq(cur.pending == 0),
            arm.eq(s3_arm & ~cur.valid & idle), hit.eq(ops.count_ok & cur.valid),
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
                                          & ~(ops.count_ok & ~ent.rearm & done), arm)),
            # What ``ok`` registers when S2's request finds this entry in ``fwd_last``.
            ops.nxt_tag_eq.eq(Mux(arm, ops.tag_ahead, self._tag_of(ent) == ops.s2_tag)),
            fw.nxt_tag_eq1.eq(Mux(arm, s3_tag == ops.s1_tag, self._tag_of(ent) == ops.s1_tag)),
        ]
        # Firings not yet taken: a completion adds one (unless the count is saturated: only a
        # re-arm entry can get there), an ack takes one. The entry's token is pushed when its
        # first firing becomes pending, and pushed again by an ack that leaves some pending.
        complete = Signal()
        lost = Signal()
        push = Signal()
        m.d.comb += [
            complete.eq(hit & done),
            lost.eq(complete & cur.pending.all()),
            nxt.pending.eq(Mux(self.busy, 0,
                               Mux(complete & ~lost, cur.pending + 1,
                                   Mux(s3.ack, cur.pending - 1, cur.pending)))),
            push.eq((complete & idle) | (s3.ack & (cur.pending > 1))),
        ]
        code = Signal(TrackResult)
        with m.Switch(s3.req.op):
            with m.Case(TrackOp.ARM):
                m.d.comb += code.eq(Mux(s3.req.threshold == 0, TrackResult.BAD_THRESHOLD,
                                        Mux(cur.valid | ~idle, TrackResult.BUSY,
                                            TrackResult.OK)))
            with m.Case(TrackOp.DISARM, TrackOp.READ):
                m.d.comb += code.eq(Mux(cur.valid & ops.tag_ok, TrackResult.OK,
                                        TrackResult.NOT_ARMED))
            with m.Default():
                m.d.comb += code.eq(TrackResult.BAD_OP)
        set_err = Signal(tracker_errors_layout(p))
        m.d.comb += [
            set_err.unprogrammed.eq(s3.valid & ~hit), set_err.overcount.eq(hit & over),
            set_err.reprogram.eq(s3_arm & (cur.valid | ~idle)),
            set_err.bad_threshold.eq(s3.prog & (s3.req.op == TrackOp.ARM)
                                     & (s3.req.threshold == 0)),
            set_err.overflow.eq(lost),
            set_err.bad_op.eq(s3.prog & (code == TrackResult.BAD_OP)),
        ]
        # The reset sweep takes S3's place (``nxt.valid`` and ``nxt.pending`` are 0). No
        # request can update the table meanwhile: programming and acks are not taken, and a
        # write seen during the sweep is stale (it does not count).
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
        return SimpleNamespace(cur=cur, push=push, set_err=set_err, code=code, nxt=nxt,
                               last=fwd_last, complete=complete, lost=lost, hit=hit,
                               idle=idle)

    def _s4(self, m, queue, s3, ent, out):
        """S4: push the token into the trigger queue (it always has room: an entry has at
        most one token), the verdict of a programming request onto ``result``, and the
        details of S3's error events onto ``capture``. The trigger leaves with the cmd and
        the full tile id. Everything is registered first, off the count-update loop.
        Returns ``s4_push`` and the registered error events."""
        p = self._p
        trig = Signal(trigger_layout(p), reset_less=True)
        s4_push = Signal()
        m.d.sync += [trig.cmd.eq(ent.cmd), trig.tile.eq(s3.tile), s4_push.eq(out.push)]
        m.d.comb += [queue.data.eq(trig), queue.push.eq(s4_push)]
        # The entry's fields from ``fwd_last`` (S3's entry, registered): off the count loop.
        res, last = self.result.payload, out.last
        op, code, tile = (Signal.like(x, reset_less=True) for x in (res.op, res.code, res.tile))
        m.d.sync += [self.result.valid.eq(s3.prog), op.eq(s3.req.op), code.eq(out.code),
                     tile.eq(s3.tile)]
        m.d.comb += [
            res.op.eq(op), res.code.eq(code), res.tile.eq(tile),
            # An entry that is not armed shows 0 in its other fields (its table fields are
            # don't-care, and undefined in a simulator until first written).
            res.valid.eq(last.valid), res.pending.eq(last.pending),
            res.rearm.eq(last.valid & last.rearm),
            res.threshold.eq(Mux(last.valid, last.threshold, 0)),
            res.cmd.eq(Mux(last.valid, last.cmd, 0)),
            res.count.eq(Mux(last.valid, last.threshold - last.left, 0)),
        ]
        # The error events and details registered before the sticky bits and the capture, so
        # S3's decision drives flip-flops, not the capture's enable (``errors``: S3 + 2).
        err, cap = Signal.like(out.set_err), Signal.like(self.capture, reset_less=True)
        m.d.sync += [err.eq(out.set_err), cap.tile.eq(s3.tile),
                     cap.cmd.eq(Mux(s3.prog, s3.req.cmd, Mux(out.hit, ent.cmd, 0)))]
        with m.If(Value.cast(err).any()):
            m.d.sync += self.capture.eq(cap)
        return s4_push, err

    def _held(self, m, sweep, s3, ent, out):
        """The ``held`` counters: per descriptor index, the entries with a firing pending
        under it. S3 decides at most one change (a first firing, or an ack of the last one);
        it reads the counter of its entry's command (distributed RAM, read from ``ent.cmd``)
        into a register, or takes S4's write to the same counter. S4 adds or subtracts one
        and writes it back (the RAM read and the adder in different cycles). S5 writes,
        from registers, whether it is not 0 into a 1-bit copy, the only table
        ``desc_query`` reads (registered as it enters); ``desc_held`` registers that bit,
        or S4's or S5's new value of the same counter: a descriptor is held from the cycle
        after its entry completes to its last ack."""
        p = self._p
        m.submodules.held = held = memory.Memory(shape=range(p.tracker_entries + 1),
                                                 depth=p.dma_descriptors, init=[])
        m.submodules.held_nonzero = nonzero = memory.Memory(shape=1, depth=p.dma_descriptors,
                                                            init=[])
        pre, wr = held.read_port(domain="comb"), held.write_port()
        query, nz_wr = nonzero.read_port(domain="comb"), nonzero.write_port()
        asked = Signal(p.cmd_width, reset_less=True)
        s4_cmd = Signal(p.cmd_width, reset_less=True)
        s4_old = Signal(range(p.tracker_entries + 1), reset_less=True)
        s4_inc, s4_dec = Signal(), Signal()
        new = Signal(range(p.tracker_entries + 2))
        m.d.comb += [new.eq(s4_old + s4_inc - s4_dec), pre.addr.eq(ent.cmd)]
        changes = s4_inc | s4_dec
        m.d.sync += [asked.eq(self.desc_query), s4_cmd.eq(ent.cmd),
                     s4_inc.eq(out.complete & out.idle & ~self.busy),
                     s4_dec.eq(s3.ack & (out.cur.pending == 1)),
                     s4_old.eq(Mux(changes & (s4_cmd == ent.cmd), new, pre.data))]
        m.d.comb += [wr.addr.eq(Mux(self.busy, sweep.sweep, s4_cmd)),
                     wr.data.eq(Mux(self.busy, 0, new)),
                     wr.en.eq(self.busy | changes)]
        s5_addr = Signal(p.cmd_width, reset_less=True)
        s5_data = Signal(reset_less=True)
        s5_en = Signal()
        m.d.sync += [s5_addr.eq(wr.addr), s5_data.eq(Mux(self.busy, 0, new != 0)),
                     s5_en.eq(wr.en)]
        m.d.comb += [nz_wr.addr.eq(s5_addr), nz_wr.data.eq(s5_data), nz_wr.en.eq(s5_en),
                     query.addr.eq(asked)]
        m.d.sync += self.desc_held.eq(
            self.busy | Mux(changes & (s4_cmd == asked), new != 0,
                            Mux(s5_en & (s5_addr == asked), s5_data, query.data)))

    def _stats(self, m, out):
        """The statistics (writes by source, unprogrammed writes, firings, lost firings),
        each event counted the cycle after it (it drives a flip-flop, not a counter's enable)."""
        events = {f"writes_{s.name.lower()}": self.write.valid & (self.write.payload.source == s)
                  for s in (WriteSource.COMPUTE, WriteSource.DMA, WriteSource.REMOTE)}
        events.update(unprogrammed=out.set_err.unprogrammed,
                      triggers=out.complete & ~out.lost, dropped=out.lost)
        for name, event in events.items():
            count(m, self.stats[name], event, late=f"{name}_event")

    def _hold(self, m, acks):
        """``hold``: a one-cycle request for a cycle without a write, raised when a
        programming request or an ack waits in a cycle with a write, at most once every
        :data:`HOLD_INTERVAL` cycles."""
        wait = Signal(range(HOLD_INTERVAL))
        waiting = ~self.busy & (self.program.valid | acks.o.valid) & self.write.valid
        raise_ = waiting & (wait == 0)
        m.d.sync += self.hold.eq(raise_)
        with m.If(raise_):
            m.d.sync += wait.eq(HOLD_INTERVAL - 1)
        with m.Elif(wait != 0):
            m.d.sync += wait.eq(wait - 1)
