# SPDX-License-Identifier: Apache-2.0
"""The fast co-simulation's HBM2 DRAM (``t3hw.verif.simhdl.hbm.HbmDramHdl``) against its
Python model, :class:`sim_models.hbm_dram.HbmDram` on :class:`sim_models.hbm.HbmModel`, as
:class:`sim_models.cosim.SystemEnv` runs it: every cycle's ``ready``, occupancy, response,
idle and accepted request, and every command each pseudo-channel decides (column access,
ACT, PRE, refresh; from the model's command log), under random reads, stores and updates
over a few rows and banks (row hits, misses and conflicts, capped rows, write drains, full
queues, refresh), idle cycles and response back-pressure; then ``r_writes``,
``last_write`` and no error. That a one-cycle change of a timing is noticed; the sticky
errors; the parameter checks."""

import dataclasses
import random

import numpy as np
import pytest
from amaranth import Elaboratable, Module, Signal
from amaranth.lib import data
from amaranth.sim import Simulator

from sim_models.hbm_dram import COSIM_HBM, HbmDram
from t3hw.spec.layouts import MemOp, WriteSource, mem_request_layout
from t3hw.verif.cosim_scenarios import REGRESSION_PARAMS as P
from t3hw.verif.simhdl.hbm import ERR_RSP, ERR_TIMING, HbmDramHdl


ROWS = 4
#: Small queues and a low hit cap: refusals, drains and capped rows within a few requests.
TIGHT = COSIM_HBM.replace(read_queue=3, write_queue=4, write_high=3, write_low=1,
                          row_hit_cap=2)
#: Refresh every 400 cycles (many refreshes, under load, in a short run), and a four-ACT
#: window that binds (COSIM_HBM's tFAW of 15 never does beside tRRD_S = 4).
FAST_REFRESH = COSIM_HBM.replace(trefi=400, trfc=60, row_hit_cap=3, tfaw=24, trrd_l=6)


#: Another geometry: one channel of two PCs, 2 x 8 banks, 16-B bursts (four per granule),
#: three column lanes, other queue sizes and another address mapping.
ODD = COSIM_HBM.replace(channels=1, bank_groups=2, banks_per_group=8, burst_bytes=16,
                        tccd_l=6, talu=10, read_queue=8, write_queue=12, write_high=9,
                        write_low=3, row_hit_cap=4, mapping=("pc", "co", "bg", "ba", "ch", "ro"))
#: A 6-bit occupancy port, which the loaded queues saturate.
P6 = dataclasses.replace(P, occupancy_width=6, mca_saturation=63)


def _size(hp):
    return ROWS << hp.fields_at["ro"][0]


class _Traffic:
    """Random requests in phases of a few hundred cycles: spread over every bank and row,
    or crowded on a few banks (row hits past the cap, conflicts), read- or write-heavy."""

    def __init__(self, rng, hp, scale):
        self.rng, self.hp, self.scale = rng, hp, scale
        self.left = 0

    def _phase(self):
        r = self.rng
        self.left = r.randrange(100, 600)
        self.banks = [(r.randrange(self.hp.bank_groups), r.randrange(self.hp.banks_per_group))
                      for _ in range(r.choice((1, 2, 3, 4, 8, 16, 16)))]
        self.rows = r.sample(range(ROWS), r.choice((1, 2, ROWS)))
        self.ops = r.choice(([0.6, 0.2, 0.2], [0.2, 0.4, 0.4], [0.9, 0.05, 0.05],
                             [0.05, 0.45, 0.5], [0.34, 0.33, 0.33]))
        self.busy = r.choice((0.1, 0.3, 0.5, 0.7, 1.0)) * self.scale

    def offer(self):
        """A request this cycle, or None."""
        if self.left == 0:
            self._phase()
        self.left -= 1
        r, hp = self.rng, self.hp
        if r.random() >= self.busy:
            return None
        bg, ba = r.choice(self.banks)
        addr = hp.address(ch=r.randrange(hp.channels), pc=r.randrange(hp.pseudo_channels),
                          bg=bg, ba=ba, co=r.randrange(hp.row_bytes // hp.interleave_bytes),
                          ro=r.choice(self.rows))
        op = r.choices([MemOp.READ.value, MemOp.STORE.value, MemOp.UPDATE.value], self.ops)[0]
        return dict(op=op, source=r.choice([s.value for s in WriteSource]), addr=addr,
                    bytes=r.choice([2, 32, 64, 64]), tile=r.randrange(1 << P.tile_width),
                    tag=r.randrange(1 << P.mem_tag_width))


class _Bench(Elaboratable):
    """The DRAM with ``cycle`` counted by a register from 0 and ``req`` driven by one signal
    (``offer``): one settling of the design per clock and per new offer."""

    def __init__(self, dut, params=P):
        self.dut = dut
        self.offer = Signal(data.StructLayout({"valid": 1,
                                               "req": mem_request_layout(params)}))

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = d = self.dut
        cycle = Signal(len(d.cycle))
        m.d.sync += cycle.eq(cycle + 1)
        m.d.comb += [d.cycle.eq(cycle), d.req.valid.eq(self.offer.valid),
                     d.req.payload.eq(self.offer.req)]
        return m


def _decisions(entries):
    """``{pc: [column access bank, (ACT?, bank) of the row command, refresh?]}`` of the
    commands the model decided in one cycle (its command log's new entries)."""
    out = {}
    for _, pc, cmd, _, bank, _, _ in entries:
        d = out.setdefault(pc, [None, None, False])
        if cmd == "REF":
            d[2] = True
        elif cmd in ("ACT", "PRE"):
            d[1] = (cmd == "ACT", bank)
        else:
            d[0] = bank
    return out


def _run(seed, cycles, hp=COSIM_HBM, *, params=P, rsp_depth=1024, busy=1.0, rsp_ready=0.85,
         dut_hp=None):
    """Drive the HDL (built with ``dut_hp``, default ``hp``) and ``HbmDram`` on ``hp`` side by
    side for ``cycles`` cycles, comparing every cycle; returns what was seen."""
    rng = random.Random(seed)
    print(f"seed={seed} cycles={cycles}")
    size = _size(hp)
    dut = HbmDramHdl(params, hbm=dut_hp or hp, rsp_depth=rsp_depth)
    model = HbmDram(random.Random(0), base=0, size_bytes=size, result_base=size // 2,
                    stall=0.0, hbm=hp)
    model.hbm.log = []                   # record the commands: compared with the HDL's
    traffic = _Traffic(rng, hp, busy)
    omax = (1 << params.occupancy_width) - 1
    seen = {"accepted": 0, "refused": 0, "responses": 0, "max_occupancy": 0, "max_reads": 0,
            "col": 0, "act": 0, "pre": 0, "col_and_row": 0, "saturated": 0}
    fields = ("op", "source", "addr", "bytes", "tile", "tag")

    bench = _Bench(dut, params)

    async def testbench(ctx):
        offered, shown = None, False
        held = None                      # the response the model offers, held until taken
        ctx.set(dut.result_base, size // 2)
        for c in range(cycles):
            assert ctx.get(dut.cycle) == c
            # drive: the model's port values for cycle c
            if held is None and model.responses:
                held = model.responses[0]
            if offered is None:
                offered = traffic.offer()
                if offered is not None:
                    ctx.set(bench.offer, {"valid": 1, "req": offered})
                elif c == 0 or shown:
                    ctx.set(bench.offer.valid, 0)
            shown = offered is not None
            ready = rng.random() < rsp_ready if c % 211 < 170 else False
            ctx.set(dut.rsp.ready, ready)
            m_ready = model.ready()
            assert ctx.get(dut.req.ready) == m_ready, c
            assert ctx.get(dut.occupancy) == min(model.occupancy, omax), c
            seen["max_occupancy"] = max(seen["max_occupancy"], model.occupancy)
            seen["saturated"] += model.occupancy > omax
            assert ctx.get(dut.idle) == (model.pending() == 0 and not model.responses), c
            assert ctx.get(dut.rsp.valid) == (held is not None), c
            if held is not None:
                got = (ctx.get(dut.rsp.payload.source).value, ctx.get(dut.rsp.payload.tag))
                assert got == (held["source"], held["tag"]), c
            # observe, then tick: the model takes, retries, completes and answers
            seq, logged = model.seq, len(model.hbm.log)
            if model.slot is not None:
                head = model.slot[0]
            elif offered is not None and m_ready:
                head = offered
                data = None if offered["op"] == MemOp.READ.value else \
                    np.zeros(offered["bytes"] // 2, np.float16)
                model.take(c, dict(offered), data)
                offered = None
            else:
                head = None
            if held is not None and ready:
                model.responses.popleft()
                held = None
                seen["responses"] += 1
            model.serve(c)
            reads = len(model.rob) + len(model.responses)
            seen["max_reads"] = max(seen["max_reads"], reads)
            assert reads <= rsp_depth, "the scenario outgrows the response buffer"
            decided = _decisions(model.hbm.log[logged:])
            for i, pc in enumerate(dut.pcs):
                col, row, ref = decided.get(i, (None, None, False))
                assert ctx.get(pc.refresh) == ref, (c, i)
                if ref:
                    continue
                assert ctx.get(pc.col_valid) == (col is not None), (c, i)
                if col is not None:
                    assert ctx.get(pc.col_bank) == col, (c, i)
                    seen["col"] += 1
                assert ctx.get(pc.row_valid) == (row is not None), (c, i)
                if row is not None:
                    assert (ctx.get(pc.row_act), ctx.get(pc.row_bank)) == row, (c, i)
                    seen["act" if row[0] else "pre"] += 1
                    seen["col_and_row"] += col is not None
            accepted = model.seq != seq
            seen["accepted" if accepted else "refused"] += head is not None
            assert ctx.get(dut.serve_valid) == accepted, c
            if accepted:
                s = ctx.get(dut.serve)
                got = (s.op.value, s.source.value, s.addr, s.bytes, s.tile, s.tag)
                assert got == tuple(head[k] for k in fields), c
            await ctx.tick()
        assert ctx.get(dut.r_writes) == model.r_writes
        assert ctx.get(dut.last_write) == model.last_write
        assert ctx.get(dut.error) == 0, (ctx.get(dut.error), ctx.get(dut.error_cycle))
        seen["refreshes"] = model.hbm.stats["refreshes"]
        seen.update({k: model.hbm.stats[k] for k in ("row_hits", "row_misses", "row_conflicts")})
        seen["r_writes"] = model.r_writes

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    print(seen)
    return seen


@pytest.mark.parametrize("hp, cycles, params, rsp_depth", [
    (COSIM_HBM, 8000, P, 1024),         # every PC refreshes twice (975, 1950, ..., 7800)
    (TIGHT, 6000, P, 256),              # full queues, drains, capped rows, default buffer
    (FAST_REFRESH, 6000, P6, 1024),     # 15 refreshes per PC, tFAW, a saturated port
    (ODD, 4000, P, 1024),               # two PCs: refreshes at 1950 and 3900
], ids=["cosim_hbm", "tight", "fast_refresh", "odd"])
def test_hbm_dram_hdl_matches_hbm_dram(hp, cycles, params, rsp_depth):
    seed = random.randrange(2**32)
    seen = _run(seed, cycles, hp, params=params, rsp_depth=rsp_depth)
    firsts = [hp.trefi * (i + 1) // hp.n_pcs for i in range(hp.n_pcs)]
    assert seen["refreshes"] == sum((cycles - 1 - f) // hp.trefi + 1 for f in firsts), seen
    assert min(seen[k] for k in ("col", "act", "refused")) > 0, seen
    if hp is ODD:                       # slow (two PCs, four bursts an access): matching
        return
    assert seen["accepted"] > cycles // 20 and seen["pre"] > 0, seen
    assert seen["responses"] > 20 and seen["r_writes"] > 0, seen
    assert min(seen[k] for k in ("row_hits", "row_misses", "row_conflicts")) > 0, seen
    if params is P6:
        assert seen["saturated"] > 0, seen


@pytest.mark.parametrize("hp, change", [
    (COSIM_HBM, dict(trcd_rd=15)),
    (COSIM_HBM, dict(twtr_s=4)),
    (TIGHT, dict(row_hit_cap=3)),
    (TIGHT, dict(write_low=2)),
    (FAST_REFRESH, dict(trefi=401)),
    (FAST_REFRESH, dict(tfaw=25)),
], ids=["trcd_rd", "twtr_s", "row_hit_cap", "write_low", "trefi", "tfaw"])
def test_the_comparison_notices_a_one_cycle_change(hp, change):
    """The HDL built with one timing or policy changed (a cycle, an entry) against the
    unchanged model: some cycle's comparison fails."""
    with pytest.raises(AssertionError) as info:
        _run(7, 2500, hp, dut_hp=hp.replace(**change))
    assert "response buffer" not in str(info.value)


def _simulate(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("req, what", [
    (dict(op=MemOp.STORE.value, addr=32, bytes=64), "across two granules"),
    (dict(op=MemOp.READ.value, addr=64, bytes=0), "0 bytes"),
    (dict(op=3, addr=128, bytes=64), "op code 3"),
])
def test_a_request_the_timing_cannot_follow_is_error_bit_0(req, what):
    """A request ``HbmModel`` would split into two accesses, or refuse: error bit 0 in the
    cycle it is accepted (it is still accepted, as one access)."""
    dut = HbmDramHdl(P)

    async def bench(ctx):
        ok = dict(op=MemOp.READ.value, source=0, addr=0, bytes=64, tile=0, tag=1)
        for c in range(12):
            ctx.set(dut.cycle, c)
            ctx.set(dut.rsp.ready, 1)
            ctx.set(dut.req.valid, c in (2, 5))
            bad = {**ok, **req} if c == 5 else ok
            ctx.set(dut.req.payload, {**bad, "op": bad["op"] & 1})
            ctx.set(dut.req.payload.op.as_value(), bad["op"])       # 3 is no MemOp
            if c in (2, 5):
                assert ctx.get(dut.serve_valid), (what, c)
            await ctx.tick()
        assert ctx.get(dut.error) == ERR_TIMING, what
        assert ctx.get(dut.error_cycle) == 5, what

    _simulate(dut, bench)


def test_a_read_beyond_the_response_buffer_is_error_bit_1():
    """Reads accepted while ``rsp`` is held back fill the response buffer; the third of a
    buffer of two sets error bit 1 in the cycle it is accepted, the first two still answer
    in order."""
    dut = HbmDramHdl(P, rsp_depth=2)

    async def bench(ctx):
        tags = []
        for c in range(120):
            ctx.set(dut.cycle, c)
            ctx.set(dut.req.valid, c < 3)
            ctx.set(dut.req.payload, dict(op=MemOp.READ.value, source=1, addr=64 * c, bytes=64,
                                          tile=0, tag=10 + c))
            ctx.set(dut.rsp.ready, c >= 80)
            if c < 3:
                assert ctx.get(dut.req.ready) and ctx.get(dut.serve_valid), c
            if c == 2:
                assert ctx.get(dut.error) == 0
            if ctx.get(dut.rsp.valid) and c >= 80:
                tags.append(ctx.get(dut.rsp.payload.tag))
            await ctx.tick()
        assert ctx.get(dut.error) == ERR_RSP
        assert ctx.get(dut.error_cycle) == 2
        assert tags == [10, 11]
        assert ctx.get(dut.idle)

    _simulate(dut, bench)


@pytest.mark.parametrize("kw, text", [
    (dict(rsp_depth=1), "rsp_depth must be an integer in [2, 65536], not 1"),
    (dict(rsp_depth=65537), "rsp_depth must be an integer in [2, 65536], not 65537"),
    (dict(hbm="COSIM_HBM"), "hbm must be an HbmParams, not 'COSIM_HBM'"),
    (dict(hbm=COSIM_HBM.replace(clock_ghz=1.4)),
     "hbm must count the caller's cycle in DRAM clocks (tck_ps * clock_ghz = 1000), "
     "not tck_ps=1000, clock_ghz=1.4"),
    (dict(hbm=COSIM_HBM.replace(interleave_bytes=256)),
     "hbm's bursts per granule must be at most ceil((tcl + talu) / (lanes * slot)) = 5, "
     "not 8"),
])
def test_bad_parameters_name_the_value_and_range(kw, text):
    with pytest.raises(ValueError) as info:
        HbmDramHdl(P, **kw)
    assert str(info.value) == text
