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


async def _loop(dut, *, shape, policy="t3_mca", remote=True, hold=None, bad=None):
    """The loop scenario of ``shape`` (tiles, rows, row_bursts) under ``policy``, with
    ``hold`` (:class:`EngineEnv`'s), programmed over the bus; every packet and the final
    memory checked by the environment, the counters and errors read back here. ``bad``
    (a function of the scenario giving ``(bad_rx, bad_stores, bad_descriptors)``) adds
    inputs the engine must refuse; returns ``(env, errors, stats, first_errors)``."""
    tiles, rows, row_bursts = shape
    bad_inputs = {}

    def make_env(params, rng):
        sc = LoopScenario(params, np.random.default_rng(rng.getrandbits(32)), tiles=tiles,
                          rows=rows, row_bursts=row_bursts, remote=remote)
        bad_rx, bad_stores, bad_desc = bad(sc) if bad else ((), (), ())
        bad_inputs.update(rx=list(bad_rx), stores=list(bad_stores), desc=list(bad_desc))
        return EngineEnv(params, rng, sc, hold=hold, bad_rx=bad_rx, bad_stores=bad_stores)

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
    for index, fields in bad_inputs.get("desc", ()):   # refused: the table keeps index
        await drv.program_descriptor(index, **fields)
    start = env.cycle
    await engine_env.run(env, tb.cycle)
    cycles = env.cycle - start
    errors = await drv.errors()
    stats = await drv.stats()
    first = await drv.first_errors()
    dut._log.info("seed=%d policy=%s shape=%s remote=%s hold=%s: %d cycles, %d packets, "
                  "DRAM %s, stats %s", tb.seed, policy, shape, remote, hold, cycles,
                  len(env.packets), env.served, stats)
    refused = {(block, bit) for block, bits in errors.items() for bit, v in bits.items() if v}
    if bad is None:
        assert not refused, errors
    bursts = 2 * sc.tiles * sc.bursts_per_tile      # tracked bursts, over both chunks
    r = int(remote)
    t, d, a, g = stats["tracker"], stats["dma"], stats["addrmap"], stats["arbiter"]
    assert (t["writes_compute"], t["writes_remote"], t["writes_dma"]) == (bursts, r * bursts, 0)
    assert (t["triggers"], t["unprogrammed"], t["dropped"]) == (2 * sc.tiles, 0, 0)
    assert (d["triggers"], d["reads"], d["packets"], d["rejected"]) == \
        (2 * sc.tiles, bursts, bursts, 0)
    assert (a["tracked"], a["remote"], a["local"]) == (bursts, r * bursts, 0)
    assert a["unmapped"] == 0
    assert (g["grants_store"], g["grants_remote"], g["grants_dma"]) == \
        (bursts, (1 + r) * bursts, bursts)
    assert g["grants_load"] == env.loads_issued
    assert env.served == {"read": g["grants_load"] + bursts, "store": bursts,
                          "update": (1 + r) * bursts}
    return env, errors, stats, first


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


def _bad_rx(sc):
    """Four packets the address map must refuse, one per check, in the order the
    environment gives them (it takes them from the end of the list)."""
    b, burst = sc.base, sc.p.burst_bytes
    pkts = [
        dict(device=1, addr=b["X0"] + sc.chunk_bytes - burst // 2, kind=1, tile=1,
             bytes=burst),                                       # rx_crosses
        dict(device=1, addr=0, kind=1, tile=2, bytes=burst),     # rx_unmapped (below X0)
        dict(device=1, addr=b["W0"], kind=1, tile=3, bytes=burst),   # rx_remote
        dict(device=2, addr=b["X0"], kind=1, tile=4, bytes=burst),   # rx_misrouted
    ]
    return pkts, (), ()


def _bad_store(sc):
    """A producer store that runs past the end of its region (X0)."""
    burst = sc.p.burst_bytes
    return (), [dict(addr=sc.base["X0"] + sc.chunk_bytes - burst // 2, tile=5,
                     bytes=burst)], ()


def _bad_descriptors(sc):
    """Descriptor writes the DMA must refuse: rows overlapping (pitch below the row) and a
    source range that wraps past the top of the address space; indices no tile uses."""
    p, top = sc.p, 1 << sc.p.addr_width
    free = p.dma_descriptors - 1
    row = 2 * p.burst_bytes
    common = dict(device=1, dst=sc.z[0], op=0, tile=0)
    return (), (), [
        (free, dict(src=sc.base["X0"], rows=2, row_bytes=row, pitch=row // 2, **common)),
        (free - 1, dict(src=top - p.burst_bytes, rows=1, row_bytes=row, pitch=row,
                        **common)),
    ]


_BAD = {
    "rx": (_bad_rx, "addrmap", ["rx_misrouted", "rx_remote", "rx_unmapped", "rx_crosses"]),
    "store": (_bad_store, "addrmap", ["store_crosses"]),
    "descriptor": (_bad_descriptors, "dma", ["bad_pitch", "bad_range"]),
}


@cocotb.test()
async def test_bad_input(dut):
    """The loop scenario with inputs the engine must refuse (``T3HW_ENGINE_BAD``: ``rx``,
    ``store`` or ``descriptor``): each refused at the input with its own sticky bit and
    counter, the first one's details in the block's first-error capture, and the scenario
    itself still exact (every packet once, with its data; the DRAM receives nothing of the
    refused inputs: a refused packet or store that reached it would have no data behind it)."""
    kind = os.environ.get("T3HW_ENGINE_BAD", "rx")
    make, block, bits = _BAD[kind]
    env, errors, stats, first = await _loop(dut, shape=_shape("8,2,2"), bad=make)
    want = {(block, bit) for bit in bits}
    got = {(b, bit) for b, bb in errors.items() for bit, v in bb.items() if v}
    assert got == want, (got, want)
    for bit in bits:
        assert stats[block][bit] == 1, (bit, stats[block])
    cap = first[block]
    assert [b for b, v in cap["events"].items() if v] == [bits[0]], cap
    if kind == "rx":
        pkt = _bad_rx(env.sc)[0][-1]                 # the first one given
        assert (cap["addr"], cap["device"], cap["tile"]) == \
            (pkt["addr"], pkt["device"], pkt["tile"]), cap
        assert env.refused["rx"] == 4
    elif kind == "store":
        assert (cap["addr"], cap["tile"]) == \
            (env.sc.base["X0"] + env.sc.chunk_bytes - env.p.burst_bytes // 2, 5), cap
        assert env.refused["store"] == 1
    else:
        assert cap["index"] == env.p.dma_descriptors - 1, cap
    dut._log.info("bad_input %s: refused with %s, counters %s, capture %s", kind, bits,
                  {bit: stats[block][bit] for bit in bits}, cap)
