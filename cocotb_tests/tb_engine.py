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
import random

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from t3hw.spec.contract import addrmap_latency
from t3hw.verif import engine_env
from t3hw.verif.engine_env import EngineEnv, LoopScenario
from t3hw.sw.bus import CocotbBus
from t3hw.sw.driver import Driver
from t3hw.verif.cocotb_tb import EnvTB
from t3hw.spec.layouts import TrackResult


async def _program(drv, sc, policy, *, wave=0):
    """Map the scenario's regions and wave ``wave``'s tiles; configure the arbiter."""
    await drv.set_device_id(1)              # the loopback: packets to device 1 come back here
    for index, (mode, base, size, device, remote_base) in enumerate(sc.regions()):
        await drv.program_region(index, mode=mode, base=base, size=size, device=device,
                                 remote_base=remote_base)
    await drv.program_arbiter(policy=policy, threshold=0 if policy == "t3_mca" else 4,
                              saturation=8, window_log2=6, starvation_limit=32)
    for tile, threshold, d in sc.descriptors(wave):
        fields = dict(d)
        await drv.dma_map(tile, threshold, cmd=tile, dst_tile=fields.pop("tile"), **fields)


async def _loop(dut, *, shape, policy="t3_mca", remote=True, hold=None, bad=None, waves=1,
                fault=None, during=None, before=None):
    """The loop scenario of ``shape`` (tiles, rows, row_bursts) under ``policy``, with
    ``hold`` (:class:`EngineEnv`'s), programmed over the bus; every packet and the final
    memory checked by the environment, the counters and errors read back here. ``bad``
    (a function of the scenario giving ``(bad_rx, bad_stores, bad_descriptors)``) adds
    inputs the engine must refuse; ``fault`` (:class:`EngineEnv`'s) a bad DRAM answer.
    ``waves``: tiles mapped onto the same entries wave after wave; ``during(drv, env)`` runs
    beside the scenario (it maps the later waves). ``before(tb)``, if given, runs first,
    right after the first reset. Returns ``(env, errors, stats, first_errors)``."""
    tiles, rows, row_bursts = shape
    bad_inputs = {}

    def make_env(params, rng):
        sc = LoopScenario(params, np.random.default_rng(rng.getrandbits(32)), tiles=tiles,
                          rows=rows, row_bursts=row_bursts, remote=remote, waves=waves)
        bad_rx, bad_stores, bad_desc = bad(sc) if bad else ((), (), ())
        bad_inputs.update(rx=list(bad_rx), stores=list(bad_stores), desc=list(bad_desc))
        return EngineEnv(params, rng, sc, hold=hold, bad_rx=bad_rx, bad_stores=bad_stores,
                         fault=fault)

    tb = EnvTB(dut, make_env)
    dut.bus__w_stb.value = 0
    dut.bus__r_stb.value = 0
    await tb.hold_reset()
    drv = Driver(CocotbBus(dut), tb.params)
    await drv.check()
    if before is not None:
        await before(tb, drv, make_env)
    env = tb.env
    await _program(drv, env.sc, policy)
    for index, fields in bad_inputs.get("desc", ()):   # refused: the table keeps index
        await drv.program_descriptor(index, **fields)
    start = env.cycle
    side = cocotb.start_soon(during(drv, env)) if during is not None else None
    await engine_env.run(env, tb.cycle)
    if side is not None:
        assert side.done(), "the mapping of the later waves did not finish"
        side.result()                       # re-raise its failure, if any
    cycles = env.cycle - start
    # A refused input is reported when the address map classifies it, addrmap_latency
    # cycles after the engine took it (the scenario may end in between).
    for _ in range(addrmap_latency(env.p) + 2):
        await RisingEdge(dut.clk)
    errors = await drv.errors()
    stats = await drv.stats()
    first = await drv.first_errors()
    sc = env.sc
    dut._log.info("seed=%d policy=%s shape=%s remote=%s waves=%d hold=%s fault=%s: %d cycles, "
                  "%d packets, DRAM %s, stats %s", tb.seed, policy, shape, remote, waves, hold,
                  fault, cycles, len(env.packets), env.served, stats)
    refused = {(block, bit) for block, bits in errors.items() for bit, v in bits.items() if v}
    if bad is None and fault is None and during is None:
        assert not refused, errors
    bursts = 2 * sc.tiles * sc.bursts_per_tile * waves      # tracked bursts, both chunks
    lost = sc.bursts_per_tile if fault is not None else 0  # the aborted descriptor's
    r = int(remote)
    t, d, a, g = stats["tracker"], stats["dma"], stats["addrmap"], stats["arbiter"]
    assert (t["writes_compute"], t["writes_remote"], t["writes_dma"]) == (bursts, r * bursts, 0)
    assert (t["triggers"], t["unprogrammed"], t["dropped"]) == (2 * sc.tiles * waves, 0, 0)
    assert (d["triggers"], d["packets"], d["rejected"]) == \
        (2 * sc.tiles * waves, bursts - lost, 0)
    assert bursts - lost < d["reads"] <= bursts if lost else d["reads"] == bursts, d
    assert (a["tracked"], a["remote"], a["local"]) == (bursts, r * bursts, 0)
    assert a["unmapped"] == 0
    assert (g["grants_store"], g["grants_remote"], g["grants_dma"]) == \
        (bursts, (1 + r) * bursts - lost, d["reads"])
    assert g["grants_load"] == env.loads_issued
    assert env.served == {"read": g["grants_load"] + d["reads"], "store": bursts - lost,
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


@cocotb.test()
async def test_back_pressure_rewave(dut):
    """Two waves of one-burst tiles on the same tracker entries and descriptors, the link
    held for the first ``T3HW_ENGINE_HOLD`` cycles. Software maps wave 2 as soon as wave 1's
    tiles have all completed, while their triggers still wait: an ARM of an entry whose
    firing is pending is refused (``BUSY``), and a descriptor named by a pending firing, or
    queued in the DMA, cannot be rewritten (``desc_busy``; the driver retries until the DMA
    has started it). Wave 2's stores for a tile go once its entry is mapped again; half of
    its entries are re-arm entries. Every tile of both waves is sent exactly once, from its
    own wave's buffer to its own wave's destination."""
    hold = int(os.environ.get("T3HW_ENGINE_HOLD", "6000"))
    tiles = _shape("64,1,1")[0]
    seen = {}

    async def remap(drv, env):
        sc = env.sc
        while env.stores or env.store is not None:          # wave 1 given to the engine
            await RisingEdge(dut.clk)
        # A tile of wave 1 whose firing waits: the DMA holds a few triggers and the tracker
        # the rest (which tiles the DMA took depends on the random store order; the last
        # stores may still be on their way to the tracker), so look from the last tile down.
        for last, threshold, _ in reversed(sc.descriptors(1)):
            seen["entry"] = await drv.read_entry(last)
            if seen["entry"]["pending"]:
                break
        seen["verdict"] = await drv.arm(last, threshold, last)   # its firing waits: BUSY
        seen["desc_busy"] = (await drv.stats())["dma"]["desc_busy"]
        for tile, threshold, d in sc.descriptors(1):
            fields = dict(d)
            await drv.dma_map(tile, threshold, cmd=tile, dst_tile=fields.pop("tile"),
                              rearm=bool(tile % 2), **fields)
            env.release(tile)
        seen["cycle"] = env.cycle

    env, errors, stats, _ = await _loop(dut, shape=(tiles, 1, 1), remote=False, waves=2,
                                        hold={"net_tx": (0, hold)}, during=remap)
    assert seen["entry"]["pending"] == 1 and not seen["entry"]["valid"], seen["entry"]
    assert seen["verdict"] == TrackResult.BUSY, seen["verdict"]
    assert seen["cycle"] > hold, "wave 2 mapped before the link came back"
    assert stats["dma"]["desc_busy"] > 0, "no descriptor write was refused"
    refused = {(b, bit) for b, bits in errors.items() for bit, v in bits.items() if v}
    # the one BUSY ARM leaves `reprogram`; the driver cleared each desc_busy it retried
    assert refused == {("tracker", "reprogram")}, errors
    dut._log.info("rewave: wave 2 mapped by cycle %d; %d descriptor writes refused as busy",
                  seen["cycle"], stats["dma"]["desc_busy"])


@cocotb.test()
async def test_back_pressure_reset(dut):
    """Reset in the middle of a run: the loop scenario with the link held, reset once every
    tile has completed and their triggers wait. After the reset every error bit and counter
    reads 0, no entry is armed or has a firing pending, no descriptor is valid, and none of
    the first run's packets ever leaves; a new scenario then runs exactly."""
    hold = int(os.environ.get("T3HW_ENGINE_HOLD", "6000"))
    tiles = _shape("64,1,1")[0]
    seen = {}

    async def first_run(tb, drv, make_env):
        env = tb.env
        env.hold = {"net_tx": (0, 1 << 30)}
        await _program(drv, env.sc, "t3_mca")
        for _ in range(hold):
            await tb.cycle()
            if not env.stores and env.store is None and not env.queue:
                break
        for _ in range(200):                # the last completions reach the tracker
            await tb.cycle()
        before = await drv.stats()
        assert before["tracker"]["triggers"] == 2 * env.sc.tiles, before["tracker"]
        assert not env.packets, "a packet left with the link held"
        await tb.hold_reset()
        tb.env = make_env(tb.params, random.Random(tb.seed + 1))   # a new scenario
        await drv.check()
        seen["errors"] = await drv.errors()
        seen["stats"] = await drv.stats()
        seen["entries"] = [await drv.read_entry(t) for t in range(2 * env.sc.tiles)]
        seen["descriptors"] = [(await drv.read_descriptor(t))["valid"]
                               for t in range(2 * env.sc.tiles)]
        seen["device"] = await drv.device_id()

    await _loop(dut, shape=(tiles, 1, 1), remote=False, before=first_run)
    assert not any(v for bits in seen["errors"].values() for v in bits.values()), seen
    assert not any(v for block in seen["stats"].values() for v in block.values()), seen
    assert all(not e["valid"] and not e["pending"] for e in seen["entries"]), seen["entries"]
    assert not any(seen["descriptors"]), seen["descriptors"]
    assert seen["device"] == 0, seen["device"]


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
    ``store``, ``descriptor``, or a bad DRAM answer to a DMA read: ``read_error``, its error
    bit set, or ``bad_response``, a wrong tag): each refused at the input with its own
    sticky bit and counter, the first one's details in the block's first-error capture, and
    the scenario itself still exact (every packet once, with its data; the DRAM receives
    nothing of the refused inputs: a refused packet or store that reached it would have no
    data behind it; the descriptor of a bad answer is aborted: none of its packets leave)."""
    kind = os.environ.get("T3HW_ENGINE_BAD", "rx")
    shape = _shape("8,2,2")
    if kind in ("read_error", "bad_response"):
        tile = 3
        make, block, bits = None, "dma", [kind]
        fault = ("error" if kind == "read_error" else "tag", tile)
    else:
        (make, block, bits), fault = _BAD[kind], None
    env, errors, stats, first = await _loop(dut, shape=shape, bad=make, fault=fault)
    want = {(block, bit) for bit in bits}
    got = {(b, bit) for b, bb in errors.items() for bit, v in bb.items() if v}
    assert got == want, (got, want)
    for bit in bits:
        counter = "aborted" if fault else bit
        assert stats[block][counter] == 1, (counter, stats[block])
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
    elif fault:
        d = dict(env.sc.descriptors()[tile][2])
        assert (cap["index"], cap["tile"], cap["addr"]) == (tile, d["tile"], d["src"]), cap
        assert env.aborted == (tile, 0)
    else:
        assert cap["index"] == env.p.dma_descriptors - 1, cap
    dut._log.info("bad_input %s: refused with %s, counters %s, capture %s", kind, bits,
                  {bit: stats[block]["aborted" if fault else bit] for bit in bits}, cap)
