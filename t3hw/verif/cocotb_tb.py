# SPDX-License-Identifier: Apache-2.0
"""cocotb drivers and scoreboards of the generated blocks, shared by the regression
(``cocotb_tests/``) and the scenarios (``make demo``, ``make bench``).

:class:`TrackerTB` drives the tracker's ports cycle by cycle and compares ``busy``,
``program.ready``, ``trigger.valid`` and every trigger with
:class:`sim_models.tracker.TrackerCycleModel` in every cycle, and every sticky error bit and
counter when asked (:meth:`TrackerTB.check_state`). :class:`EnvTB` drives any block through
a :class:`sim_models.env.StreamEnv` (DMA, address map, register block): the same environment
the amaranth.sim tests run (:func:`t3hw.verif.amsim.run_env`). Run-time settings come from the
environment: ``T3HW_PARAMS`` (JSON of :class:`~t3hw.spec.params.EngineParams`) and ``T3HW_SEED``.
"""

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from sim_models.tracker import Trigger, TrackerCycleModel
from t3hw.spec.layouts import (Codec, TrackOp, WriteKind, WriteSource, program_layout, trigger_layout,
                      tracker_errors_layout, tracker_stats_layout, write_layout)
from t3hw.spec.params import EngineParams


__all__ = ["TrackerTB", "EnvTB", "write", "arm", "disarm"]


def _start(dut):
    """Parameters and seed from the environment the runner set; start the clock."""
    params = EngineParams(**json.loads(os.environ["T3HW_PARAMS"]))
    seed = int(os.environ.get("T3HW_SEED", "1"))
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut._log.info("seed=%d params=%s", seed, params.to_dict())
    return params, seed


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
    """Clock, reset, cycle-exact driving and scoring of one tracker."""

    def __init__(self, dut):
        self.dut = dut
        self.params, self.seed = _start(dut)
        self.rng = random.Random(self.seed)
        self.write_c   = Codec(write_layout(self.params))
        self.program_c = Codec(program_layout(self.params))
        self.trigger_c = Codec(trigger_layout(self.params))
        self.errors_c  = Codec(tracker_errors_layout(self.params))
        self.stats_c   = Codec(tracker_stats_layout(self.params))
        self.model = TrackerCycleModel(self.params)
        self.cycles = 0
        self.transfers = 0
        self.log = []           # (cycle, Trigger) of every trigger transferred

    async def reset(self, *, wait=True):
        """Hold ``rst`` 2 cycles; then (``wait``) run idle cycles through the reset sweep.

        Returns the number of cycles ``busy`` stayed high (checked every cycle).
        """
        dut = self.dut
        dut.rst.value = 1
        dut.write__valid.value = 0
        dut.program__valid.value = 0
        # Payloads too: undriven inputs are 0 in Verilator, z in Icarus (EnvTB.hold_reset).
        dut.write__payload.value = 0
        dut.program__payload.value = 0
        dut.trigger__ready.value = 0
        dut.clear.value = 0
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
        dut, model = self.dut, self.model
        dut.write__valid.value = write is not None
        if write is not None:
            dut.write__payload.value = self.write_c.pack(**write)
        dut.program__valid.value = program is not None
        if program is not None:
            dut.program__payload.value = self.program_c.pack(**program)
        dut.trigger__ready.value = ready
        await ReadOnly()
        exp_ready, exp_valid, exp_trig = model.expected(write is not None)
        got_busy = int(dut.busy.value)
        assert got_busy == model.busy, f"cycle {self.cycles}: busy {got_busy}, model {model.busy}"
        got_ready = int(dut.program__ready.value)
        got_valid = int(dut.trigger__valid.value)
        assert got_ready == exp_ready, \
            f"cycle {self.cycles}: program.ready {got_ready}, model {exp_ready}"
        assert got_valid == exp_valid, \
            f"cycle {self.cycles}: trigger.valid {got_valid}, model {exp_valid}"
        if exp_valid:
            got = self.trigger_c.unpack(dut.trigger__payload.value.to_unsigned())
            assert Trigger(**got) == exp_trig, \
                f"cycle {self.cycles}: trigger {got}, model {exp_trig}"
        took = program is not None and exp_ready
        popped = model.step(write=write, program=program if took else None,
                            trigger_ready=ready)
        if popped is not None:
            self.transfers += 1
            self.log.append((self.cycles, popped))
        self.cycles += 1
        await RisingEdge(dut.clk)
        return took, popped

    async def drain(self):
        """Idle until the trigger queue is empty, then compare every error bit and counter."""
        for _ in range(self.params.trigger_depth + 4):
            await self.cycle()
        self.check_state()

    def check_state(self):
        got_err = self.errors_c.unpack(self.dut.errors.value.to_unsigned())
        exp_err = {k: int(v) for k, v in self.model.model.errors.items()}
        assert got_err == exp_err, f"errors {got_err}, model {exp_err}"
        got_stats = self.stats_c.unpack(self.dut.stats.value.to_unsigned())
        assert got_stats == self.model.model.stats, \
            f"stats {got_stats}, model {self.model.model.stats}"

    async def clear_errors(self):
        self.dut.clear.value = (1 << self.errors_c.width) - 1
        await self.cycle()
        self.dut.clear.value = 0
        self.model.model.clear_errors()


class EnvTB:
    """Clock and cycle-by-cycle driving of a design through a
    :class:`sim_models.env.StreamEnv` (the DMA, address map and register block testbenches).

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

    def _handle(self, name):
        handle = self._handles.get(name)
        if handle is None:
            handle = self._handles[name] = getattr(self.dut, name)
        return handle

    def _set(self, name, value):
        self._handle(name).value = value

    def _get(self, name):
        value = self._handle(name).value
        return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)

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
