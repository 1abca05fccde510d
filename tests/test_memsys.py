# SPDX-License-Identifier: Apache-2.0
"""The performance model's HBM2 memory (sim_models/memsys.py) and the ``memory="hbm"``
switch of the performance model: sampling, conservation of bytes, bounded outstanding
loads, latency, per-channel arbitration, and a small workload end to end."""

import pytest

from sim_models.engine_model import Arbiter
from sim_models.hbm import HbmParams
from sim_models.hbm_dram import COSIM_HBM
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


def test_rr_backlog_reaches_every_channel_arbiter():
    """T3-MCA-RR's turn variants (``rr_backlog``, ``rr_fraction``) hold on every channel:
    short of its backlog the policy shares the slots as T3-MCA does, with it as T3-MCA-RR
    does, whose turn gives the ring more than T3-MCA's idle slots."""
    def comm_bytes(policy, backlog, rr_backlog=1 << 20):
        m = HbmMemory(mshrs=1 << 16)
        arb = Arbiter(policy=policy, threshold=2048, starvation_limit=1 << 20,
                      rr_fraction=0.5, rr_backlog=rr_backlog)
        arb.backlog = backlog
        gm = 0.0
        for _ in range(20):
            m.request("compute", 1 << 20, "gemm_reads")
            m.request("comm", 256 << 10, "rs_reads")
            gm += m.step(512, arb)[1]
        return gm
    mca, short, rr = (comm_bytes("t3_mca", 0), comm_bytes("t3_mca_rr", (1 << 20) - 1),
                      comm_bytes("t3_mca_rr", 1 << 20))
    print(f"\nthe ring's bytes: T3-MCA {mca:.0f}, T3-MCA-RR short of its backlog {short:.0f}, "
          f"with it {rr:.0f}")
    assert short == mca < rr


def test_read_latency_counts_the_wait_behind_the_other_class():
    """The GEMM's reads wait longer for their data when round robin lets the ring's reads
    in between them than alone, and less when T3-MCA holds the ring back above its
    threshold; each class's mean is counted apart."""
    def latencies(policy, threshold=None, comm=True):
        m = HbmMemory(mshrs=1 << 16)
        # T3-MCA's forced grants let the ring in now and then: its reads are counted too
        arb = Arbiter(policy=policy, threshold=threshold, starvation_limit=64)
        assert m.read_latency("compute") is None
        for _ in range(40):
            m.request("compute", 1 << 20, "gemm_reads")
            if comm:
                m.request("comm", 256 << 10, "rs_reads")
            m.step(512, arb)
        return m.read_latency("compute"), m.read_latency("comm")
    alone, _ = latencies("round_robin", comm=False)
    (c_rr, m_rr), (c_mca, m_mca) = latencies("round_robin"), latencies("t3_mca", 64)
    print(f"\nGEMM / ring read latency, cycles: alone {alone:.0f}, round robin {c_rr:.0f} / "
          f"{m_rr:.0f}, T3-MCA {c_mca:.0f} / {m_mca:.0f}")
    assert alone < c_rr and c_mca < c_rr and m_rr < m_mca


def test_bad_memory_configurations():
    with pytest.raises(ValueError, match="sample_pcs must be in \\[1, 64\\], not 0"):
        HbmMemory(sample_pcs=0)
    with pytest.raises(ValueError, match="burst_bytes must be hbm.interleave_bytes=256"):
        HbmMemory(burst_bytes=64)
    with pytest.raises(ValueError, match="port must be 'channel' or 'single', not 'x'"):
        HbmMemory(port="x")
    with pytest.raises(ValueError, match="sample_pcs must be hbm.n_pcs=64 with port='single'"):
        HbmMemory(port="single", sample_pcs=2)
    with pytest.raises(ValueError, match="fabric_cycles must be None or an integer"):
        HbmMemory(fabric_cycles=-1)
    with pytest.raises(ValueError, match="load_spacing must be None or an integer in \\[1, inf\\)"):
        SystemConfig(load_spacing=0)
    with pytest.raises(ValueError, match="hbm_port must be 'channel' or 'single'"):
        SystemConfig(hbm_port="both")
    with pytest.raises(ValueError, match="lookahead_steps must be a number in \\(0, inf\\]"):
        SystemConfig(lookahead_steps=0)
    with pytest.raises(ValueError, match="burst_bytes must be hbm.interleave_bytes=64"):
        SystemConfig(memory="hbm", hbm=COSIM_HBM)
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


def test_granules_of_the_cosimulation_memory_go_to_their_pseudo_channel():
    """64-B granules over 2 channels x 2 pseudo-channels: every granule is simulated, and
    the PC it is queued for is the one the HBM model decodes from its address."""
    m = HbmMemory(hbm=COSIM_HBM, sample_pcs=4, burst_bytes=64)
    got = m._granules(7 * 64, 64 * 9)
    assert got == [(7 + i) * 64 for i in range(9)]
    for a in got:
        assert m.pc_of[(a >> 6) % 4] == m.hbm._split(a, 64)[0][0]
    assert sorted(m.pc_of) == [0, 1, 2, 3] and m.scale == 1


def _single(**kw):
    return HbmMemory(hbm=COSIM_HBM, sample_pcs=4, burst_bytes=64, latency_cycles=64,
                     fabric_cycles=0, cus=8, port="single", **kw)


def test_single_port_grants_one_request_per_cycle_and_serves_every_byte():
    m = _single(mshrs=256)
    arb = Arbiter(policy="round_robin")
    m.request("compute", 64 * 3000, "gemm_reads")
    m.request("compute", 64 * 64, "gemm_writes", op=MemOp.UPDATE, region=(0, 16, 256, 4096))
    m.request("comm", 64 * 500, "rs_reads")
    m.request("comm", 64 * 500, "rs_writes", op=MemOp.UPDATE)
    submitted, t, served = 0, 0, [0.0, 0.0]
    while m.queued or m.slot or m.inflight or m.returns or m.hbm.occupancy:
        gc, gm = m.step(16, arb)
        served = [served[0] + gc, served[1] + gm]
        t += 16
        assert t < 100_000
    assert served == pytest.approx([64 * 3064, 64 * 1000])
    # one request per cycle at most: 4,064 requests need at least as many cycles
    assert t >= 3000 + 64 + 1000
    assert sum(m.loads) == 0 and m.hbm.occupancy == 0


def test_single_port_bounds_the_gpus_loads_and_blocks_behind_a_refused_request():
    m = _single(mshrs=40)
    arb = Arbiter(policy="compute_first")
    m.request("compute", 64 * 4000, "gemm_reads")
    peak = 0
    for _ in range(300):
        m.step(4, arb)
        peak = max(peak, sum(m.loads))
    assert peak == 40                          # the GPU's tags, not 40 per channel
    # Output rows 256 B apart: every granule on pseudo-channel 0, whose write queue fills.
    # The port then holds the refused write and grants nothing else, though the other
    # three channels are idle and the DMA's reads wait (head-of-line blocking, as at the
    # engine's dram port).
    m = _single(mshrs=256)
    arb = Arbiter(policy="round_robin")
    m.request("compute", 64 * 300, "gemm_writes", op=MemOp.STORE, region=(0, 300, 64, 256))
    m.request("comm", 64 * 300, "rs_reads")
    blocked = 0
    for _ in range(600):
        before = (m.slot, m.queued)
        m.step(1, arb)
        if m.slot is not None:
            _, op, addr, _ = m.slot
            write = op != MemOp.READ.value
            # refused at a full queue (one may have issued since, at the step's end)
            depth = COSIM_HBM.write_queue if write else COSIM_HBM.read_queue
            assert m.hbm.waiting(m.pc_of[(addr >> 6) % 4])[write] >= depth - 1
            if m.slot is before[0]:                         # still refused:
                assert m.queued == before[1]                # nothing granted behind it
                blocked += 1
    assert blocked > 50


def test_the_cosimulations_model_runs_on_the_cosimulations_memory():
    """``t3hw cosim --memory hbm``'s ``cycles.model`` is the performance model on the same
    HBM2 (all four pseudo-channels of COSIM_HBM behind one port and one arbiter, the GPU's
    load tags, no fabric, loads 4 KiB apart per compute unit), not the fluid memory."""
    from sim_models.cosim import model_cycles
    from t3hw.verif.cosim_scenarios import small
    cfg = small(4, memory="hbm", policy="t3_mca")
    m = cfg.system_config().dram()
    assert isinstance(m, HbmMemory) and m.p == COSIM_HBM and m.port == "single"
    assert m.k == m.n == 4 and m.scale == 1 and m.fabric == 0
    assert m.gpu_mshrs == 1 << cfg.params.load_tag_width
    assert [c[0] for c in m.cursors[:3]] == [0, 4096, 8192]
    assert small(4).system_config().memory == "fluid"
    r = model_cycles(cfg)
    assert r["t3"] > 0 and r["sequential"] > 0


def test_single_port_answers_reads_in_order_and_takes_loads_and_stores_in_turn():
    """As the co-simulation: the DRAM answers reads in request order (a read done early
    waits for the older ones), and inside a class the port takes reads and writes in turn
    while both wait (the arbiter's round-robin pointer)."""
    m = _single(mshrs=256)
    taken = []
    submit = m.hbm.submit

    def record(cycle, op, addr, nbytes, **kw):
        ok = submit(cycle, op, addr, nbytes, **kw)
        if ok:
            taken.append(op)
        return ok
    m.hbm.submit = record
    m.request("compute", 64 * 2000, "gemm_reads")
    m.request("compute", 64 * 200, "gemm_writes", op=MemOp.STORE, region=(0, 200, 64, 64))
    arb = Arbiter(policy="compute_first")
    released_max, seen = 0, set()
    for _ in range(400):
        m.step(8, arb)
        now = set(m.inflight)
        gone = seen - now
        if gone and now:
            assert max(gone) < min(now)       # every read released is older than any held
        released_max = max([released_max, *gone])
        seen |= now
    assert released_max > 0
    write = [op != MemOp.READ.value for op in taken[:400]]
    assert write[:8] in ([False, True] * 4, [True, False] * 4)
    assert sum(write[:400]) == 200                # the 200 stores, one in every two slots


def test_single_port_issues_the_gpus_loads_per_compute_unit_in_turn():
    """With ``load_spacing`` (the co-simulation's GPU), a compute unit's tile ``t`` reads
    from ``t * load_spacing`` on, its next tile from that tile's own start, and the units
    holding loads take the port in turn, one load each (``GpuCores.load``); a unit that
    asks later is not queued behind the others' earlier loads."""
    m = _single(mshrs=256, load_spacing=4096)
    taken = []
    submit = m.hbm.submit

    def record(cycle, op, addr, nbytes, **kw):
        ok = submit(cycle, op, addr, nbytes, **kw)
        if ok and op == MemOp.READ.value:
            taken.append(addr)
        return ok
    m.hbm.submit = record
    arb = Arbiter(policy="compute_first")
    # units 0 and 1 hold tiles 5 and 9 (3 and 2 loads); unit 2 asks for tile 2 later
    m.request("compute", 5 * 64, "gemm_reads", cus=[(5, 3 * 64), (9, 2 * 64), (-1, 0)])
    m.step(1, arb)
    m.request("compute", 2 * 64, "gemm_reads", cus=[(5, 0), (9, 0), (2, 2 * 64)])
    while m.queued or m.slot:
        m.step(1, arb)
    a, b, c = 5 * 4096, 9 * 4096, 2 * 4096
    assert taken == [a, b, c, a + 64, b + 64, c + 64, a + 128]
    # unit 0's next tile starts at its own first load, not after tile 5's last
    m.request("compute", 64, "gemm_reads", cus=[(7, 64)])
    while m.queued or m.slot:
        m.step(1, arb)
    assert taken[-1] == 7 * 4096
    assert m.traffic["gemm_reads"] == 8 * 64


class _Recorder:
    """An arbiter that grants communication and keeps the occupancy it was shown."""

    def __init__(self):
        self.seen = []

    def grant(self, *, compute_ready, comm_ready, occupancy):
        self.seen.append(occupancy)
        return "comm" if comm_ready else None


@pytest.mark.parametrize("sample_pcs", [1, 2, 4])
def test_the_gate_sees_the_whole_memorys_queue(sample_pcs):
    """T3-MCA's gate compares its threshold with the whole memory's waiting accesses: a
    sampled PC's queue stands for every PC's, so it is scaled by the PC count, whatever the
    number of PCs sampled."""
    m = HbmMemory(sample_pcs=sample_pcs)
    m.request("comm", 64 * 256 * 8, "rs_reads")          # 8 granules on every PC
    arbs = [_Recorder() for _ in range(sample_pcs)]
    m._grant_round(0, arbs)
    n = m.hbm.p.n_pcs
    for a in arbs:                                       # each grant adds one to its queue
        assert a.seen[:4] == [0, n, 2 * n, 3 * n], a.seen
