# SPDX-License-Identifier: Apache-2.0
"""cocotb testbench of the generated tracker Verilog, scored cycle by cycle.

Every cycle the testbench compares ``program.ready``, ``trigger.valid`` and the trigger
payload with :class:`sim_models.tracker.TrackerCycleModel`; at the end of each test it compares
every sticky error bit and every counter. Run-time settings come from the environment that
``test_tracker.py`` sets: ``T3HW_PARAMS`` (JSON of EngineParams), ``T3HW_SEED``,
``T3HW_EVENTS`` (random writes per random test), ``T3HW_REPORT`` (optional path: the random
test writes its event count, cycles and wall time there, for ``make bench``).
"""

import json
import os
import time

import cocotb

from t3hw.verif.stimulus import TrackerTraffic
from t3hw.spec.layouts import WriteSource
from t3hw.verif.cocotb_tb import TrackerTB, arm as _arm, disarm, write as _write
from t3hw.verif.tracker_check import hold_past_capacity, read_back_and_verdicts


@cocotb.test()
async def test_random(dut):
    """Random writes, programming, idle cycles and trigger back-pressure, scored every cycle."""
    tb = TrackerTB(dut)
    sweep = await tb.reset()
    assert sweep == tb.params.tracker_entries, f"reset sweep took {sweep} cycles"
    events = int(os.environ.get("T3HW_EVENTS", "100000"))
    traffic = TrackerTraffic(tb.model, tb.rng, idle=0.25, stall=0.05)
    writes = 0
    start = time.perf_counter()
    while writes < events:
        write, program, ready = traffic.cycle()
        took, _ = await tb.cycle(write, program, ready)
        if took:
            traffic.accepted()
        writes += write is not None
    await tb.drain()
    wall = time.perf_counter() - start
    stats = tb.model.model.stats
    if os.environ.get("T3HW_REPORT"):
        with open(os.environ["T3HW_REPORT"], "w") as f:
            json.dump({"events": writes, "cycles": tb.cycles, "wall_s": wall,
                       "triggers": stats["triggers"]}, f)
    dut._log.info("seed=%d: %d writes in %d cycles, %d triggers, %d dropped, errors %s",
                  tb.seed, writes, tb.cycles, stats["triggers"], stats["dropped"],
                  {k for k, v in tb.model.model.errors.items() if v})
    assert stats["triggers"] > 0


@cocotb.test()
async def test_sustained_one_write_per_cycle(dut):
    """Every cycle carries a write for 4 * entries cycles: every one is counted, none stalls."""
    tb = TrackerTB(dut)
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
    tb = TrackerTB(dut)
    await tb.reset()
    p = tb.params
    top_tile = (1 << p.tile_width) - 1
    cmd = (1 << p.cmd_width) - 1
    # Threshold 1 fires on the first write.
    await tb.cycle(program=_arm(1, 1, cmd))
    await tb.cycle(write=_write(1))
    # Its trigger is taken and acked before the entry is armed again (with one tile bit,
    # top_tile is tile 1's entry: an ARM while its firing is pending would be refused).
    await tb.drain()
    # Back-to-back writes to one entry, re-armed: fires every `threshold` beats.
    thr = min(3, p.max_threshold)
    await tb.cycle(program=_arm(top_tile, thr, 2 % (cmd + 1), rearm=1))
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
    await tb.cycle(program=disarm(top_tile))
    await tb.drain()
    await hold_past_capacity(tb)


@cocotb.test()
async def test_read_back_and_verdicts(dut):
    """READ, DISARM of an unarmed tile, an unknown op: each verdict on ``result``."""
    tb = TrackerTB(dut)
    await tb.reset()
    await read_back_and_verdicts(tb)


@cocotb.test()
async def test_write_during_reset_sweep(dut):
    """A write observed while the table is being cleared counts as unprogrammed."""
    tb = TrackerTB(dut)
    await tb.reset(wait=False)
    await tb.cycle(write=_write(0, source=WriteSource.REMOTE))
    assert tb.model.busy
    while tb.model.busy:
        await tb.cycle()
    await tb.drain()
    assert tb.model.model.errors["unprogrammed"]
