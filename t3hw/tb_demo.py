# SPDX-License-Identifier: Apache-2.0
"""cocotb scenario behind ``make demo``: one GPU's tracker during a fused GEMM + ring
reduce-scatter on 4 GPUs, scored cycle by cycle against the reference model.

GPU 0 of a 4-GPU ring produces its [T, H] partial output as 4 chunks of ``TILES`` tiles. At
stage s it produces chunk ``k = (0 + 1 + s) % 4`` (T3's staggered schedule). Stage 0's chunk
goes straight to GPU 3 as remote stores, so it is not tracked here. Every tile of the other
chunks is armed with a threshold of its local GEMM stores plus the update that GPU 1 sends
for it; the write that completes it fires DMA command ``tile``: "send the reduced tile on to
GPU 3" at stages 1 and 2, and at stage 3 (chunk 0, which GPU 0 owns) "the tile is fully
reduced: copy it to GPU 3" (an all-gather step driven by the same mechanism). The DMA engine
takes a trigger, then is busy for ``DMA_BUSY`` cycles (back-pressure on ``trigger``).
Writes of both sources share the one observed-write port, one per cycle, as the
memory-controller arbiter grants them.

Writes ``T3HW_DEMO_OUT`` (JSON: every trigger with its cycle, and totals).
"""

import json
import os

import cocotb

from .layouts import WriteKind, WriteSource
from .tb import TrackerTB, arm, write


GPUS, TILES = 4, 8
STORES, BEATS = 4, 2              # per tile: 4 stores of 2 beats (GEMM) and 4 remote updates
STAGE_CYCLES = 120                # one stage of the GEMM
DMA_BUSY = 6                      # cycles the DMA engine is busy per trigger


def _schedule(rng):
    """Per cycle: the writes that want the memory controller, as (cycle, fields) lists."""
    wants = []
    for s in range(1, GPUS):
        chunk = (1 + s) % GPUS
        for j in range(TILES):
            tile = chunk * TILES + j
            done = s * STAGE_CYCLES + j * (STAGE_CYCLES // TILES) + rng.randrange(4)
            for n in range(STORES):
                wants.append((done + n, write(tile, BEATS, WriteSource.COMPUTE, WriteKind.UPDATE)))
            # GPU 1 finished its own part of this chunk one stage earlier, give or take.
            arrive = done - STAGE_CYCLES // 2 + rng.randrange(STAGE_CYCLES)
            for n in range(STORES):
                wants.append((arrive + 2 * n, write(tile, BEATS, WriteSource.REMOTE,
                                                    WriteKind.UPDATE)))
    wants.sort(key=lambda w: w[0])
    return wants


@cocotb.test()
async def demo(dut):
    tb = TrackerTB(dut)
    await tb.reset()
    threshold = 2 * STORES * BEATS
    for s in range(1, GPUS):
        chunk = (1 + s) % GPUS
        for j in range(TILES):
            tile = chunk * TILES + j
            while not (await tb.cycle(program=arm(tile, threshold, cmd=tile)))[0]:
                pass
    start = tb.cycles
    wants = _schedule(tb.rng)
    waiting = []
    busy = 0
    i = 0
    while i < len(wants) or waiting or tb.model.queue or tb.model.s1:
        now = tb.cycles - start
        while i < len(wants) and wants[i][0] <= now:
            waiting.append(wants[i][1])
            i += 1
        # Arbiter: one granted write per cycle, oldest first.
        granted = waiting.pop(0) if waiting else None
        ready = busy == 0
        _, popped = await tb.cycle(write=granted, ready=ready)
        busy = DMA_BUSY if popped is not None else max(0, busy - 1)
    await tb.drain()
    triggers = [{"cycle": c - start, "tile": t.tile, "cmd": t.cmd} for c, t in tb.log]
    stats = tb.model.model.stats
    report = {
        "gpus": GPUS, "tiles_per_chunk": TILES, "threshold": threshold,
        "writes": stats["writes_compute"] + stats["writes_remote"],
        "cycles": tb.cycles - start, "triggers": triggers,
        "errors": [k for k, v in tb.model.model.errors.items() if v],
        "checked_cycles": tb.cycles,
    }
    assert len(triggers) == (GPUS - 1) * TILES and not report["errors"]
    with open(os.environ["T3HW_DEMO_OUT"], "w") as f:
        json.dump(report, f, indent=1)
