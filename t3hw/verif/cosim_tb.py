# SPDX-License-Identifier: Apache-2.0
"""cocotb testbench of the whole-system co-simulation: N engines of generated Verilog
(``t3hw_system``) inside the GPU, NMC-DRAM and network models of
:class:`sim_models.cosim.SystemEnv`.

The driver programs every engine through its own register port, as software would (all N
in parallel): address-map regions, arbiter policy, DMA descriptors and tracker entries of
:class:`sim_models.collective.Plan`. Then the models run, one RTL clock per memory-controller
cycle. While some model has something to do or some output is valid, every cycle is
stepped in Python; once nothing has moved for ``QUIET`` cycles and no model acts before
cycle ``t``, the testbench lowers every output's ``ready`` (so nothing can transfer unseen:
the stream rules hold a ``valid`` until it is taken) and lets the simulator run to ``t``
with a single trigger. At the end it reads every engine's error bits and counters over its
bus and writes the results (``T3HW_COSIM_OUT``, JSON).

Settings (set by :func:`t3hw.tools.cosim.run`): ``T3HW_COSIM`` (JSON of
:class:`~sim_models.cosim.CosimConfig`), ``T3HW_COSIM_OUT``, ``T3HW_COSIM_PROGRESS``
(a file the progress is written to, optional).
"""

import json
import os
import random
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from sim_models.cosim import CosimConfig, Plan, SystemEnv
from t3hw.sw.bus import CocotbBus
from t3hw.sw.driver import Driver
from t3hw.spec.layouts import (Codec, load_layout, load_response_layout, mem_request_layout,
                      mem_response_layout, net_packet_layout, store_layout)


#: Cycles without any transfer or valid output before the testbench may skip ahead.
QUIET = 32
#: Longest single skip (cycles), so progress reports keep coming.
MAX_SKIP = 20_000
#: Cycles without any transfer, and with no model event ahead, after which the run is stuck.
STUCK = 100_000


class _Engine:
    """Cached handles and last driven values of engine ``i``'s data ports."""

    IN  = ("store", "load", "dram_response", "net_rx")
    OUT = ("dram", "load_response", "net_tx")

    def __init__(self, dut, i):
        pre = f"e{i}__"
        self.h = {}
        for s in self.IN:
            for f in ("valid", "payload", "ready"):
                self.h[f"{s}_{f}"] = getattr(dut, f"{pre}{s}__{f}")
        for s in self.OUT:
            for f in ("valid", "payload", "ready"):
                self.h[f"{s}_{f}"] = getattr(dut, f"{pre}{s}__{f}")
        self.h["occupancy"] = getattr(dut, f"{pre}occupancy")
        self.last = {}

    def set(self, name, value):
        if self.last.get(name) != value:
            self.h[name].value = value
            self.last[name] = value

    def get(self, name):
        return int(self.h[name].value)

    def payload(self, name):
        return self.h[f"{name}_payload"].value.to_unsigned()


@cocotb.test()
async def cosim(dut):
    """Program every engine over its bus, run the scenario to completion, check numerics,
    errors and counters, and write the results."""
    cfg = CosimConfig.from_dict(json.loads(os.environ["T3HW_COSIM"]))
    out_path = os.environ["T3HW_COSIM_OUT"]
    progress_path = os.environ.get("T3HW_COSIM_PROGRESS")
    p, n = cfg.params, cfg.gpus
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut._log.info("seed=%d %s", cfg.seed, cfg.to_dict())
    t_wall = time.perf_counter()
    plan = Plan(cfg)
    env = SystemEnv(cfg, plan, random.Random(cfg.seed))
    c = {name: Codec(f(p)) for name, f in (
        ("store", store_layout), ("load", load_layout), ("dram", mem_request_layout),
        ("dram_response", mem_response_layout), ("load_response", load_response_layout),
        ("net", net_packet_layout))}
    engines = [_Engine(dut, i) for i in range(n)]

    # -- reset, then program every engine in parallel ---------------------------------------
    dut.rst.value = 1
    for i, e in enumerate(engines):
        for s in _Engine.IN:
            e.set(f"{s}_valid", 0)
        for s in _Engine.OUT:
            e.set(f"{s}_ready", 0)
        e.set("occupancy", 0)
        getattr(dut, f"e{i}__bus__w_stb").value = 0
        getattr(dut, f"e{i}__bus__r_stb").value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    drivers = [Driver(CocotbBus(dut, f"e{i}__"), p) for i in range(n)]
    triggers_armed = [0] * n

    async def program(i):
        drv = drivers[i]
        await drv.check()
        await drv.set_device_id(i)          # received packets for another GPU are refused
        for index, (mode, base, size, device, remote) in enumerate(plan.regions(i)):
            await drv.program_region(index, mode=mode, base=base, size=size, device=device,
                                     remote_base=remote)
        await drv.program_arbiter(policy=cfg.policy, threshold=p.mca_threshold,
                                  saturation=p.mca_saturation,
                                  window_log2=p.mca_window_log2,
                                  starvation_limit=p.starvation_limit)
        for tile, threshold, d in plan.entries(i):
            fields = dict(d)
            await drv.dma_map(tile, threshold, cmd=tile, dst_tile=fields.pop("tile"), **fields)
            triggers_armed[i] += 1

    tasks = [cocotb.start_soon(program(i)) for i in range(n)]
    for t in tasks:
        await t
    prog_cycles = max(d.bus.accesses for d in drivers)
    await RisingEdge(dut.clk)

    # -- the run ------------------------------------------------------------------------------
    t_run = time.perf_counter()
    start = 0
    skipped = stepped = skips = late = 0
    next_report = 0.0
    stuck = False
    unpack = {k: v.unpack for k, v in c.items()}
    while not env.done():
        drive = []
        for i, e in enumerate(engines):
            port, rdy = env.drive(i)
            e.set("store_valid", int(port.store is not None))
            if port.store is not None:
                addr, tile, data = port.store
                e.set("store_payload", c["store"].pack(addr=addr, tile=tile,
                                                        bytes=data.nbytes, kind=1))
            e.set("load_valid", int(port.load is not None))
            if port.load is not None:
                e.set("load_payload", c["load"].pack(**port.load[1]))
            e.set("dram_response_valid", int(port.dram_response is not None))
            if port.dram_response is not None:
                e.set("dram_response_payload", c["dram_response"].pack(**port.dram_response))
            e.set("net_rx_valid", int(port.net_rx is not None))
            if port.net_rx is not None:
                e.set("net_rx_payload", c["net"].pack(**port.net_rx[2]))
            for s in _Engine.OUT:
                e.set(f"{s}_ready", int(rdy[s]))
            e.set("occupancy", min(env.drams[i].occupancy, (1 << p.occupancy_width) - 1))
            drive.append((port, rdy))
        await ReadOnly()
        any_valid = False
        for i, e in enumerate(engines):
            port, rdy = drive[i]
            took = {s: getattr(port, s) is not None and e.get(f"{s}_ready")
                    for s in _Engine.IN}
            shown = {}
            for s in _Engine.OUT:
                if e.get(f"{s}_valid"):
                    any_valid = True
                    if rdy[s]:
                        shown[s] = unpack["net" if s == "net_tx" else s](e.payload(s))
            env.observe(i, took, shown)
        env.tick()
        stepped += 1
        await RisingEdge(dut.clk)
        if not any_valid and env.cycle - env.last_activity >= QUIET and \
                not env.pending_inputs():
            t_next = env.next_event()
            k = MAX_SKIP if t_next is None else min(t_next - env.cycle, MAX_SKIP)
            if k > 1:
                for e in engines:
                    for s in _Engine.IN:
                        e.set(f"{s}_valid", 0)
                    for s in _Engine.OUT:
                        e.set(f"{s}_ready", 0)
                await ClockCycles(dut.clk, k)
                env.cycle += k
                skipped += k
                skips += 1
                await ReadOnly()
                if any(e.get(f"{s}_valid") for e in engines for s in _Engine.OUT):
                    late += 1                    # an output rose during the skip: it waited
                await RisingEdge(dut.clk)
                env.cycle += 1
                skipped += 1
        if progress_path and time.perf_counter() >= next_report:
            next_report = time.perf_counter() + 0.5
            with open(progress_path, "w") as f:
                f.write(json.dumps({"cycle": env.cycle, "tiles": sum(g.tiles_done
                                                                     for g in env.gpus),
                                    "tiles_total": n * len(plan.producers[0].tiles),
                                    "r_bytes": sum(d.r_writes for d in env.drams),
                                    "r_total": n * env.r_expected}))
        if env.cycle - env.last_activity > STUCK and env.next_event() is None:
            stuck = True
            break
    end = env.finish_cycle()
    wall_run = time.perf_counter() - t_run

    # -- read back every engine over its bus --------------------------------------------------
    for e in engines:
        for s in _Engine.IN:
            e.set(f"{s}_valid", 0)
    errors, stats = [], []
    for drv in drivers:
        errors.append(await drv.errors())
        stats.append(await drv.stats())
    ok, err = env.numerics()
    bad = [{blk: [k for k, v in bits.items() if v] for blk, bits in e.items()} for e in errors]
    result = {
        "config": cfg.to_dict(),
        "numerics_ok": ok and not stuck, "max_abs_err": err, "stuck": stuck,
        "cycles": {"rtl": end - start, "programming": prog_cycles, "stepped": stepped,
                   "skipped": skipped, "skips": skips, "late_after_skip": late},
        "triggers": [s["tracker"]["triggers"] for s in stats],
        "armed": triggers_armed,
        "packets": env.packets,
        "store_wait_cycles": env.store_wait,
        "dram_bytes": env.traffic(),
        "memory": cfg.memory,
        "hbm": [dict(d.hbm.stats, late_reads=d.late_reads) for d in env.drams]
        if cfg.memory == "hbm" else None,
        "errors": bad,
        "stats": stats,
        "units": {"per_chunk": len(plan.units), "group": plan.group},
        "sim_wall_s": time.perf_counter() - t_wall,
        "run_wall_s": wall_run,
        "rtl_cycles_per_s": env.cycle / wall_run if wall_run else 0.0,
    }
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    dut._log.info("cycles %d, numerics %s (max err %g), triggers %s, errors %s, %.0f cycles/s",
                  end, ok, err, result["triggers"], bad, result["rtl_cycles_per_s"])
    assert not stuck, (f"stuck at cycle {env.cycle}: R holds {[d.r_writes for d in env.drams]} "
                       f"of {env.r_expected} bytes per GPU; triggers {result['triggers']} of "
                       f"{triggers_armed} armed; packets {env.packets}; errors {bad}; "
                       f"stats {stats}")
