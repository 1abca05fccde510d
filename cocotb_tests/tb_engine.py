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


async def _loop(dut, *, shape, policy="t3_mca", remote=True, hold=None):
    """The loop scenario of ``shape`` (tiles, rows, row_bursts) under ``policy``, with
    ``hold`` (:class:`EngineEnv`'s), programmed over the bus; every packet and the final
    memory checked by the environment, the counters and errors read back here."""
    tiles, rows, row_bursts = shape

    def make_env(params, rng):
        sc = LoopScenario(params, np.random.default_rng(rng.getrandbits(32)), tiles=tiles,
                          rows=rows, row_bursts=row_bursts, remote=remote)
        return EngineEnv(params, rng, sc, hold=hold)

    tb = EnvTB(dut, make_env)
    env, p = tb.env, tb.params
    dut.bus__w_stb.value = 0
    dut.bus__r_stb.value = 0
    await tb.hold_reset()
    drv = Driver(CocotbBus(dut), p)
    await drv.check()
    await drv.set_device_id(1)              # the loopback: packets to device 1 come back here
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
    dut._log.info("seed=%d policy=%s shape=%s remote=%s hold=%s: %d cycles, %d packets, "
                  "DRAM %s, stats %s", tb.seed, policy, shape, remote, hold, cycles,
                  len(env.packets), env.served, stats)
    assert not any(v for bits in errors.values() for v in bits.values()), errors
    bursts = 2 * sc.tiles * sc.bursts_per_tile      # tracked bursts, over both chunks
    r = int(remote)
    t, d, a, g = stats["tracker"], stats["dma"], stats["addrmap"], stats["arbiter"]
    assert (t["writes_compute"], t["writes_remote"], t["writes_dma"]) == (bursts, r * bursts, 0)
    assert (t["triggers"], t["unprogrammed"], t["dropped"]) == (2 * sc.tiles, 0, 0)
    assert (d["triggers"], d["reads"], d["packets"], d["rejected"]) == \
        (2 * sc.tiles, bursts, bursts, 0)
    assert (a["tracked"], a["remote"], a["local"], a["unmapped"]) == (bursts, r * bursts, 0, 0)
    assert (g["grants_store"], g["grants_remote"], g["grants_dma"]) == \
        (bursts, (1 + r) * bursts, bursts)
    assert g["grants_load"] == env.loads_issued
    assert env.served == {"read": g["grants_load"] + bursts, "store": bursts,
                          "update": (1 + r) * bursts}
    return env


def _shape(default):
    return tuple(map(int, os.environ.get("T3HW_ENGINE_SHAPE", default).split(",")))


@cocotb.test()
async def test_loop(dut):
    """Stores classified, tracked, triggered, DMA'd and counted; every packet checked
    against the scenario (its data must be the fully reduced burst); counters and errors read
    back over the bus."""
    await _loop(dut, shape=_shape("8,4,2"), policy=os.environ.get("T3HW_ENGINE_POLICY",
                                                                   "t3_mca"))


@cocotb.test()
async def test_back_pressure_link(dut):
    """One-burst tiles that complete from local stores alone, the link (``net_tx.ready``)
    held low for the first ``T3HW_ENGINE_HOLD`` cycles: every tile completes while nothing
    can leave, far past the DMA's queues; each must be sent exactly once, with its data,
    when the link comes back."""
    hold = int(os.environ.get("T3HW_ENGINE_HOLD", "6000"))
    await _loop(dut, shape=_shape("64,1,1"), remote=False, hold={"net_tx": (0, hold)})


@cocotb.test()
async def test_back_pressure_dram(dut):
    """The DRAM refuses every request for ``T3HW_ENGINE_HOLD`` cycles from the start, then
    the link for as long: tiles pile up at both ends, and every one is sent exactly once."""
    hold = int(os.environ.get("T3HW_ENGINE_HOLD", "6000"))
    await _loop(dut, shape=_shape("64,1,1"), remote=False,
                hold={"dram": (0, hold // 2), "net_tx": (hold // 2, hold)})
