# SPDX-License-Identifier: Apache-2.0
"""Simulation-only HDL of the co-simulation's HBM2 DRAM (:class:`sim_models.hbm_dram.HbmDram`
without refusal bursts, on :class:`sim_models.hbm.HbmModel` timing), for the fast
co-simulation. Same ports as :class:`~t3hw.verif.simhdl.dram.FixedDram`.

Timing only: the data stays in numpy. Every request the DRAM *accepts* is shown on the
``serve`` port in the cycle it is accepted (``HbmDram`` applies the data then, in acceptance
order), for the simulation top to log.

Cycle ``c``, as :class:`~sim_models.cosim.SystemEnv` runs ``HbmDram`` (``drive``: ``ready``
and ``occupancy``; ``observe``: ``take``; ``tick``: ``serve``):

* ``req.ready`` is high while the one-request input register is empty. The request in the
  register, or else the one transferred on ``req``, is accepted when its pseudo-channel's
  read or write queue (:attr:`HbmModel.can_accept`, as the decisions up to ``c - 1`` left
  it) has room; else it waits in the register and is offered again every cycle. The
  accepted request is on ``serve`` in cycle ``c``: a combinational path from ``req`` that
  the model's semantics need (it accepts a request in the cycle it is taken). Nothing else
  reaches an output combinationally: ``ready``, ``occupancy``, ``rsp``, ``idle`` and the
  counters come from registers, memories and ``cycle``.
* An accepted request is one access (a request within one ``interleave_bytes`` granule: one
  across a boundary, two accesses to ``HbmModel``, sets error bit 0) queued at its
  pseudo-channel at ``c``; the pseudo-channels' decisions at ``c`` see it
  (:class:`~t3hw.verif.simhdl.hbm_sched.PcSched`: FR-FCFS, bank states, every timing,
  refresh).
* A read takes a slot of the response buffer (``rsp_depth``, in request order) when it is
  accepted and is marked done at its completion cycle; ``rsp`` offers the oldest read once it
  is done, from the cycle after (``HbmDram``'s reorder buffer releasing it into
  ``responses``), held until taken.
* A store or update completes at its completion cycle ``d``: if its address is at or above
  ``result_base`` its bytes count into ``r_writes`` and ``last_write`` becomes ``d``.
* ``occupancy`` is the accesses waiting in the controllers' queues plus the input register
  (saturated at the port's width); ``idle`` no request in the register, queued, in flight or
  waiting to answer.
* ``error`` (sticky, ``error_cycle`` the cycle of the first): bit 0 (:data:`ERR_TIMING`) a
  request the timing cannot follow: it spans two granules, has 0 bytes or op code 3
  (``HbmModel`` would split or refuse it; it is queued as one access of its first granule,
  a write), or a completion found its calendar slot taken; bit 1 (:data:`ERR_RSP`) a read
  accepted with the response buffer full (its response is lost).

Never synthesised: ``//``, ``%``, wide compares and loops over queue entries are used freely.
"""

import functools

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from sim_models.hbm_dram import COSIM_HBM
from sim_models.hbm_params import HbmParams
from t3hw.spec.layouts import MemOp, mem_request_layout, mem_response_layout
from t3hw.spec.params import EngineParams

from .dram import CYCLE_WIDTH, dram_members
from .hbm_sched import PcSched, entry_layout, max_bursts, update_steps


__all__ = ["HbmDramHdl", "ERR_TIMING", "ERR_RSP"]

#: ``error`` bit: a request the timing cannot follow (two granules, 0 bytes, op code 3) or a
#: completion calendar collision.
ERR_TIMING = 1
#: ``error`` bit: a read accepted with the response buffer full (its response is lost).
ERR_RSP = 2


def _check(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], not {value!r}")


def _check_hbm(hbm):
    if not isinstance(hbm, HbmParams):
        raise ValueError(f"hbm must be an HbmParams, not {hbm!r}")
    if hbm.ratio != 1:
        raise ValueError(f"hbm must count the caller's cycle in DRAM clocks (tck_ps * clock_ghz "
                         f"= 1000), not tck_ps={hbm.tck_ps}, clock_ghz={hbm.clock_ghz}")
    if max_bursts(hbm) > update_steps(hbm):
        raise ValueError(f"hbm's bursts per granule must be at most ceil((tcl + talu) / "
                         f"(lanes * slot)) = {update_steps(hbm)}, not {max_bursts(hbm)}")


class HbmDramHdl(wiring.Component):
    """One GPU's HBM2 DRAM: :class:`~sim_models.hbm_dram.HbmDram` cycle for cycle (module
    docstring).

    Parameters
    ----------
    params : EngineParams
        The engine's parameters (request and response layouts, occupancy width).
    hbm : HbmParams
        The memory system, :data:`~sim_models.hbm_dram.COSIM_HBM` by default; its DRAM clock
        must be the caller's cycle (``ratio`` 1), and a granule at most
        ``ceil((tcl + talu) / (lanes * slot))`` bursts.
    rsp_depth : int
        Reads the DRAM holds from acceptance until their response is taken, in [2, 65536].

    Members
    -------
    cycle : In(40)
        The co-simulation's cycle number, one DRAM clock each: it must count the clocks
        (from 0, by one), since the controllers decide once per clock for the cycle shown.
    result_base : In(params.addr_width)
        Writes at or above it count into ``r_writes`` (the collective's completion).
    req : In(stream.Signature(mem_request_layout))
        From the engine's ``dram`` port; ``ready``: the input register is empty.
    rsp : Out(stream.Signature(mem_response_layout))
        To the engine's ``dram_response`` port, in request order.
    occupancy : Out(params.occupancy_width)
        Accesses waiting in the controllers' queues, plus the input register.
    serve_valid, serve : Out(1), Out(mem_request_layout)
        The request accepted this cycle.
    r_writes, last_write : Out(48), Out(40)
        Bytes written at or above ``result_base``, and the completion cycle of the last such
        write.
    idle : Out(1)
        Nothing taken and not done or answered (``HbmDram.pending() == 0``), no response held.
    error, error_cycle : Out(2), Out(40)
        Sticky :data:`ERR_TIMING`, :data:`ERR_RSP`; the cycle of the first.
    """

    def __init__(self, params: EngineParams = EngineParams(), *, hbm=COSIM_HBM, rsp_depth=256):
        try:
            _check("rsp_depth", rsp_depth, 2, 65536)
            _check_hbm(hbm)
        except ValueError:
            self._MustUse__silence = True
            raise
        self._p, self.hbm, self.rsp_depth = params, hbm, rsp_depth
        self.meta_width = max((rsp_depth - 1).bit_length(), params.burst_width) + 1
        super().__init__(dram_members(params))

    @functools.cached_property
    def pcs(self):
        """The pseudo-channels' schedulers, made when first needed (by :meth:`elaborate`, or
        by a test that watches them): an instance used only for its ports, as the system
        top's stand-ins are, then makes none, and none is warned about as never used."""
        return [PcSched(self.hbm, i, self.meta_width) for i in range(self.hbm.n_pcs)]

    def elaborate(self, platform):
        m = Module()
        p, hp = self._p, self.hbm
        for i, pc in enumerate(self.pcs):
            m.submodules[f"pc{i}"] = pc
            m.d.comb += pc.cycle.eq(self.cycle)

        # the input register, and the request offered to the controllers this cycle
        slot_valid = Signal()
        slot = Signal(mem_request_layout(p))
        cand = Signal(mem_request_layout(p))
        cand_valid = Signal()
        m.d.comb += [self.req.ready.eq(~slot_valid),
                     cand_valid.eq(slot_valid | self.req.valid),
                     cand.eq(Mux(slot_valid, slot, self.req.payload))]
        pc_i, entry, bad = self._decode(m, cand)
        write = cand.op != MemOp.READ
        room = Signal()
        m.d.comb += room.eq(Array([Mux(write, pc.count_w < hp.write_queue,
                                       pc.count_r < hp.read_queue) for pc in self.pcs])[pc_i])
        accept = Signal()
        m.d.comb += [accept.eq(cand_valid & room),
                     self.serve_valid.eq(accept), self.serve.eq(cand)]
        with m.If(slot_valid):
            with m.If(accept):
                m.d.sync += slot_valid.eq(0)
        with m.Elif(self.req.valid & ~accept):
            m.d.sync += [slot_valid.eq(1), slot.eq(self.req.payload)]

        lost, meta_r, rob_idle = self._responses(m, accept & ~write, cand)
        meta = Signal(self.meta_width)
        in_r = cand.addr >= self.result_base
        m.d.comb += meta.eq(Mux(write, Cat(cand.bytes, in_r), meta_r))
        for i, pc in enumerate(self.pcs):
            m.d.comb += [pc.ins_valid.eq(accept & (pc_i == i)), pc.ins_write.eq(write),
                         pc.ins_update.eq(cand.op == MemOp.UPDATE),
                         pc.ins.eq(entry), pc.ins.meta.eq(meta)]
        wr_idle = self._writes(m, accept & write)

        waiting = Signal(range(sum(hp.read_queue + hp.write_queue for _ in self.pcs) + 2))
        m.d.comb += waiting.eq(sum((pc.count_r + pc.count_w for pc in self.pcs), slot_valid))
        top = (1 << len(self.occupancy)) - 1
        m.d.comb += [self.occupancy.eq(Mux(waiting > top, top, waiting)),
                     self.idle.eq(~slot_valid & rob_idle & wr_idle)]

        timing = Signal()
        m.d.comb += timing.eq((accept & bad) | Cat(*[pc.collision for pc in self.pcs]).any())
        new = Cat(timing, lost)
        with m.If((new != 0) & (self.error == 0)):
            m.d.sync += self.error_cycle.eq(self.cycle)
        m.d.sync += self.error.eq(self.error | new)
        return m

    def _decode(self, m, req):
        """The pseudo-channel, the queue entry (row, bank, bursts) of request ``req``, and
        whether the timing cannot follow it (outside one granule, empty, op code 3)."""
        hp = self.hbm
        f = hp.fields_at
        a = req.addr

        def field(name):
            sh, mk = f[name]
            return (a >> sh) & mk

        pc_i = Signal(range(hp.n_pcs))
        entry = Signal(entry_layout(hp, self.meta_width))
        g, b = hp.interleave_bytes, hp.burst_bytes
        off = a % g
        stop = Signal(range(g + (1 << len(req.bytes))))
        m.d.comb += stop.eq(off + req.bytes)
        end = Mux(stop > g, g, stop)
        bad = Signal()
        m.d.comb += [
            pc_i.eq(field("ch") * hp.pseudo_channels + field("pc")),
            entry.row.eq(field("ro")),
            entry.bank.eq(field("bg") * hp.banks_per_group + field("ba")),
            entry.n.eq((end + b - 1) // b - off // b),
            bad.eq((stop > g) | (req.bytes == 0) | (req.op.as_value() == 3)),
        ]
        return pc_i, entry, bad

    def _responses(self, m, alloc, req):
        """The response buffer: a slot per read from acceptance until its response is taken,
        marked done at its completion; ``rsp`` offers the oldest once done. Returns
        ``(lost, meta, idle)``."""
        d = self.rsp_depth
        mem = m.submodules.responses = Memory(shape=mem_response_layout(self._p), depth=d,
                                            init=[])
        wp, rp = mem.write_port(), mem.read_port(domain="comb")
        head, tail = Signal(range(d)), Signal(range(d))
        count = Signal(range(d + 1))
        done = Signal(d)
        full = count == d
        take = Signal()
        lost = Signal()
        meta = Signal(self.meta_width)
        m.d.comb += [
            take.eq(alloc & ~full), lost.eq(alloc & full),
            meta.eq(Cat(tail, C(0, self.meta_width - 1 - len(tail)), take)),
            wp.addr.eq(tail), wp.en.eq(take),
            wp.data.source.eq(req.source), wp.data.tag.eq(req.tag),
            rp.addr.eq(head),
            self.rsp.valid.eq((count != 0) & done.bit_select(head, 1)),
            self.rsp.payload.eq(rp.data),
        ]
        pop = self.rsp.valid & self.rsp.ready
        sets = []
        for pc in self.pcs:
            mark = pc.cpl_valid & pc.cpl_read & pc.cpl_meta[-1]
            sets.append(Mux(mark, C(1, d) << pc.cpl_meta[:len(tail)], 0))
        clear = Mux(take, C(1, d) << tail, 0)
        m.d.sync += done.eq(_ors(done, sets) & ~clear)
        with m.If(take):
            m.d.sync += tail.eq(Mux(tail == d - 1, 0, tail + 1))
        with m.If(pop):
            m.d.sync += head.eq(Mux(head == d - 1, 0, head + 1))
        m.d.sync += count.eq(count + take - pop)
        return lost, meta, count == 0

    def _writes(self, m, accepted):
        """Stores and updates accepted and not yet complete; the completions' ``r_writes``
        and ``last_write``. Returns whether none is outstanding."""
        hp, bw = self.hbm, self._p.burst_width
        in_flight = self.pcs[0].cal_depth          # completions a PC has on its calendar
        outstanding = Signal(range(hp.n_pcs * (hp.write_queue + in_flight) + 2))
        n_done, n_bytes = [], []
        for pc in self.pcs:
            w = pc.cpl_valid & ~pc.cpl_read
            n_done.append(w)
            n_bytes.append(Mux(w & pc.cpl_meta[bw], pc.cpl_meta[:bw], 0))
        in_r = Cat(*[pc.cpl_valid & ~pc.cpl_read & pc.cpl_meta[bw] for pc in self.pcs]).any()
        m.d.sync += [outstanding.eq(outstanding + accepted - sum(n_done)),
                     self.r_writes.eq(self.r_writes + sum(n_bytes))]
        with m.If(in_r):
            m.d.sync += self.last_write.eq(self.cycle)
        return outstanding == 0


def _ors(first, values):
    out = first
    for v in values:
        out = out | v
    return out
