# SPDX-License-Identifier: Apache-2.0
"""amaranth.sim drivers of the blocks, scored against the same cycle models and checks as the
cocotb testbenches (:mod:`t3hw.verif.cocotb_tb`). Fast unit tests and benchmarks use them: no Verilog, no C++.

* :func:`run_tracker`: the tracker against :class:`~sim_models.tracker.TrackerCycleModel`, through
  :class:`~t3hw.verif.tracker_check.TrackerCheck`.
* :func:`run_env`: any block driven by a :class:`~t3hw.verif.env.StreamEnv`.
"""

from amaranth.hdl import ValueCastable
from amaranth.sim import Simulator

from t3hw.hw.tracker import Tracker
from .tracker_check import TrackerCheck


__all__ = ["run_tracker", "run_env"]


class _TrackerDriver:
    """The amaranth.sim side of :class:`~t3hw.verif.tracker_check.TrackerCheck`: ports by
    their Verilog names, settle by reading, clock by ``ctx.tick()``."""

    def __init__(self, ctx, dut, params):
        self.ctx, self.dut = ctx, dut
        self.check = TrackerCheck(params)
        self.model = self.check.model

    def _set(self, name, value):
        self.ctx.set(_port(self.dut, name), value)

    def _get(self, name):
        return self.ctx.get(_port(self.dut, name))

    cycles = property(lambda self: self.check.cycles, doc="Cycles scored so far.")
    transfers = property(lambda self: self.check.transfers, doc="Triggers handed over.")
    log = property(lambda self: self.check.log, doc="(cycle, Trigger) of every transfer.")
    params = property(lambda self: self.check.params, doc="The tracker's parameters.")

    async def clear_errors(self):
        """Pulse ``clear`` (all ones) for a cycle; the model clears its sticky bits too."""
        self._set("clear", (1 << self.check.errors_c.width) - 1)
        await self.cycle()
        self._set("clear", 0)
        self.model.model.clear_errors()

    async def cycle(self, write=None, program=None, ready=True):
        """Drive one cycle, check every output against the model, advance both."""
        self.check.drive(self._set, write, program, ready)
        took, popped = self.check.score(self._get, write, program, ready)
        await self.ctx.tick()
        return took, popped

    async def drain(self):
        """Idle until the queues empty; then compare every error bit and counter."""
        await self.check.drain(self.cycle, self._get)


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
        driver = _TrackerDriver(ctx, dut, params)
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
