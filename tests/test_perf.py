# SPDX-License-Identifier: Apache-2.0
"""Performance model: closed forms, byte counts, arbiter policies, numerics, JSON shape."""

import json
import math

import numpy as np
import pytest

import t3hw.tools.paper as perf
from sim_models.engine_model import AddressMap, Arbiter, DmaDescriptor, Region
from sim_models.functional import ring_reduce_scatter_check
from sim_models.perf import (SystemConfig, dram_by_tp, simulate_sequential, simulate_t3,
                             summarize)
from sim_models.workloads import Workload, paper_workloads
from t3hw.spec.layouts import WriteKind

SMALL = Workload(model="Mega-GPT-2", tp=8, sublayer="OP", tokens=1024)
SMALL_FC = Workload(model="Mega-GPT-2", tp=4, sublayer="FC-2", tokens=1024)


@pytest.fixture(scope="module")
def runs():
    cfg = SystemConfig()
    out = {}
    for w in (SMALL, SMALL_FC):
        seq = simulate_sequential(w, cfg)
        out[w] = (seq, simulate_t3(w, cfg), simulate_t3(w, cfg, policy="t3_mca"))
    return cfg, out


# -- closed forms and byte counts ---------------------------------------------------------
@pytest.mark.parametrize("w", [SMALL, SMALL_FC])
def test_sequential_ring_matches_closed_form(runs, w):
    cfg, out = runs
    seq = out[w][0]
    n, total = w.tp, w.tokens * w.hidden * 2
    closed = cfg.ring(n).reduce_scatter_cycles(total)
    # extra per ring step, at most: one DRAM read latency (the chunk read before it is sent)
    # and four ring sub-steps (step_cycles / 4: the reads, the arrival, the write, the sum)
    slack = (n - 1) * (cfg.dram_latency_cycles + 4 * (cfg.step_cycles // 4))
    for phase in ("rs", "ag"):
        assert closed <= seq.cycles[phase] <= closed + slack


@pytest.mark.parametrize("w", [SMALL, SMALL_FC])
def test_gemm_phase_obeys_roofline(runs, w):
    cfg, out = runs
    seq = out[w][0]
    g = cfg.gpu
    compute = w.shape.flops / (g.cus * g.flops_per_cu_cycle)
    memory = (seq.traffic["gemm_reads"] + seq.traffic["gemm_writes"]) / cfg.dram().bytes_per_cycle
    assert seq.cycles["gemm"] >= max(compute, memory)
    tiles = math.ceil(w.tokens / g.tile_m) * math.ceil(w.hidden / g.tile_n)
    waves = math.ceil(tiles / g.cus)
    assert seq.cycles["gemm"] <= waves * 2 * g.tile_m * g.tile_n * w.shape.k / g.flops_per_cu_cycle \
        + memory + 4 * cfg.step_cycles


@pytest.mark.parametrize("w", [SMALL, SMALL_FC])
def test_byte_counts_per_class(runs, w):
    _, out = runs
    seq, t3, mca = out[w]
    n, total = w.tp, w.tokens * w.hidden * 2
    chunk = total // n
    assert seq.traffic["gemm_writes"] == total
    # NCCL's ring: the first send, then local + received at every step
    assert seq.traffic["rs_reads"] == (2 * n - 1) * chunk
    assert seq.traffic["rs_writes"] == n * chunk                # receive buffer, last sum
    for r in (seq, t3, mca):
        assert r.traffic["ag_reads"] == r.traffic["ag_writes"] == (n - 1) * chunk
    for r in (t3, mca):
        assert r.traffic["gemm_writes"] == (n - 1) * chunk      # stage 0 leaves as remote
        assert r.traffic["rs_reads"] == (n - 2) * chunk         # DMA reads, stages 1..N-2
        assert r.traffic["rs_writes"] == (n - 1) * chunk        # incoming NMC updates
        assert r.traffic["gemm_reads"] <= seq.traffic["gemm_reads"]


@pytest.mark.parametrize("w", [SMALL, SMALL_FC])
def test_t3_bounds(runs, w):
    cfg, out = runs
    seq, t3, mca = out[w]
    n, total = w.tp, w.tokens * w.hidden * 2
    link_bound = (n - 1) * (total // n) / cfg.ring(n).bytes_per_cycle
    ideal = max(seq.cycles["gemm"], seq.cycles["rs"]) + seq.cycles["ag"]
    assert ideal < seq.total
    for r in (t3, mca):
        assert r.cycles["ag"] == seq.cycles["ag"]
        assert r.cycles["gemm_rs"] >= link_bound
        assert r.total < seq.total
        # the GEMM inside the fused phase: done before the phase ends, and no faster than
        # its compute allows (the whole GEMM's flops spread over every CU)
        g = cfg.gpu
        assert w.shape.flops / (g.cus * g.flops_per_cu_cycle) <= r.cycles["gemm"] \
            <= r.cycles["gemm_rs"]


# -- arbiter policies ---------------------------------------------------------------------
def test_mca_grant_respects_threshold_and_starvation():
    rng = np.random.default_rng(7)
    arb = Arbiter(policy="t3_mca", threshold=5, starvation_limit=8)
    for _ in range(5000):
        occ = int(rng.integers(0, 10))
        compute, comm = bool(rng.random() < 0.7), bool(rng.random() < 0.8)
        waited = arb.wait
        g = arb.grant(compute_ready=compute, comm_ready=comm, occupancy=occ)
        if g == "comm":
            assert occ < 5 and not compute or waited >= 8
        if compute and waited < 8:
            assert g == "compute"
        assert arb.wait <= 8
    assert arb.forced > 0


def test_mca_rr_grant_alternates_below_threshold_only():
    """T3_MCA_RR: with both streams requesting, the grants alternate while the occupancy is
    below the threshold and go to compute at or above it until communication is forced."""
    arb = Arbiter(policy="t3_mca_rr", threshold=5, starvation_limit=8)
    below = [arb.grant(compute_ready=True, comm_ready=True, occupancy=3) for _ in range(10)]
    assert all(a != b for a, b in zip(below, below[1:])), below
    above = [arb.grant(compute_ready=True, comm_ready=True, occupancy=5) for _ in range(18)]
    assert [i for i, g in enumerate(above) if g == "comm"] == [8, 17], above
    mca = Arbiter(policy="t3_mca", threshold=5, starvation_limit=8)
    assert [mca.grant(compute_ready=True, comm_ready=True, occupancy=3)
            for _ in range(9)] == ["compute"] * 8 + ["comm"]


def test_mca_rr_split_shares_below_threshold():
    """The fluid T3_MCA_RR: below the threshold communication gets at least half the step
    (up to the queue room), where T3-MCA gives it only what compute leaves; at the threshold
    both give it nothing."""
    kw = dict(capacity=1e5, cycles=500, compute=1e5, comm=1e5, burst_bytes=256, latency=350)
    rr = Arbiter(policy="t3_mca_rr", threshold=1000, starvation_limit=10**6)
    mca = Arbiter(policy="t3_mca", threshold=1000, starvation_limit=10**6)
    assert rr.split(occupancy=10, **kw) == (5e4, 5e4)
    assert mca.split(occupancy=10, **kw) == (1e5, 0)
    assert rr.split(occupancy=1000, **kw) == mca.split(occupancy=1000, **kw) == (1e5, 0)
    room = Arbiter(policy="t3_mca_rr", threshold=20, starvation_limit=10**6)
    gc, gm = room.split(occupancy=10, **kw)
    assert gm == pytest.approx(10 * 256 * 500 / 350) and gc == 1e5 - gm


def test_mca_split_blocks_comm_above_threshold():
    arb = Arbiter(policy="t3_mca", threshold=100, starvation_limit=1000)
    gc, gm = arb.split(capacity=1e5, cycles=500, compute=0, comm=1e5, occupancy=100,
                       burst_bytes=256, latency=350)
    assert (gc, gm) == (0, 0)
    gc, gm = arb.split(capacity=1e5, cycles=500, compute=0, comm=1e5, occupancy=100,
                       burst_bytes=256, latency=350)
    assert gm == 256                               # waited 1000 cycles: one forced request
    gc, gm = arb.split(capacity=1e5, cycles=500, compute=0, comm=1e5, occupancy=50,
                       burst_bytes=256, latency=350)
    assert gm == pytest.approx(50 * 256 * 500 / 350)   # fills the queue up to the threshold


@pytest.mark.parametrize("policy", ["compute_first", "round_robin"])
@pytest.mark.parametrize("compute, comm", [(3, 40), (40, 3), (30, 30), (0, 12)])
def test_split_equals_per_request_grants(policy, compute, comm):
    slots, burst = 32, 64
    arb = Arbiter(policy=policy)
    pending = {"compute": compute, "comm": comm}
    for _ in range(slots):
        g = arb.grant(compute_ready=pending["compute"] > 0, comm_ready=pending["comm"] > 0,
                      occupancy=0)
        if g:
            pending[g] -= 1
    gc, gm = Arbiter(policy=policy).split(capacity=slots * burst, cycles=slots,
                                          compute=compute * burst, comm=comm * burst,
                                          occupancy=0, burst_bytes=burst)
    assert (gc / burst, gm / burst) == pytest.approx(
        (compute - pending["compute"], comm - pending["comm"]), abs=1)


def test_derived_threshold_rule():
    # threshold = max(1, ceil(q_sat * (1 + rate) / 2)), rate = compute grants / window cycles,
    # the window starting with the first compute grant
    arb = Arbiter(policy="t3_mca", window=1000, saturation=900)
    assert arb.measuring
    arb.measure(300, 0.0)                 # no compute grant yet: the window has not started
    arb.measure(500, 0.1)
    assert arb.measuring and arb.threshold is None
    arb.measure(500, 0.3)
    assert not arb.measuring and arb.threshold == 540 == math.ceil(900 * (1 + 0.2) / 2)
    # Little's law: n_gemm = rate * q_sat = 180 requests in flight, ceil((180 + 900) / 2)
    assert arb.threshold == math.ceil((0.2 * 900 + 900) / 2)
    arb.measure(500, 1.0)                 # the window is over: no further effect
    assert arb.threshold == 540


@pytest.mark.parametrize("rates, threshold", [
    ((1.0,), 900), ((0.5,), 675), ((1.0, 0.0, 0.0, 0.0), 563), ((0.0, 0.0), None)])
def test_derived_threshold_bounds(rates, threshold):
    # rate 1 (compute uses every request slot): saturation; a window of only idle cycles never
    # starts, so the arbiter stays compute-first
    arb = Arbiter(policy="t3_mca", window=512 * len(rates), saturation=900)
    for r in rates:
        arb.measure(512, r)
    assert arb.threshold == threshold
    assert arb.measuring == (threshold is None)


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_measure_rejects_rate_outside_unit_interval(rate):
    with pytest.raises(ValueError, match="compute_rate"):
        Arbiter(policy="t3_mca").measure(100, rate)


def test_derived_threshold_in_simulation(runs):
    cfg, out = runs
    q_sat = cfg.dram().saturation
    for w in (SMALL, SMALL_FC):
        mca = out[w][2]
        assert math.ceil(q_sat / 2) <= mca.mca_threshold <= math.ceil(q_sat)


def test_mca_with_tight_threshold_delays_comm(runs):
    cfg, out = runs
    strict = simulate_t3(SMALL, SystemConfig(mca_threshold=1), policy="t3_mca")
    assert strict.cycles["gemm_rs"] > out[SMALL][1].cycles["gemm_rs"]


@pytest.mark.parametrize("kwargs, match", [
    ({"policy": "fifo"}, "policy"), ({"policy": "t3_mca", "threshold": 0}, "threshold"),
    ({"policy": "t3_mca", "starvation_limit": 0}, "starvation_limit"),
])
def test_bad_arbiter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Arbiter(**kwargs)


# -- address map and DMA ------------------------------------------------------------------
def test_address_map_routes_and_counts_unmatched():
    m = AddressMap()
    m.add(Region(0, 100, "remote", device=3, remote_base=1000))
    m.add(Region(100, 100, "tracked"))
    assert m.route(10) == ("remote", 3, 1010)
    assert m.route(150) == ("tracked", -1, 150)
    assert m.route(500) == ("local", -1, 500) and m.unmatched == 1
    with pytest.raises(ValueError, match="overlaps"):
        m.add(Region(50, 100, "local"))


def test_dma_walk_in_order_never_crossing_rows():
    d = DmaDescriptor(src=1000, rows=2, row_bytes=160, pitch=512, dest_device=1, dest_addr=0,
                      op=WriteKind.UPDATE, dest_tile=5)
    bursts = [(b.src, b.dest, b.nbytes) for b in d.walk(64)]
    assert bursts == [(1000, 0, 64), (1064, 64, 64), (1128, 128, 32),
                      (1512, 512, 64), (1576, 576, 64), (1640, 640, 32)]
    with pytest.raises(ValueError, match="pitch"):
        DmaDescriptor(src=0, rows=2, row_bytes=64, pitch=32, dest_device=0, dest_addr=0,
                      op=WriteKind.STORE, dest_tile=0)


# -- numerics -----------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["t3", "sequential"])
@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_reduce_scatter_numerics(n, scheme):
    r = ring_reduce_scatter_check(n_gpus=n, scheme=scheme, seed=n)
    assert r["ok"], r
    assert r["max_abs_err"] <= r["max_bound"]
    if scheme == "sequential":
        # NCCL's ring, summed over the N GPUs: 2N - 1 chunk reads and N chunk writes each
        # (the GEMM wrote N chunks each)
        chunk = r["traffic"]["gemm_writes"] // (n * n)
        assert r["traffic"]["rs_reads"] == n * (2 * n - 1) * chunk
        assert r["traffic"]["rs_writes"] == n * n * chunk


# -- workloads, JSON and summary ----------------------------------------------------------
def test_paper_workloads():
    ws = paper_workloads()
    assert len([w for w in ws if w.tp != 32]) == 16 and len([w for w in ws if w.tp == 32]) == 12
    w = Workload(model="T-NLG", tp=16, sublayer="IP", tokens=8192)
    assert (w.shape.m, w.shape.k, w.shape.n) == (8192, 3 * 4256 // 16, 4256)
    with pytest.raises(ValueError, match="sublayer"):
        Workload(model="T-NLG", tp=8, sublayer="QK", tokens=1)


def test_summary_arithmetic():
    def cfg(seq, t3, mca, ideal, b_seq, b_mca):
        return {"cycles": {"sequential": seq, "t3": t3, "t3_mca": mca, "ideal": ideal},
                "dram_bytes": {"sequential": {"gemm_reads": b_seq}, "t3": {"gemm_reads": b_mca},
                               "t3_mca": {"gemm_reads": b_mca}}}
    s = summarize([cfg(200, 100, 100, 100, 100, 50), cfg(200, 200, 160, 125, 100, 80)])
    assert s["speedup_geomean"]["t3"] == pytest.approx(math.sqrt(2 * 1) - 1)
    assert s["speedup_geomean"]["t3_mca"] == pytest.approx(math.sqrt(2 * 1.25) - 1)
    assert s["speedup_max"]["ideal"] == pytest.approx(1.0)
    assert s["dram_reduction_geomean"] == pytest.approx(1 - math.sqrt(0.5 * 0.8))
    assert s["dram_reduction_max"] == pytest.approx(0.5)


def test_dram_by_tp_arithmetic():
    def cfg(tp, seq, mca):
        return {"tp": tp, "dram_bytes": {"sequential": seq, "t3_mca": mca}}
    def bytes_(rs_r, g_r, g_w, rs_w, ag=10):
        return {"rs_reads": rs_r, "gemm_reads": g_r, "gemm_writes": g_w, "rs_writes": rs_w,
                "ag_reads": ag, "ag_writes": ag}
    out = dram_by_tp([cfg(8, bytes_(40, 30, 10, 10), bytes_(10, 30, 8, 8)),
                      cfg(8, bytes_(90, 20, 20, 20), bytes_(10, 10, 15, 15)),
                      cfg(16, bytes_(20, 10, 10, 10), bytes_(10, 10, 10, 10, ag=11))])
    assert out["8"]["rs_reads"] == pytest.approx(math.sqrt(4 * 9))
    assert out["8"]["gemm_reads"] == pytest.approx(math.sqrt(1 * 2))
    assert out["8"]["writes_reduction"] == pytest.approx(1 - math.sqrt(0.8 * 0.75))
    assert out["8"]["ag_unchanged"] and not out["16"]["ag_unchanged"]
    assert (out["8"]["configs"], out["16"]["configs"]) == (2, 1)
    with pytest.raises(ValueError, match="non-empty"):
        dram_by_tp([])


def test_run_paper_json_shape(tmp_path, monkeypatch):
    small = [SMALL, Workload(model="GPT-3", tp=32, sublayer="OP", tokens=256)]
    monkeypatch.setattr(perf, "paper_workloads", lambda: small)
    res = perf.run_paper(str(tmp_path / "p.json"), str(tmp_path / "img"), progress=False)
    assert set(res) == {"configs", "summary", "summary_tp32", "dram_by_tp"}
    assert set(res["dram_by_tp"]) == {str(SMALL.tp), "32"}
    assert res["dram_by_tp"] == dram_by_tp(res["configs"])
    assert json.loads((tmp_path / "p.json").read_text())["summary"] == res["summary"]
    for c in res["configs"]:
        assert set(c) == {"model", "tp", "sublayer", "tokens", "cycles", "dram_bytes"}
        assert set(c["cycles"]) == {"sequential", "t3", "t3_mca", "t3_mca_rr", "ideal",
                                    "ideal_rs_nmc"}
        assert set(c["dram_bytes"]) == {"sequential", "t3", "t3_mca", "t3_mca_rr"}
        assert set(c["dram_bytes"]["t3"]) == set(perf.TRAFFIC_CLASSES)
    for key in ("summary", "summary_tp32"):
        s = res[key]
        assert set(s["speedup_geomean"]) == set(s["speedup_max"]) == \
            {"t3", "t3_mca", "t3_mca_rr", "ideal", "ideal_rs_nmc"}
        assert {"dram_reduction_geomean", "dram_reduction_max"} <= set(s)
    assert res["summary"] == summarize(res["configs"][:1])
    assert (tmp_path / "img" / "paper_speedup.png").exists()
    assert (tmp_path / "img" / "paper_dram.png").exists()


def test_a_table_runs_fc1_as_fc2_with_fc1s_own_figures(monkeypatch):
    """FC-1 has FC-2's GEMM shape (``same_gemm``): the table runs it once, and the entry it
    gives FC-1 is what a run of FC-1 itself gives."""
    from dataclasses import replace
    from sim_models.perf import run_workload
    from sim_models.workloads import same_gemm
    assert [same_gemm(s) for s in ("OP", "FC-2", "FC-1", "IP")] == ["OP", "FC-2", "FC-2", "IP"]
    fc1 = replace(SMALL_FC, sublayer="FC-1")
    ran = []
    monkeypatch.setattr(perf, "run_workload", lambda w, cfg: ran.append(w) or
                        run_workload(w, cfg))
    tp32 = Workload(model="GPT-3", tp=32, sublayer="OP", tokens=256)   # for summary_tp32
    monkeypatch.setattr(perf, "paper_workloads", lambda: [SMALL_FC, fc1, tp32])
    res = perf.run_paper(progress=False)
    assert ran == [SMALL_FC, tp32]
    alone = run_workload(fc1, SystemConfig())
    del alone["phases"]
    assert res["configs"][1] == alone and alone["sublayer"] == "FC-1"
    assert res["configs"][0] == dict(alone, sublayer="FC-2")


def test_ideal_rs_nmc():
    """The paper's Ideal-RS+NMC: the sequential RS with the reduction in memory (one read
    and one update per chunk and step, no reduction kernel). NCCL's kernel sends each
    step's sum from its registers; the in-memory sum must be read back first, so this RS is
    the kernel's plus at most a DRAM read and a model step per ring step, and no faster."""
    from sim_models.perf import _ring_sim, run_workload
    cfg = SystemConfig()
    w = SMALL
    n, total = w.tp, w.tokens * w.hidden * 2
    chunk = total // n
    rs_nmc, traffic = _ring_sim(w, cfg, "rs_nmc")
    assert traffic["rs_reads"] == traffic["rs_writes"] == (n - 1) * chunk
    r = run_workload(w, cfg)
    seq = r["phases"]["sequential"]
    assert r["phases"]["rs_nmc"]["rs"] == rs_nmc
    assert cfg.ring(n).reduce_scatter_cycles(total) <= seq["rs"] <= rs_nmc
    assert rs_nmc <= seq["rs"] + (n - 1) * (cfg.dram_latency_cycles + cfg.step_cycles)
    assert r["cycles"]["ideal_rs_nmc"] == max(seq["gemm"], rs_nmc) + seq["ag"]
    assert r["cycles"]["ideal"] <= r["cycles"]["ideal_rs_nmc"]


def test_gemm_reads_depend_on_l2_capacity():
    """The GEMM's DRAM reads come from an L2 of bounded capacity: SMALL_FC's B (3072 x 3072,
    18 MB) fits a 64-MB L2 (compulsory reads only) but not the paper's 16 MB, where the
    second wave (the last 16 tiles of tile row 3 of 4, columns 8 to 23 of 24) reads their
    B column-panels and row 3's A panel again; a larger L2 never reads more. T3 (outputs
    bypass the L2) reads no more than Sequential."""
    from sim_models.gpu import GemmProducer, GpuConfig
    prod = GemmProducer(shape=SMALL_FC.shape)
    compulsory = prod.min_read_bytes()
    a_bytes = SMALL_FC.shape.m * SMALL_FC.shape.k * 2
    b_bytes = SMALL_FC.shape.k * SMALL_FC.shape.n * 2
    reads = {}
    for mb in (4, 16, 64):
        cfg = SystemConfig(gpu=GpuConfig(l2_bytes=mb * 2**20))
        reads[mb] = simulate_sequential(SMALL_FC, cfg).traffic["gemm_reads"]
    assert reads[64] == pytest.approx(compulsory, rel=1e-4)
    assert reads[16] == pytest.approx(compulsory + 16 / 24 * b_bytes + a_bytes / 4, rel=1e-4)
    assert reads[4] >= reads[16] >= reads[64]
    t3 = simulate_t3(SMALL_FC, SystemConfig(gpu=GpuConfig(l2_bytes=4 * 2**20)))
    assert compulsory * (1 - 1e-4) <= t3.traffic["gemm_reads"] <= reads[4] * (1 + 1e-4)
