# SPDX-License-Identifier: Apache-2.0
"""amaranth.sim tests of the round-robin stream merge (the engine's network output)."""

import random

import pytest
from amaranth.sim import Simulator

from t3hw.hw.merge import Merge


def _run(n, seed, *, cycles=3000, rate=0.6, stall=0.3):
    """Random traffic on ``n`` inputs (each value tagged with its input), random
    back-pressure; returns what came out, in order, and the grants per cycle when every
    input requested."""
    dut = Merge(16, n)
    rng = random.Random(seed)
    sent = {i: 0 for i in range(n)}
    out, full_rounds = [], []
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def bench(ctx):
        pending = [None] * n
        held = None
        for _ in range(cycles):
            for i in range(n):
                if pending[i] is None and rng.random() < rate:
                    pending[i] = (i << 12) | sent[i]
                    sent[i] += 1
                ctx.set(dut.i[i].valid, pending[i] is not None)
                ctx.set(dut.i[i].payload, pending[i] or 0)
            ready = rng.random() > stall
            ctx.set(dut.o.ready, ready)
            valid, payload = ctx.get(dut.o.valid), ctx.get(dut.o.payload)
            if held is not None:
                assert valid and payload == held, "output changed before it was taken"
            held = payload if valid and not ready else None
            if valid and ready:
                out.append(payload)
            taken = [i for i in range(n) if ctx.get(dut.i[i].ready)]
            assert len(taken) <= 1 and all(pending[i] is not None for i in taken)
            if all(p is not None for p in pending) and taken:
                full_rounds.append(taken[0])
            for i in taken:
                pending[i] = None
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    return out, full_rounds, sent


@pytest.mark.parametrize("n", [2, 3, 5])
def test_order_kept_and_nothing_lost(n, seed):
    out, _, sent = _run(n, seed)
    for i in range(n):
        mine = [v & 0xfff for v in out if v >> 12 == i]
        assert mine == list(range(len(mine)))            # in order, none lost or doubled
        assert sent[i] - len(mine) <= 2                  # at most one pending, one in flight


@pytest.mark.parametrize("n", [2, 3])
def test_round_robin_when_all_request(n, seed):
    _, rounds, _ = _run(n, seed, rate=1.0, stall=0.0, cycles=200)
    assert len(rounds) > 150
    for a, b in zip(rounds, rounds[1:]):
        assert b == (a + 1) % n


def test_bad_n():
    with pytest.raises(ValueError, match=r"n must be an integer in \[2, inf\), not 1"):
        Merge(8, 1)
