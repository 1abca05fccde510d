# SPDX-License-Identifier: Apache-2.0
"""cocotb testbench of the generated engine: the loop scenario of
:mod:`t3hw.verif.engine_env` (a 2-GPU-equivalent ring reduce-scatter with all-gather copies,
the engine looped back onto itself), programmed through the register bus exactly as software
would, with a DRAM stub and back-pressure on every output.

Run-time settings come from the environment that ``test_engine.py`` sets: ``T3HW_PARAMS``,
``T3HW_SEED``, ``T3HW_ENGINE_POLICY`` (an ``ArbPolicy`` name) and ``T3HW_ENGINE_SHAPE``
(``tiles,rows,row_bursts``).
"""

import os

import cocotb
import numpy as np

from t3hw.verif import engine_env
from t3hw.verif.engine_env import EngineEnv, LoopScenario
from t3hw.sw.bus import CocotbBus
from t3hw.sw.driver import Driver
from t3hw.verif.cocotb_tb import EnvTB


@cocotb.test()
async def test_loop(dut):
    """Stores classified, tracked, triggered, DMA'd and counted; every packet checked
    against the scenario (its data must be the fully reduced burst); counters and errors read
    back over the bus."""
    tiles, rows, row_bursts = map(int, os.environ.get("T3HW_ENGINE_SHAPE", "8,4,2").split(","))
    policy = os.environ.get("T3HW_ENGINE_POLICY", "t3_mca")

    def make_env(params, rng):
        sc = LoopScenario(params, np.random.default_rng(rng.getrandbits(32)), tiles=tiles,
                          rows=rows, row_bursts=row_bursts)
        return EngineEnv(params, rng, sc)

    tb = EnvTB(dut, make_env)
    env, p = tb.env, tb.params
    dut.bus__w_stb.value = 0
    dut.bus__r_stb.value = 0
    await tb.hold_reset()
    drv = Driver(CocotbBus(dut), p)
    await drv.check()
    sc = env.sc
    for index, (mode, base, size, device, remote_base) in enumerate(sc.regions()):
        await drv.program_region(index, mode=mode, base=base, size=size, device=device,
                                 remote_base=remote_base)
    await drv.program_arbiter(policy=policy, threshold=0 if policy == "t3_mca" else 4,
                              saturation=8, window_log2=6, starvation_limit=32)
    for tile, threshold, d in sc.descriptors():
        fields = dict(d)
        await drv.dma_map(tile, threshold, cmd=tile, dst_tile=fields.pop("tile"), **fields)
    start = env.cycle
    await engine_env.run(env, tb.cycle)
    cycles = env.cycle - start
    errors = await drv.errors()
    stats = await drv.stats()
    dut._log.info("seed=%d policy=%s: %d cycles, %d packets, DRAM %s, stats %s", tb.seed,
                  policy, cycles, len(env.packets), env.served, stats)
    assert not any(v for bits in errors.values() for v in bits.values()), errors
    bursts = 2 * sc.tiles * sc.bursts_per_tile      # per partial pair, over both chunks
    t, d, a, r = stats["tracker"], stats["dma"], stats["addrmap"], stats["arbiter"]
    assert (t["writes_compute"], t["writes_remote"], t["writes_dma"]) == (bursts, bursts, 0)
    assert (t["triggers"], t["unprogrammed"], t["dropped"]) == (2 * sc.tiles, 0, 0)
    assert (d["triggers"], d["reads"], d["packets"], d["rejected"]) == \
        (2 * sc.tiles, bursts, bursts, 0)
    assert (a["tracked"], a["remote"], a["local"], a["unmapped"]) == (bursts, bursts, 0, 0)
    assert (r["grants_store"], r["grants_remote"], r["grants_dma"]) == \
        (bursts, 2 * bursts, bursts)
    assert r["grants_load"] == env.loads_issued
    assert env.served == {"read": r["grants_load"] + bursts, "store": bursts,
                          "update": 2 * bursts}
