# SPDX-License-Identifier: Apache-2.0
"""cocotb testbench of the generated tracker Verilog, scored cycle by cycle.

Every cycle the testbench compares ``program.ready``, ``trigger.valid`` and the trigger
payload with :class:`sim_models.tracker.TrackerCycleModel`; at the end of each test it compares
every sticky error bit and every counter. Run-time settings come from the environment that
``test_tracker.py`` sets: ``T3HW_PARAMS`` (JSON of EngineParams), ``T3HW_SEED``,
``T3HW_EVENTS`` (random writes per random test).
"""

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from sim_models.stimulus import TrackerTraffic
from sim_models.tracker import Trigger, TrackerCycleModel
from t3hw.layouts import (Codec, TrackOp, WriteSource, program_layout, trigger_layout,
                          tracker_errors_layout, tracker_stats_layout, write_layout)
from t3hw.params import EngineParams


class TB:
    """Clock, reset, cycle-exact driving and scoring of one tracker."""

    def __init__(self, dut):
        self.dut = dut
        self.params = EngineParams(**json.loads(os.environ["T3HW_PARAMS"]))
        self.seed = int(os.environ.get("T3HW_SEED", "1"))
        self.rng = random.Random(self.seed)
        self.write_c   = Codec(write_layout(self.params))
        self.program_c = Codec(program_layout(self.params))
        self.trigger_c = Codec(trigger_layout(self.params))
        self.errors_c  = Codec(tracker_errors_layout(self.params))
        self.stats_c   = Codec(tracker_stats_layout(self.params))
        self.model = TrackerCycleModel(self.params)
        self.cycles = 0
        self.transfers = 0
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        dut._log.info("seed=%d params=%s", self.seed, self.params.to_dict())

    async def reset(self, *, wait=True):
        """Hold ``rst`` 2 cycles; then (``wait``) run idle cycles through the reset sweep.

        Returns the number of cycles ``busy`` stayed high (checked every cycle).
        """
        dut = self.dut
        dut.rst.value = 1
        dut.write__valid.value = 0
        dut.program__valid.value = 0
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
        self.transfers += popped is not None
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


def _write(tile, beats=1, source=WriteSource.COMPUTE):
    return dict(tile=tile, beats=beats, kind=0, source=source)


def _arm(tile, threshold, cmd, rearm=0):
    return dict(op=TrackOp.ARM, tile=tile, threshold=threshold, cmd=cmd, rearm=rearm)


@cocotb.test()
async def test_random(dut):
    """Random writes, programming, idle cycles and trigger back-pressure, scored every cycle."""
    tb = TB(dut)
    sweep = await tb.reset()
    assert sweep == tb.params.tracker_entries, f"reset sweep took {sweep} cycles"
    events = int(os.environ.get("T3HW_EVENTS", "100000"))
    traffic = TrackerTraffic(tb.model, tb.rng, idle=0.25, stall=0.05)
    writes = 0
    while writes < events:
        write, program, ready = traffic.cycle()
        took, _ = await tb.cycle(write, program, ready)
        if took:
            traffic.accepted()
        writes += write is not None
    await tb.drain()
    stats = tb.model.model.stats
    dut._log.info("seed=%d: %d writes in %d cycles, %d triggers, %d dropped, errors %s",
                  tb.seed, writes, tb.cycles, stats["triggers"], stats["dropped"],
                  {k for k, v in tb.model.model.errors.items() if v})
    assert stats["triggers"] > 0


@cocotb.test()
async def test_sustained_one_write_per_cycle(dut):
    """Every cycle carries a write for 4 * entries cycles: every one is counted, none stalls."""
    tb = TB(dut)
    await tb.reset()
    p = tb.params
    n = min(p.tracker_entries, 1 << p.cmd_width)
    threshold = min(4, p.max_threshold)
    for i in range(n):
        took = False
        while not took:
            took, _ = await tb.cycle(program=_arm(i, threshold, i % (1 << p.cmd_width)))
    start_writes = tb.model.model.stats["writes_compute"]
    start_cycle = tb.cycles
    # Round-robin over n - 1 entries, then the last entry back-to-back.
    tiles = [c % (n - 1) for c in range((n - 1) * threshold)] + [n - 1] * threshold
    for tile in tiles:
        await tb.cycle(write=_write(tile))      # program.ready is checked low every cycle
    cycles = tb.cycles - start_cycle
    await tb.drain()
    assert cycles == len(tiles)
    assert tb.model.model.stats["writes_compute"] - start_writes == len(tiles)
    assert tb.model.model.stats["triggers"] == n and tb.transfers == n
    assert not any(tb.model.model.errors.values())
    dut._log.info("sustained: %d writes in %d consecutive cycles, %d triggers",
                  len(tiles), cycles, n)


@cocotb.test()
async def test_directed(dut):
    """Threshold 1, back-to-back same tile, re-arm, every error bit, clear."""
    tb = TB(dut)
    await tb.reset()
    p = tb.params
    top_tile = (1 << p.tile_width) - 1
    cmd = (1 << p.cmd_width) - 1
    # Threshold 1 fires on the first write.
    await tb.cycle(program=_arm(1, 1, cmd))
    await tb.cycle(write=_write(1))
    # Back-to-back writes to one entry, re-armed: fires every `threshold` beats.
    thr = min(3, p.max_threshold)
    await tb.cycle(program=_arm(top_tile, thr, 2, rearm=1))
    for _ in range(thr * 3):
        await tb.cycle(write=_write(top_tile))
    await tb.drain()
    assert tb.model.model.stats["triggers"] == 4 and not any(tb.model.model.errors.values())
    # Each error bit, provoked alone and then cleared.
    provoke = {
        "unprogrammed":  [dict(write=_write(0))],
        "reprogram":     [dict(program=_arm(top_tile, 1, 0))],
        "bad_threshold": [dict(program=_arm(0, 0, 0))],
        "overcount":     [dict(program=_arm(0, 1, 0)),
                          dict(write=_write(0, beats=min(2, (1 << p.beats_width) - 1)))],
    }
    for name, steps in provoke.items():
        if name == "overcount" and (1 << p.beats_width) - 1 < 2:
            continue
        for step in steps:
            await tb.cycle(**step)
        await tb.drain()
        assert {k for k, v in tb.model.model.errors.items() if v} == {name}
        await tb.clear_errors()
        await tb.drain()
        assert not any(tb.model.model.errors.values())
    # Overflow: hold the trigger output, complete depth + 1 tiles.
    await tb.cycle(program=dict(op=TrackOp.DISARM, tile=top_tile, threshold=0, cmd=0, rearm=0))
    for i in range(p.trigger_depth + 1):
        while not (await tb.cycle(program=_arm(i + 2, 1, 0), ready=False))[0]:
            pass
    for i in range(p.trigger_depth + 1):
        await tb.cycle(write=_write(i + 2), ready=False)
    await tb.cycle(ready=False)
    await tb.cycle(ready=False)
    tb.check_state()
    assert tb.model.model.errors["overflow"] and tb.model.model.stats["dropped"] == 1
    await tb.drain()


@cocotb.test()
async def test_write_during_reset_sweep(dut):
    """A write observed while the table is being cleared counts as unprogrammed."""
    tb = TB(dut)
    await tb.reset(wait=False)
    await tb.cycle(write=_write(0, source=WriteSource.REMOTE))
    assert tb.model.busy
    while tb.model.busy:
        await tb.cycle()
    await tb.drain()
    assert tb.model.model.errors["unprogrammed"]
