# SPDX-License-Identifier: Apache-2.0
"""The HBM2 timing model (sim_models/hbm.py) alone: bandwidth against the pin peak and
against DRAMsim3 in DRAMsim3's own HBM2 configuration, every issued command against every
timing rule (and the checker against broken logs), FR-FCFS, write drain, the near-memory
update's cost, refresh, back-pressure, parameter errors. Figures: docs/dram.md."""

import pytest

from sim_models.hbm import Completion, HbmModel, HbmParams
from sim_models.hbm_check import DRAMSIM3_HBM2, check_log, refresh_times, run_stream
from t3hw.spec.layouts import MemOp

READ, STORE, UPDATE = MemOp.READ, MemOp.STORE, MemOp.UPDATE

#: DRAMsim3 (umd-memsys/DRAMsim3 at 29817593, configs/HBM2_8Gb_x128.ini with channels = 1,
#: 200,000 cycles, 64-B requests, one offered per cycle), ``average_bandwidth`` of 32 GB/s:
#: the runs are described in docs/dram.md, "Cross-check against DRAMsim3".
DRAMSIM3 = {"seq_read": 29.4256 / 32, "seq_write": 29.4371 / 32, "random_read": 7.85472 / 32,
            "random_mix": 7.84032 / 32}


def _one(p, op, addr, nbytes=256, cycle=0, tag=0):
    m = HbmModel(p, record=True)
    assert m.submit(cycle, op, addr, nbytes, tag=tag)
    return m, m.advance(cycle + 10000)


# -- bandwidth -----------------------------------------------------------------------------
def test_sequential_read_reaches_the_peak():
    """Peak: 64 pseudo-channels x 32 B per 2 ns = 1024 GB/s (731 B per 1.4-GHz cycle); the
    stream loses the refresh (trfc / trefi = 6.7%) and reaches 99% of the rest."""
    p = HbmParams()
    assert p.peak_gbs == 1024.0
    assert p.peak_bytes_per_cycle == pytest.approx(731.43, abs=0.01)
    r = run_stream(p, cycles=6000)
    print(f"\nsequential read: {r['gbs']:.1f} GB/s, {100 * r['efficiency']:.1f}% of peak, "
          f"{100 * r['efficiency'] / p.refresh_efficiency:.1f}% of the refresh-free peak")
    assert 0.97 * p.refresh_efficiency <= r["efficiency"] <= p.refresh_efficiency
    w = run_stream(p, cycles=6000, read_frac=0.0)
    print(f"sequential write: {100 * w['efficiency']:.1f}% of peak")
    assert 0.97 * p.refresh_efficiency <= w["efficiency"] <= p.refresh_efficiency


@pytest.mark.parametrize("name, kw", [
    ("seq_read", {}),
    ("seq_write", {"read_frac": 0.0}),
    ("random_read", {"pattern": "random"}),
    ("random_mix", {"pattern": "random", "read_frac": 2 / 3}),
])
def test_matches_dramsim3_in_its_hbm2_configuration(name, kw):
    """Same organisation, timings, request size and generator as the DRAMsim3 runs."""
    p = HbmParams().replace(**DRAMSIM3_HBM2)
    r = run_stream(p, nbytes=64, per_cycle=1, cycles=30000, warmup=6000, **kw)
    print(f"\n{name}: model {100 * r['efficiency']:.1f}%, DRAMsim3 {100 * DRAMSIM3[name]:.1f}%")
    assert r["efficiency"] == pytest.approx(DRAMSIM3[name], abs=0.02)


def test_random_and_mixed_traffic_at_the_paper_configuration():
    """Random 256-B reads and 2:1 read/write: every access a row miss or conflict, the
    bandwidth set by activations and turnarounds, well under the sequential stream."""
    p = HbmParams()
    seq = run_stream(p, cycles=4000)["efficiency"]
    rnd = run_stream(p, pattern="random", stash=64, cycles=4000)
    mix = run_stream(p, pattern="random", read_frac=2 / 3, stash=64, cycles=4000)
    print(f"\nrandom read {100 * rnd['efficiency']:.1f}%, 2:1 mix {100 * mix['efficiency']:.1f}%,"
          f" row hits {100 * rnd['hit_rate']:.1f}%")
    assert rnd["hit_rate"] < 0.01 and mix["hit_rate"] < 0.01
    for r in (rnd, mix):
        assert 0.6 < r["efficiency"] < seq


# -- timing rules --------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [
    {},
    {"pattern": "random", "read_frac": 2 / 3, "nbytes": 64, "stash": 64},
    {"pattern": "random", "read_frac": 0.5, "op": UPDATE, "stash": 64},
    {"pattern": "seq", "read_frac": 0.5, "op": UPDATE, "nbytes": 96},
], ids=["seq_read", "random_mix_64", "random_update_mix", "seq_update_mix_unaligned"])
def test_no_timing_rule_is_ever_broken(kw):
    p = HbmParams(read_queue=8, write_queue=12, write_high=8, write_low=2, row_hit_cap=2)
    r = run_stream(p, cycles=2500, warmup=500, footprint=1 << 22, record=True, **kw)
    m = r["model"]
    assert check_log(p, m.log) == []
    cols = [e for e in m.log if e[2] in ("RD", "WR", "UWR")]
    assert len(cols) * p.burst_bytes >= sum(m.bytes.values())
    assert m.stats["row_hits"] + m.stats["row_misses"] + m.stats["row_conflicts"] == \
        m.stats["accesses"] > 100


def _pc_log(*cmds):
    return [(t, 0, c, bg, bank, row, col) for t, c, bg, bank, row, col in cmds]


P1 = HbmParams(clock_ghz=1.0)
#: One valid command sequence per rule, and the command to move one cycle earlier to break
#: it: (rule, parameter changes, commands, index of the command, words of the message).
RULES = [
    ("tRCD", {}, [(0, "ACT", 0, 0, 7, -1), (14, "RD", 0, 0, 7, 0)], 1, "after ACT"),
    ("tRAS", {}, [(0, "ACT", 0, 0, 7, -1), (34, "PRE", -1, 0, -1, -1)], 1, "tRAS"),
    ("tRP", {}, [(0, "ACT", 0, 0, 7, -1), (34, "PRE", -1, 0, -1, -1),
                 (48, "ACT", 0, 0, 8, -1)], 2, "tRP"),
    ("tRC", {"trc": 50}, [(0, "ACT", 0, 0, 7, -1), (34, "PRE", -1, 0, -1, -1),
                          (50, "ACT", 0, 0, 8, -1)], 2, "tRC"),
    ("tRRD_S", {}, [(0, "ACT", 0, 0, 7, -1), (4, "ACT", 1, 4, 7, -1)], 1, "tRRD_S"),
    ("tRRD_L", {"trrd_l": 6}, [(0, "ACT", 0, 0, 7, -1), (6, "ACT", 0, 1, 7, -1)], 1, "tRRD_L"),
    ("tFAW", {"tfaw": 20}, [(0, "ACT", 0, 0, 1, -1), (4, "ACT", 1, 4, 1, -1),
                            (8, "ACT", 2, 8, 1, -1), (12, "ACT", 3, 12, 1, -1),
                            (20, "ACT", 0, 1, 1, -1)], 4, "tFAW"),
    ("tCCD_S", {}, [(0, "ACT", 0, 0, 7, -1), (4, "ACT", 1, 4, 7, -1), (18, "RD", 0, 0, 7, 0),
                    (20, "RD", 1, 4, 7, 0)], 3, "tCCD_S"),
    ("tCCD_L", {}, [(0, "ACT", 0, 0, 7, -1), (14, "RD", 0, 0, 7, 0),
                    (18, "RD", 0, 0, 7, 1)], 2, "tCCD_L"),
    ("tRTP", {}, [(0, "ACT", 0, 0, 7, -1), (30, "RD", 0, 0, 7, 0),
                  (35, "PRE", -1, 0, -1, -1)], 2, "tRTP"),
    ("tWR", {}, [(0, "ACT", 0, 0, 7, -1), (12, "WR", 0, 0, 7, 0),
                 (35, "PRE", -1, 0, -1, -1)], 2, "tWR"),
    ("tWTR_S", {}, [(0, "ACT", 0, 0, 7, -1), (4, "ACT", 1, 4, 7, -1), (12, "WR", 0, 0, 7, 0),
                    (25, "RD", 1, 4, 7, 0)], 3, "tWTR_S"),
    ("tWTR_L", {}, [(0, "ACT", 0, 0, 7, -1), (12, "WR", 0, 0, 7, 0),
                    (27, "RD", 0, 0, 7, 1)], 2, "tWTR_L"),
    ("tRTW", {}, [(0, "ACT", 0, 0, 7, -1), (14, "RD", 0, 0, 7, 0),
                  (27, "WR", 0, 0, 7, 1)], 2, "tRTW"),
    ("tRFC", {}, [(0, "REF", -1, -1, -1, -1), (260, "ACT", 0, 0, 7, -1)], 1, "tRFC"),
    ("REF after PRE", {}, [(0, "ACT", 0, 0, 7, -1), (34, "PRE", -1, 0, -1, -1),
                           (48, "REF", -1, -1, -1, -1)], 2, "REF before"),
    ("row bus", {}, [(0, "ACT", 0, 0, 7, -1), (34, "PRE", -1, 0, -1, -1),
                     (35, "ACT", 1, 4, 7, -1)], 2, "row bus"),
    ("tALU", {}, [(0, "ACT", 0, 0, 7, -1), (14, "URD", 0, 0, 7, 0),
                  (32, "UWR", 0, 0, 7, 0)], 2, "URD"),
]


@pytest.mark.parametrize("rule, changes, cmds, k, words", RULES, ids=[r[0] for r in RULES])
def test_checker_catches_each_rule(rule, changes, cmds, k, words):
    """Each sequence passes as written and fails with its command one cycle earlier: the
    checker is not a tautology."""
    p = P1.replace(**changes)
    assert check_log(p, _pc_log(*cmds)) == [], rule
    broken = list(cmds)
    broken[k] = (cmds[k][0] - 1,) + cmds[k][1:]
    errors = check_log(p, _pc_log(*broken))
    assert any(words in e for e in errors), (rule, errors)


def test_checker_catches_state_errors():
    act = (0, "ACT", 0, 0, 7, -1)

    def says(words, *cmds):
        return any(words in e for e in check_log(P1, _pc_log(*cmds)))

    assert says("open row", (14, "RD", 0, 0, 7, 0))
    assert says("open row 7", act, (14, "RD", 0, 0, 8, 0))
    assert says("ACT to open", act, (60, "ACT", 0, 0, 8, -1))
    assert says("REF with a bank open", act, (300, "REF", -1, -1, -1, -1))
    assert says("without its URD", act, (40, "UWR", 0, 0, 7, 3))
    # two reads on one data bus slot (tccd_s = 1 < tbl = 2 here)
    p = P1.replace(tccd_s=1, tccd_l=1)
    assert any("data bus" in e for e in check_log(p, _pc_log(
        (0, "ACT", 0, 0, 7, -1), (4, "ACT", 1, 4, 7, -1), (18, "RD", 0, 0, 7, 0),
        (19, "RD", 1, 4, 7, 0))))


# -- scheduling ----------------------------------------------------------------------------
def _addr(p, **f):
    return p.address(**{"ch": 31, "pc": 1, **f})     # PC 63: its first refresh is at trefi


def test_fr_fcfs_serves_the_younger_row_hit_first():
    p = P1
    m = HbmModel(p, record=True)
    assert m.submit(0, READ, _addr(p, ro=5), 64, tag="open")
    m.advance(20)                                     # row 5 of bank 0 is open
    assert m.submit(21, READ, _addr(p, ro=9), 64, tag="conflict")
    assert m.submit(21, READ, _addr(p, ro=5, co=1), 64, tag="hit")
    order = [c.tag for c in m.advance(2000)]
    assert order == ["open", "hit", "conflict"]
    assert (m.stats["row_hits"], m.stats["row_misses"], m.stats["row_conflicts"]) == (1, 1, 1)
    assert check_log(p, m.log) == []


def test_row_hit_cap_lets_an_older_miss_through():
    p = P1.replace(row_hit_cap=2)
    m = HbmModel(p, record=True)
    assert m.submit(0, READ, _addr(p, ro=5), 32, tag="open")
    m.advance(20)
    assert m.submit(21, READ, _addr(p, ro=9), 32, tag="miss")
    for k in range(1, 6):
        assert m.submit(21, READ, _addr(p, ro=5, offset=32 * k), 32, tag=f"hit{k}")
    order = [c.tag for c in m.advance(3000)]
    assert order.index("miss") == 2                   # after the cap's second access
    assert check_log(p, m.log) == []


def test_write_drain_watermarks():
    p = P1.replace(write_high=8, write_low=2, read_queue=16, write_queue=16)
    m = HbmModel(p, record=True)
    for k in range(7):                                # below the high watermark
        assert m.submit(0, STORE, _addr(p, ba=k % 4, bg=k // 4, ro=k), 64)
    for k in range(12):
        assert m.submit(0, READ, _addr(p, ba=k % 4, bg=k // 4, ro=100 + k), 64)
    m.advance(5000)
    kinds = [e[2] for e in sorted(m.log) if e[2] in ("RD", "WR")]
    assert kinds.index("WR") == len([k for k in kinds if k == "RD"])   # reads first
    m = HbmModel(p, record=True)
    for k in range(12):
        assert m.submit(0, READ, _addr(p, ba=k % 4, bg=k // 4, ro=100 + k), 64)
    for k in range(8):                                # reaches write_high: drain
        assert m.submit(0, STORE, _addr(p, ba=k % 4, bg=k // 4, ro=k), 64)
    m.advance(5000)
    kinds = [e[2] for e in sorted(m.log) if e[2] in ("RD", "WR")]
    # the drain writes down to write_low (2 left) before the reads come back
    assert kinds[:2 * 6] == ["WR"] * 12
    assert check_log(p, m.log) == []


# -- near-memory update --------------------------------------------------------------------
def test_update_costs_more_than_store_by_the_documented_amount():
    """Isolated 256-B access to a closed bank: the update's last write comes
    ``(trcd_rd - trcd_wr) + w * step`` later than a store's, with ``w = max(n, ceil((tcl +
    talu) / step))`` (docs/dram.md)."""
    p = P1
    step = p.slot * p.lanes
    n = 256 // p.burst_bytes
    w = max(n, -(-(p.tcl + p.talu) // step))
    _, st = _one(p, STORE, _addr(p))
    _, up = _one(p, UPDATE, _addr(p))
    assert up[0].done - st[0].done == (p.trcd_rd - p.trcd_wr) + w * step
    assert st[0].done == p.trcd_wr + (n - 1) * step + p.tcwl + p.tbl     # ACT at cycle 0
    _, small = _one(p, UPDATE, _addr(p), nbytes=64)   # 2 bursts: the ALU latency shows
    assert small[0].done - _one(p, STORE, _addr(p), nbytes=64)[1][0].done == \
        (p.trcd_rd - p.trcd_wr) + max(2, -(-(p.tcl + p.talu) // step)) * step


def test_update_stream_runs_at_half_the_store_stream():
    p = HbmParams()
    st = run_stream(p, read_frac=0.0, cycles=4000)["efficiency"]
    up = run_stream(p, read_frac=0.0, op=UPDATE, cycles=4000)
    print(f"\nstore stream {100 * st:.1f}%, update stream {100 * up['efficiency']:.1f}%")
    assert up["efficiency"] == pytest.approx(st / 2, rel=0.03)
    assert check_log(p, run_stream(p, read_frac=0.0, op=UPDATE, cycles=1500, warmup=100,
                                   record=True)["model"].log) == []


# -- refresh -------------------------------------------------------------------------------
def test_refresh_every_trefi_when_idle():
    p = HbmParams()
    m = HbmModel(p, record=True)
    m.advance(20000)                                  # 14285 DRAM cycles, no request
    refs = refresh_times(m.log)
    assert len(refs) == p.n_pcs
    for pc, times in refs.items():
        first = p.trefi * (pc + 1) // p.n_pcs
        assert times == list(range(first, 14286, p.trefi)), pc
    assert m.stats["refreshes"] == sum(len(t) for t in refs.values())


def test_refresh_keeps_its_interval_under_load():
    p = HbmParams()
    r = run_stream(p, pattern="random", read_frac=2 / 3, cycles=12000, warmup=100, stash=64,
                   record=True)
    for pc, times in refresh_times(r["model"].log).items():
        first = p.trefi * (pc + 1) // p.n_pcs
        for k, t in enumerate(times):                 # each within a row cycle of its due time
            assert 0 <= t - (first + k * p.trefi) <= p.trc + p.twr + p.tcwl + 64
        assert len(times) >= len(range(first, 12000 * 5 // 7 - 150, p.trefi))


# -- API -----------------------------------------------------------------------------------
def test_back_pressure_and_occupancy():
    p = P1.replace(read_queue=4, write_queue=2, write_high=2, write_low=0)
    m = HbmModel(p)
    for k in range(4):
        assert m.can_accept(READ, _addr(p, ro=k), 64)
        assert m.submit(0, READ, _addr(p, ro=k), 64)
    assert not m.can_accept(READ, _addr(p, ro=9), 64)
    assert m.submit(0, READ, _addr(p, ro=9), 64) is False
    assert m.submit(0, STORE, _addr(p, ro=9), 64)     # the write queue is separate
    assert m.occupancy == 5 and m.occupancies[63] == 5 and sum(m.occupancies) == 5
    assert m.waiting(63) == (4, 1) and m.waiting(0) == (0, 0)
    # a request over two PCs is refused whole when one is full, and queues nothing
    two = _addr(p, ro=1) + p.interleave_bytes - 64
    assert p.decode(two + 64)["pc"] != p.decode(two)["pc"]
    assert m.submit(0, READ, two, 128) is False and m.occupancy == 5
    m.advance(500)
    assert m.occupancy == 0 and m.submit(501, READ, two, 128)
    done = m.advance(2000)
    assert [c.nbytes for c in done] == [128] and m.next_event() is not None


def test_completions_counters_and_determinism():
    p = HbmParams()
    runs = [run_stream(p, pattern="random", read_frac=0.5, op=UPDATE, cycles=1500,
                       warmup=100, record=True)["model"] for _ in range(2)]
    assert runs[0].log == runs[1].log and runs[0].stats == runs[1].stats
    m = HbmModel(p)
    assert m.submit(0, READ, 0, 256, source="gemm", tag=1)
    assert m.submit(3, UPDATE, 1 << 20, 512, source="rs", tag=2)
    done = []
    while len(done) < 2:
        done += m.advance(m.next_event())
    assert [c.tag for c in done] == [1, 2]
    assert isinstance(done[0], Completion) and done[0].submitted == 0
    assert all(c.done >= c.submitted for c in done)
    assert m.bytes == {("gemm", READ.value): 256, ("rs", UPDATE.value): 512}


@pytest.mark.parametrize("field, value, words", [
    ("channels", 3, "power of two"),
    ("channels", 0, "[1, 1024], not 0"),
    ("tcl", 0, "tcl must be an integer in [1, 200], not 0"),
    ("trcd_rd", 2.5, "not 2.5"),
    ("trc", 40, "trc must be in [tras + trp = 48"),
    ("trefi", 200, "trefi must be in [trfc + 1 = 261"),
    ("interleave_bytes", 2048, "interleave_bytes must be in [burst_bytes=32, row_bytes=1024]"),
    ("interleave_bytes", 16, "interleave_bytes must be in [burst_bytes=32"),
    ("mapping", ("ch", "pc", "bg", "co", "ba"), "mapping must be a tuple"),
    ("mapping", ["ch", "pc", "bg", "co", "ba", "ro"], "mapping must be a tuple"),
    ("write_high", 40, "write_high must be in [1, write_queue=32], not 40"),
    ("write_low", 26, "write_low must be in [0, write_high - 1 = 25], not 26"),
    ("clock_ghz", 0, "clock_ghz must be a number in [0.01, 100], not 0"),
    ("read_queue", True, "not True"),
])
def test_bad_parameters_raise(field, value, words):
    with pytest.raises(ValueError) as e:
        HbmParams(**{field: value})
    assert words in str(e.value)


def test_bad_requests_raise():
    m = HbmModel()
    with pytest.raises(ValueError, match="addr must be an integer in \\[0, inf\\), not -1"):
        m.submit(0, READ, -1, 64)
    with pytest.raises(ValueError, match="nbytes must be an integer in \\[1, inf\\), not 0"):
        m.submit(0, READ, 0, 0)
    with pytest.raises(ValueError):
        m.submit(0, 3, 0, 64)
    assert m.submit(10, READ, 0, 64)
    with pytest.raises(ValueError, match="cycle must be in \\[10, inf\\)"):
        m.submit(9, READ, 0, 64)
    with pytest.raises(ValueError, match="cycle must be in \\[10, inf\\)"):
        m.advance(5)
    with pytest.raises(ValueError, match="params must be an HbmParams"):
        HbmModel(params={"channels": 1})
    with pytest.raises(ValueError, match="ro must be in \\[0, 32767\\], not 40000"):
        HbmParams().address(ro=40000)
