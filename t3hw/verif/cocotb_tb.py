# SPDX-License-Identifier: Apache-2.0
"""cocotb drivers and scoreboards of the generated blocks, shared by the regression
(``cocotb_tests/``) and the scenarios (``make demo``, ``make bench``).

:class:`TrackerTB` drives the tracker's ports cycle by cycle and scores them with
:class:`t3hw.verif.tracker_check.TrackerCheck` (every output against
:class:`sim_models.tracker.TrackerCycleModel` in every cycle, every sticky error bit and
counter when asked), the same checks the amaranth.sim driver runs. :class:`EnvTB` drives any
block through a :class:`t3hw.verif.env.StreamEnv` (DMA, address map, register block): the
same environment the amaranth.sim tests run (:func:`t3hw.verif.amsim.run_env`). Run-time
settings come from the environment: ``T3HW_PARAMS`` (JSON of :class:`~t3hw.spec.params.EngineParams`) and ``T3HW_SEED``.
"""

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from t3hw.spec.layouts import TrackOp, WriteKind, WriteSource
from t3hw.spec.params import EngineParams
from .tracker_check import TrackerCheck


__all__ = ["TrackerTB", "EnvTB", "write", "arm", "disarm"]


def _start(dut):
    """Parameters and seed from the environment the runner set; start the clock."""
    params = EngineParams(**json.loads(os.environ["T3HW_PARAMS"]))
    seed = int(os.environ.get("T3HW_SEED", "1"))
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut._log.info("seed=%d params=%s", seed, params.to_dict())
    return params, seed


def _handle(dut, cache, name):
    """The handle of port ``name`` of ``dut``, looked up once."""
    handle = cache.get(name)
    if handle is None:
        handle = cache[name] = getattr(dut, name)
    return handle


def _value(handle):
    """A port's value as an unsigned integer."""
    value = handle.value
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


def write(tile, beats=1, source=WriteSource.COMPUTE, kind=WriteKind.STORE):
    """Fields of an observed write."""
    return dict(tile=tile, beats=beats, kind=kind, source=source)


def arm(tile, threshold, cmd, rearm=0):
    """Fields of an ARM request."""
    return dict(op=TrackOp.ARM, tile=tile, threshold=threshold, cmd=cmd, rearm=rearm)


def disarm(tile):
    """Fields of a DISARM request."""
    return dict(op=TrackOp.DISARM, tile=tile, threshold=0, cmd=0, rearm=0)


class TrackerTB:
    """Clock, reset and cycle-exact driving of one tracker; the checks are
    :class:`~t3hw.verif.tracker_check.TrackerCheck`'s, the same as under amaranth.sim."""

    def __init__(self, dut):
        self.dut = dut
        self.params, self.seed = _start(dut)
        self.rng = random.Random(self.seed)
        self.check = TrackerCheck(self.params)
        self.model = self.check.model
        self._handles = {}

    cycles = property(lambda self: self.check.cycles, doc="Cycles scored so far.")
    transfers = property(lambda self: self.check.transfers, doc="Triggers handed over.")
    log = property(lambda self: self.check.log, doc="(cycle, Trigger) of every transfer.")

    def _set(self, name, value):
        _handle(self.dut, self._handles, name).value = value

    def _get(self, name):
        return _value(_handle(self.dut, self._handles, name))

    async def reset(self, *, wait=True):
        """Hold ``rst`` 2 cycles; then (``wait``) run idle cycles through the reset sweep.

        Returns the number of cycles ``busy`` stayed high (checked every cycle).
        """
        dut = self.dut
        dut.rst.value = 1
        # Payloads too: undriven inputs are 0 in Verilator, z in Icarus (EnvTB.hold_reset).
        for name in ("write__valid", "program__valid", "write__payload", "program__payload",
                     "trigger__ready", "clear"):
            self._set(name, 0)
        for _ in range(2):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        self.model.reset()
        sweep = 0
        while wait and self.model.busy:
            await self.cycle()
            sweep += 1
        return sweep

    async def cycle(self, write=None, program=None, ready=True):
        """Drive one cycle, check every output, advance the model; returns (took, popped)."""
        self.check.drive(self._set, write, program, ready)
        await ReadOnly()
        took, popped = self.check.score(self._get, write, program, ready)
        await RisingEdge(self.dut.clk)
        return took, popped

    async def drain(self):
        """Idle until the queues empty; then compare every error bit and counter."""
        await self.check.drain(self.cycle, self._get)

    def check_state(self):
        self.check.check_state(self._get)

    async def clear_errors(self):
        self._set("clear", (1 << self.check.errors_c.width) - 1)
        await self.cycle()
        self._set("clear", 0)
        self.model.model.clear_errors()


class EnvTB:
    """Clock and cycle-by-cycle driving of a design through a
    :class:`t3hw.verif.env.StreamEnv` (the DMA, address map and register block testbenches).

    Parameters
    ----------
    dut : cocotb handle
        The design's top level (ports named as in the generated Verilog).
    make_env : callable
        ``make_env(params, rng)`` returns the environment.
    """

    def __init__(self, dut, make_env):
        self.dut = dut
        self.params, self.seed = _start(dut)
        self.env = make_env(self.params, random.Random(self.seed))
        self._handles = {}

    def _set(self, name, value):
        _handle(self.dut, self._handles, name).value = value

    def _get(self, name):
        return _value(_handle(self.dut, self._handles, name))

    async def cycle(self):
        """One clock: drive the environment's inputs, settle, score the outputs."""
        self.env.apply(self._set)
        await ReadOnly()
        self.env.sample(self._get)
        await RisingEdge(self.dut.clk)

    async def hold_reset(self):
        """Hold ``rst`` 2 cycles with every ``valid``, ``payload``, ``ready`` and input flag
        low.

        The payloads too: an input the testbench never drove is 0 in Verilator but ``z`` in
        Icarus, and some outputs depend on a payload whatever its ``valid`` (the arbiter's
        ``response.ready`` follows the response's route). Every input has a value from the
        first cycle on, the same in every simulator.
        """
        env = self.env
        self.dut.rst.value = 1
        payloads = [f"{n}__payload" for n in env.in_streams]
        names = ([f"{n}__valid" for n in env.in_streams]
                 + [name for name in payloads if hasattr(self.dut, name)]
                 + [f"{n}__ready" for n in env.out_streams if n not in env.always_ready]
                 + list(env.in_flags))
        for name in names:
            self._set(name, 0)
        for _ in range(2):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
