# SPDX-License-Identifier: Apache-2.0
"""amaranth.sim drivers of the blocks, scored against the same cycle models as the cocotb
testbenches (:mod:`t3hw.verif.cocotb_tb`). Fast unit tests and benchmarks use them: no Verilog, no C++.

* :func:`run_tracker`: the tracker against :class:`~sim_models.tracker.TrackerCycleModel`.
* :func:`run_env`: any block driven by a :class:`~sim_models.env.StreamEnv`.
"""

from amaranth.hdl import ValueCastable
from amaranth.sim import Simulator

from sim_models.tracker import Trigger, TrackerCycleModel
from t3hw.hw.tracker import Tracker


__all__ = ["run_tracker", "run_env"]


class _TrackerDriver:
    def __init__(self, ctx, dut, model):
        self.ctx, self.dut, self.model = ctx, dut, model
        self.cycles = 0

    async def cycle(self, write=None, program=None, ready=True):
        """Drive one cycle, check every output against the model, advance both."""
        ctx, dut, model = self.ctx, self.dut, self.model
        ctx.set(dut.write.valid, write is not None)
        if write is not None:
            ctx.set(dut.write.payload, write)
        ctx.set(dut.program.valid, program is not None)
        if program is not None:
            ctx.set(dut.program.payload, program)
        ctx.set(dut.trigger.ready, ready)
        exp_ready, exp_valid, exp_trig = model.expected(write is not None)
        assert ctx.get(dut.busy) == model.busy, f"cycle {self.cycles}: busy"
        assert ctx.get(dut.program.ready) == exp_ready, f"cycle {self.cycles}: program.ready"
        assert ctx.get(dut.trigger.valid) == exp_valid, f"cycle {self.cycles}: trigger.valid"
        if exp_valid:
            got = ctx.get(dut.trigger.payload)
            assert Trigger(cmd=got.cmd, tile=got.tile) == exp_trig, f"cycle {self.cycles}"
        took = program is not None and exp_ready
        popped = model.step(write=write, program=program if took else None,
                            trigger_ready=ready)
        self.cycles += 1
        await ctx.tick()
        return took, popped

    async def drain(self):
        """Idle until the queue empties; then compare every error bit and counter."""
        for _ in range(self.model.params.trigger_depth + 4):
            await self.cycle()
        assert self.ctx.get(self.dut.errors).as_value().value == self.model.model.error_bits()
        stats = self.ctx.get(self.dut.stats)
        for name, value in self.model.model.stats.items():
            assert getattr(stats, name) == value, name


def run_tracker(params, body):
    """Simulate a :class:`~t3hw.hw.tracker.Tracker` from reset under ``body(driver)``.

    ``body`` is an async function of a driver with ``cycle(write, program, ready)``,
    ``drain()`` and ``model`` (a :class:`~sim_models.tracker.TrackerCycleModel`); the reset
    sweep has been run (and checked) when it starts.
    """
    dut = Tracker(params)
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        driver = _TrackerDriver(ctx, dut, TrackerCycleModel(params))
        driver.model.reset()
        while driver.model.busy:
            await driver.cycle()
        await body(driver)

    sim.add_testbench(testbench)
    sim.run()


def _port(dut, name):
    """The member of ``dut`` named as in the generated Verilog (``read__payload``)."""
    value = dut
    for part in name.split("__"):
        value = getattr(value, part)
    return value.as_value() if isinstance(value, ValueCastable) else value


def run_env(dut, env, body):
    """Simulate ``dut`` from reset under ``body(env, cycle)``.

    ``cycle()`` drives ``env``'s inputs, lets the design settle, scores its outputs through
    ``env`` and clocks: the same steps the cocotb testbenches take (:class:`t3hw.verif.cocotb_tb.EnvTB`).
    """
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        async def cycle():
            env.apply(lambda name, value: ctx.set(_port(dut, name), value))
            env.sample(lambda name: ctx.get(_port(dut, name)))
            await ctx.tick()

        await body(env, cycle)

    sim.add_testbench(testbench)
    sim.run()
    return env
