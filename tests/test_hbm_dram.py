# SPDX-License-Identifier: Apache-2.0
"""The co-simulation's HBM2 DRAM (:class:`sim_models.hbm_dram.HbmDram`) alone.

Random interleavings of reads, stores and updates at a few hot addresses are driven through
it, cycle by cycle as :class:`sim_models.cosim.SystemEnv` does (``ready``, ``take``,
``serve``), with small controller queues so that requests are refused and complete out of
order. Checked against a plain reference that applies every request in request order: the
DMA reads' data, the final memory, the responses' order, that nothing is lost, and that
:attr:`~sim_models.hbm_dram.HbmDram.occupancy` is the HBM model's queue.
"""

import random

import numpy as np
import pytest

from sim_models.dram import NmcDram
from sim_models.hbm_dram import COSIM_HBM, HbmDram
from t3hw.spec.layouts import MemOp, WriteSource

BASE = 1 << 20
SIZE = 1 << 16
RESULT = BASE + SIZE // 2
BURST = 64
#: Small queues: refusals and write drains happen within a few requests.
TIGHT = COSIM_HBM.replace(read_queue=2, write_queue=3, write_high=2, write_low=1)
_OPS = (MemOp.READ.value, MemOp.STORE.value, MemOp.UPDATE.value)


def _requests(rng, n, hot=8):
    """``n`` random requests (request dict, data or None) over ``hot`` 64-B bursts spread
    over pseudo-channels, banks and rows, half of them in the results."""
    spots = sorted({BASE + rng.randrange(SIZE // BURST) * BURST for _ in range(hot)})
    out = []
    for tag in range(n):
        op = rng.choice(_OPS)
        addr = rng.choice(spots)
        if op == MemOp.READ.value:
            src = rng.choice((WriteSource.DMA.value, WriteSource.COMPUTE.value))
            out.append((dict(op=op, source=src, addr=addr, bytes=BURST, tag=tag % 64), None))
        else:
            src = rng.choice((WriteSource.COMPUTE.value, WriteSource.REMOTE.value))
            data = rng.choice((-2, -1, 1, 2, 3)) * np.ones(BURST // 2, np.float16)
            data[rng.randrange(BURST // 2)] = rng.randrange(-4, 5)
            out.append((dict(op=op, source=src, addr=addr, bytes=BURST, tag=0), data))
    return out


def _reference(reqs):
    """Every request applied in request order: ``(memory, DMA snapshots, responses)``."""
    mem = np.zeros(SIZE // 2, np.float16)
    snaps, responses = [], []
    for req, data in reqs:
        i = (req["addr"] - BASE) // 2
        span = slice(i, i + BURST // 2)
        if req["op"] == MemOp.READ.value:
            if req["source"] == WriteSource.DMA.value:
                snaps.append(mem[span].copy())
            responses.append({"source": req["source"], "tag": req["tag"]})
        elif req["op"] == MemOp.STORE.value:
            mem[span] = data
        else:
            mem[span] += data
    return mem, snaps, responses


def _drive(dram, reqs, rng, *, offer=0.7, check=None, limit=200_000):
    """Offer ``reqs`` in order, each cycle with probability ``offer`` (held until taken, as a
    stream holds ``valid``); returns ``(DMA data, responses, cycles, refusals)``."""
    snaps, responses = [], []
    i = cycle = refused = 0
    offered = False
    while i < len(reqs) or dram.pending():
        assert cycle < limit, f"stuck at cycle {cycle}: {dram.pending()} pending"
        offered = offered or (i < len(reqs) and rng.random() < offer)
        if offered and dram.ready():
            dram.take(cycle, *reqs[i])
            i, offered = i + 1, False
        elif offered:
            refused += 1
        dram.serve(cycle)
        if check:
            check(dram)
        snaps += dram.dma_data
        responses += dram.responses
        dram.dma_data.clear()
        dram.responses.clear()
        cycle += 1
    return snaps, responses, cycle, refused


def _hbm(seed, params=TIGHT):
    return HbmDram(random.Random(seed), base=BASE, size_bytes=SIZE, result_base=RESULT,
                   hbm=params)


@pytest.mark.parametrize("seed", range(6))
def test_data_in_request_order_under_random_interleavings(seed):
    rng = random.Random(seed)
    reqs = _requests(rng, 600)
    dram = _hbm(seed)
    done = []
    advance = dram.hbm.advance
    dram.hbm.advance = lambda c: _record(advance, c, done)
    snaps, responses, _, _ = _drive(dram, reqs, rng)
    mem, want, want_rsp = _reference(reqs)
    assert len(snaps) == len(want)
    for k, (got, exp) in enumerate(zip(snaps, want)):
        assert np.array_equal(got, exp), f"seed {seed}: DMA read {k} saw {got} not {exp}"
    assert np.array_equal(dram.view(BASE, SIZE), mem), f"seed {seed}: final memory differs"
    assert responses == want_rsp, f"seed {seed}: responses not in request order"
    # the banks really served out of request order, so the order above is the model's work
    seqs = [c.tag for c in done]
    assert seqs != sorted(seqs), f"seed {seed}: the HBM model completed everything in order"
    reads = [c.tag for c in done if c.op == MemOp.READ.value]
    assert reads != sorted(reads) and dram.late_reads > 0, f"seed {seed}: no read reordered"


def _record(advance, cycle, done):
    """``advance(cycle)``, its completions also kept in ``done``."""
    out = advance(cycle)
    done.extend(out)
    return out


def test_same_data_as_the_fixed_latency_dram():
    """The fixed-latency, in-order DRAM and the HBM2 one end with the same bytes, the same
    DMA data and the same responses for one request stream (the HBM2 one's timing only
    differs)."""
    rng = random.Random(7)
    reqs = _requests(rng, 800, hot=16)
    fixed = NmcDram(random.Random(7), base=BASE, size_bytes=SIZE, result_base=RESULT,
                    latency=5, stall=0.0)
    a = _drive(fixed, reqs, random.Random(1), offer=1.0)
    b = _drive(_hbm(7), reqs, random.Random(1), offer=1.0)
    assert all(np.array_equal(x, y) for x, y in zip(a[0], b[0])) and len(a[0]) == len(b[0])
    assert a[1] == b[1]
    assert a[2] != b[2], "the two timings should differ"


def test_back_pressure_when_the_queues_are_full_nothing_lost():
    """Reads and updates to one pseudo-channel, offered every cycle: its 2-entry read and
    3-entry write queues fill, the port refuses (``ready`` low), and every request is still
    served exactly once (every read answered, every update added)."""
    p = TIGHT
    same_pc = [BASE + k * p.row_bytes * p.n_pcs for k in range(8)]   # pc 0, other bank/row
    reqs = []
    for k in range(200):
        addr = same_pc[k % len(same_pc)]
        if k % 3:
            reqs.append((dict(op=MemOp.UPDATE.value, source=WriteSource.REMOTE.value,
                              addr=addr, bytes=BURST, tag=0), np.ones(BURST // 2, np.float16)))
        else:
            reqs.append((dict(op=MemOp.READ.value, source=WriteSource.DMA.value, addr=addr,
                              bytes=BURST, tag=k % 64), None))
    assert {COSIM_HBM.decode(a)["ch"] * 2 + COSIM_HBM.decode(a)["pc"] for a in same_pc} == {0}
    dram = _hbm(0)
    full = []
    snaps, responses, cycles, refused = _drive(
        dram, reqs, random.Random(0), offer=1.0,
        check=lambda d: full.append(d.hbm.waiting(0)))
    assert refused > 100, refused
    assert (p.read_queue, p.write_queue) in full or any(
        r == p.read_queue or w == p.write_queue for r, w in full)
    mem, want, want_rsp = _reference(reqs)
    assert responses == want_rsp
    assert all(np.array_equal(x, y) for x, y in zip(snaps, want)) and len(snaps) == len(want)
    assert np.array_equal(dram.view(BASE, SIZE), mem)
    assert dram.pending() == 0 and dram.slot is None and not dram.writes
    assert dram.traffic["rs_writes"] == sum(1 for r, _ in reqs
                                            if r["op"] == MemOp.UPDATE.value) * BURST


def test_occupancy_is_the_hbm_queue():
    """Every cycle, ``occupancy`` is the requests accepted and not yet issued to a bank (the
    HBM model's column-access count tells which were issued), plus a refused one waiting;
    under load it rises well above what one request per cycle in flight would show."""
    rng = random.Random(3)
    reqs = _requests(rng, 1000, hot=64)
    dram = _hbm(3, COSIM_HBM)
    seen = []

    def check(d):
        accepted = d.seq
        assert d.occupancy == accepted - d.hbm.stats["accesses"] + (d.slot is not None)
        assert d.occupancy == d.hbm.occupancy + (d.slot is not None)
        seen.append(d.occupancy)

    _drive(dram, reqs, rng, offer=1.0, check=check)
    assert max(seen) >= 16, max(seen)
    assert seen[-1] == 0


def test_next_due_sleeps_only_when_idle():
    """Outstanding requests keep a next event (the simulation may not skip past a
    completion); an idle DRAM has none, refresh or not."""
    dram = _hbm(0, COSIM_HBM)
    assert dram.next_due() is None
    dram.take(0, dict(op=MemOp.READ.value, source=WriteSource.DMA.value, addr=BASE,
                      bytes=BURST, tag=5), None)
    t = dram.next_due()
    assert t is not None
    cycle = 0
    while not dram.responses:
        cycle = max(cycle + 1, dram.next_due())
        dram.serve(cycle)
    assert dram.responses[0] == {"source": WriteSource.DMA.value, "tag": 5}
    assert dram.next_due() is None and dram.pending() == 0


def test_cosim_config_memory_is_checked():
    from sim_models.cosim import CosimConfig, HbmDram as Exported
    assert CosimConfig().memory == "fixed" and Exported is HbmDram
    with pytest.raises(ValueError, match="memory must be one of .*'ddr4'"):
        CosimConfig(memory="ddr4")
