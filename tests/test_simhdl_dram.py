# SPDX-License-Identifier: Apache-2.0
"""The fast co-simulation's DRAM (``t3hw.verif.simhdl.dram.FixedDram``) against its Python
model, :class:`sim_models.dram.NmcDram` as :class:`sim_models.cosim.SystemEnv` runs it:
every cycle's ``ready``, response, occupancy and served request, under random requests,
idle cycles and response back-pressure; and its sticky error when a queue overflows."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from sim_models.dram import NmcDram
from t3hw.spec.layouts import MemOp, WriteSource
from t3hw.verif.cosim_scenarios import REGRESSION_PARAMS as P
from t3hw.verif.simhdl.dram import FixedDram


SIZE, RESULT = 4096, 2048


def _request(rng):
    return dict(op=rng.choice([m.value for m in MemOp]), source=rng.choice([s.value for s in WriteSource]),
                addr=64 * rng.randrange(SIZE // 64), bytes=rng.choice([2, 32, 64]),
                tile=rng.randrange(1 << P.tile_width), tag=rng.randrange(1 << P.mem_tag_width))


def _run(seed, latency, cycles, rsp_depth=256, busy=0.8, rsp_ready=0.6):
    rng = random.Random(seed)
    print(f"seed={seed} latency={latency}")
    dut = FixedDram(P, latency=latency, rsp_depth=rsp_depth)
    model = NmcDram(random.Random(0), base=0, size_bytes=SIZE, result_base=RESULT,
                    latency=latency, stall=0.0)
    omax = (1 << P.occupancy_width) - 1
    seen = {"served": 0, "responses": 0, "errors": 0}

    async def bench(ctx):
        offered = None
        held = None                      # the response the model offers, held until taken
        ctx.set(dut.result_base, RESULT)
        for c in range(cycles):
            ctx.set(dut.cycle, c)
            # drive (the testbench's order): the model's port values for cycle c
            if held is None and model.responses:
                held = model.responses[0]
            if offered is None and rng.random() < busy:
                offered = _request(rng)
            ctx.set(dut.req.valid, offered is not None)
            if offered is not None:
                ctx.set(dut.req.payload, offered)
            ready = rng.random() < rsp_ready if c % 97 < 60 else False
            ctx.set(dut.rsp.ready, ready)
            assert ctx.get(dut.occupancy) == min(model.occupancy, omax), c
            assert ctx.get(dut.req.ready) == 1, c
            assert ctx.get(dut.rsp.valid) == (held is not None), c
            if held is not None:
                got = (ctx.get(dut.rsp.payload.source).value, ctx.get(dut.rsp.payload.tag))
                assert got == (held["source"], held["tag"]), c
            # the model's observe and tick
            if offered is not None:
                data = None if offered["op"] == MemOp.READ.value else \
                    np.zeros(offered["bytes"] // 2, np.float16)
                model.take(c, dict(offered), data)
                offered = None
            if held is not None and ready:
                model.responses.popleft()
                held = None
                seen["responses"] += 1
            head = model.queue[0][1] if model.queue and model.queue[0][0] <= c else None
            assert ctx.get(dut.serve_valid) == (head is not None), c
            if head is not None:
                s = ctx.get(dut.serve)
                assert (s.addr, s.bytes, s.tag) == (head["addr"], head["bytes"], head["tag"]), c
                seen["served"] += 1
            model.serve(c)
            await ctx.tick()
        assert ctx.get(dut.r_writes) == model.r_writes
        assert ctx.get(dut.last_write) == model.last_write
        assert ctx.get(dut.error) == 0

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return seen


@pytest.mark.parametrize("latency", [1, 3, 17, 64])
def test_fixed_dram_matches_nmc_dram(latency):
    seed = random.randrange(2**32)
    seen = _run(seed, latency, 3000)
    assert seen["served"] > 1000 and seen["responses"] > 200, seen


def test_response_queue_overflow_is_a_sticky_error():
    """Responses held past the response queue's capacity: error bit 1, with its cycle."""
    p = P
    dut = FixedDram(p, latency=2, rsp_depth=4)

    async def bench(ctx):
        ctx.set(dut.rsp.ready, 0)
        first = None
        for c in range(40):
            ctx.set(dut.cycle, c)
            ctx.set(dut.req.valid, 1)
            ctx.set(dut.req.payload, dict(op=MemOp.READ.value, source=0, addr=0, bytes=64,
                                          tile=0, tag=c % 8))
            if ctx.get(dut.error) and first is None:
                first = c
            await ctx.tick()
        # reads taken at cycles 0..3 are served at 2..5 and fill the queue; the fifth (taken
        # at 4, served at 6) finds it full
        assert ctx.get(dut.error) == 0b10
        assert ctx.get(dut.error_cycle) == 6
        assert ctx.get(dut.rsp.valid) == 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("kw, text", [
    (dict(latency=0), "latency must be an integer in [1, 4096], not 0"),
    (dict(latency=4, rsp_depth=1), "rsp_depth must be an integer in [2, 65536]"),
])
def test_bad_parameters_name_the_value_and_range(kw, text):
    with pytest.raises(ValueError, match=text.replace("[", r"\[").replace("]", r"\]")):
        FixedDram(P, **kw)
