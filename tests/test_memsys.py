# SPDX-License-Identifier: Apache-2.0
"""The performance model's HBM2 memory (sim_models/memsys.py) and the ``memory="hbm"``
switch of the performance model: sampling, conservation of bytes, bounded outstanding
loads, latency, per-channel arbitration, and a small workload end to end."""

import pytest

from sim_models.engine_model import Arbiter
from sim_models.hbm import HbmParams
from sim_models.memsys import HbmMemory
from sim_models.perf import SystemConfig, simulate_sequential, simulate_t3
from sim_models.workloads import Workload
from t3hw.spec.layouts import MemOp

SMALL = Workload(model="Mega-GPT-2", tp=8, sublayer="OP", tokens=1024)


def _drain(m, arb, steps=400, dt=512):
    served = [0.0, 0.0]
    for _ in range(steps):
        gc, gm = m.step(dt, arb)
        served[0] += gc
        served[1] += gm
    return served


def test_sampling_takes_the_sampled_channels_share():
    m = HbmMemory(sample_pcs=4)
    got = m._granules(12345 * 256, 64 * 256 * 10)
    assert len(got) == 4 * 10
    assert all((a >> 8) & 63 < 4 for a in got)
    assert m._granules(5 * 256, 256) == []            # channel 5 is not sampled
    assert m.scale == 16 and m.mshrs == 4096 // 64


def test_every_byte_requested_is_served_once():
    m = HbmMemory()
    arb = Arbiter(policy="round_robin")
    m.request("compute", 3_000_000.5, "gemm_reads")
    m.request("compute", 65536, "gemm_writes", op=MemOp.UPDATE, region=(0, 256, 256, 6144))
    m.request("comm", 40960, "rs_reads")
    m.request("comm", 40960, "rs_writes", op=MemOp.UPDATE)
    served = _drain(m, arb)
    assert served == pytest.approx([3_000_000.5 + 65536, 81920])
    assert m.traffic["gemm_reads"] == 3_000_000 and m.traffic["rs_writes"] == 40960
    assert m.loads == [0, 0] and not m.inflight and m.hbm.occupancy == 0


def test_loads_are_bounded_and_see_the_latency():
    m = HbmMemory(mshrs=640)                           # 10 loads in flight per channel
    arb = Arbiter(policy="round_robin")
    m.request("compute", 8 << 20, "gemm_reads")
    peak = 0
    for _ in range(200):
        m.step(16, arb)
        peak = max(peak, *m.loads)
    assert peak == m.mshrs == 10
    # a lone 256-B load: about latency_cycles from request to data
    m = HbmMemory()
    m.request("compute", 256 * 64, "gemm_reads")      # one granule per channel
    t, served = 0, 0.0
    while not served:
        served, _ = m.step(8, arb)
        t += 8
    assert m.latency_cycles <= t <= m.latency_cycles + 16


def test_a_saturating_read_stream_gets_most_of_the_peak():
    m = HbmMemory(sample_pcs=4)
    arb = Arbiter(policy="round_robin")
    total = 64 << 20
    m.request("compute", total, "gemm_reads")
    t = 0
    served = 0.0
    while served < total:
        gc, _ = m.step(512, arb)
        served += gc
        t += 512
    eff = total / t / m.bytes_per_cycle
    print(f"\n80 load streams, 4096 loads in flight: {100 * eff:.1f}% of 1024 GB/s")
    assert 0.6 < eff <= 1.0


def test_mca_holds_communication_back_while_the_gemm_fills_the_queue():
    """Per channel, T3-MCA lets a communication request in only below its threshold of
    the real queue; round-robin shares the slots."""
    def comm_share(policy, threshold):
        m = HbmMemory(mshrs=1 << 16)
        arb = Arbiter(policy=policy, threshold=threshold, starvation_limit=1 << 20)
        gc = gm = 0.0
        for _ in range(40):
            m.request("compute", 1 << 20, "gemm_reads")
            m.request("comm", 256 << 10, "rs_reads")
            c, d = m.step(512, arb)
            gc, gm = gc + c, gm + d
        return gm / (gc + gm)
    rr, mca = comm_share("round_robin", None), comm_share("t3_mca", 64)
    print(f"\ncommunication's share of the bytes: round-robin {rr:.2f}, T3-MCA {mca:.2f}")
    assert mca < rr / 2


def test_bad_memory_configurations():
    with pytest.raises(ValueError, match="sample_pcs must be in \\[1, 32\\], not 0"):
        HbmMemory(sample_pcs=0)
    with pytest.raises(ValueError, match="burst_bytes must be 256"):
        HbmMemory(burst_bytes=64)
    with pytest.raises(ValueError, match="memory must be 'fluid' or 'hbm', not 'ddr'"):
        SystemConfig(memory="ddr")
    with pytest.raises(ValueError, match="load_slots must be an integer in \\[1, inf\\)"):
        SystemConfig(load_slots=0)
    with pytest.raises(ValueError, match="stream must be 'compute' or 'comm'"):
        HbmMemory().request("gpu", 256, "gemm_reads")
    with pytest.raises(ValueError, match="hbm must be an HbmParams or None"):
        SystemConfig(memory="hbm", hbm={"trfc": 300})
    assert SystemConfig(memory="hbm", hbm=HbmParams(trfc=300)).dram().p.trfc == 300


def test_perf_model_on_the_hbm_memory():
    fluid, hbm = SystemConfig(), SystemConfig(memory="hbm")
    seq_f, seq_h = simulate_sequential(SMALL, fluid), simulate_sequential(SMALL, hbm)
    t3 = simulate_t3(SMALL, hbm)
    mca = simulate_t3(SMALL, hbm, policy="t3_mca")
    for a, b in ((seq_h, seq_f), (t3, simulate_t3(SMALL, fluid))):
        assert a.traffic == pytest.approx(b.traffic, rel=1e-5)   # same bytes, other timing
    for r in (t3, mca):
        assert r.total < seq_h.total
    # the GEMM alone runs at its compute bound on either memory
    assert seq_h.cycles["gemm"] == pytest.approx(seq_f.cycles["gemm"], rel=0.05)
