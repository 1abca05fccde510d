# SPDX-License-Identifier: Apache-2.0
"""Fast amaranth.sim tests of the tracker against its cycle model (no Verilog, no Verilator)."""

import os
import random

import pytest
from amaranth.sim import Simulator

from sim_models.stimulus import TrackerTraffic
from sim_models.tracker import Trigger, TrackerCycleModel
from t3hw.layouts import TrackOp
from t3hw.params import EngineParams
from t3hw.tracker import Tracker


PARAMS = {
    "tiny":    EngineParams(tracker_entries=4, tile_width=4, count_width=4, beats_width=2,
                            cmd_width=2, trigger_depth=1, counter_width=16),
    "default": EngineParams(),
}


def _run(params, body):
    dut = Tracker(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        while ctx.get(dut.busy):
            await ctx.tick()
        await body(ctx, dut)

    sim.add_testbench(testbench)
    sim.run()


async def _cycle(ctx, dut, model, write=None, program=None, ready=True):
    """Drive one cycle, check every output against the model, advance both."""
    ctx.set(dut.write.valid, write is not None)
    if write is not None:
        ctx.set(dut.write.payload, write)
    ctx.set(dut.program.valid, program is not None)
    if program is not None:
        ctx.set(dut.program.payload, program)
    ctx.set(dut.trigger.ready, ready)
    exp_ready, exp_valid, exp_trig = model.expected(write is not None)
    assert ctx.get(dut.program.ready) == exp_ready
    assert ctx.get(dut.trigger.valid) == exp_valid
    if exp_valid:
        got = ctx.get(dut.trigger.payload)
        assert Trigger(cmd=got.cmd, tile=got.tile) == exp_trig
    took = program is not None and exp_ready
    popped = model.step(write=write, program=program if took else None, trigger_ready=ready)
    await ctx.tick()
    return took, popped


async def _drain(ctx, dut, model):
    for _ in range(model.params.trigger_depth + 4):
        await _cycle(ctx, dut, model)
    assert ctx.get(dut.errors).as_value().value == model.model.error_bits()
    stats = ctx.get(dut.stats)
    for name, value in model.model.stats.items():
        assert getattr(stats, name) == value, name


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_random_against_model(name):
    params = PARAMS[name]
    seed = int(os.environ.get("T3HW_SEED", random.randrange(1 << 32)))
    print(f"seed={seed} params={name}")
    rng = random.Random(seed)

    async def body(ctx, dut):
        model = TrackerCycleModel(params)
        traffic = TrackerTraffic(model, rng, stall=0.1)
        for _ in range(3000):
            write, program, ready = traffic.cycle()
            took, _ = await _cycle(ctx, dut, model, write, program, ready)
            if took:
                traffic.accepted()
        await _drain(ctx, dut, model)
        assert model.model.stats["triggers"] > 0

    _run(params, body)


def test_back_to_back_same_tile_counts_every_write():
    params = PARAMS["default"]

    async def body(ctx, dut):
        model = TrackerCycleModel(params)
        await _cycle(ctx, dut, model, program=dict(op=TrackOp.ARM, tile=7, threshold=12, cmd=3))
        got = []
        for _ in range(12):
            _, t = await _cycle(ctx, dut, model, write=dict(tile=7, beats=1, kind=0, source=0))
            got.append(t)
        for _ in range(4):
            _, t = await _cycle(ctx, dut, model)
            got.append(t)
        assert [t for t in got if t] == [Trigger(cmd=3, tile=7)]
        assert not any(model.model.errors.values())

    _run(params, body)
