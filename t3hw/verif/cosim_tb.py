# SPDX-License-Identifier: Apache-2.0
"""cocotb testbench of the whole-system co-simulation: N engines of generated Verilog
(``t3hw_system``) inside the GPU, NMC-DRAM and network models of
:class:`sim_models.cosim.SystemEnv`.

The driver programs every engine through its own register port, as software would (all N
in parallel): address-map regions, arbiter policy, DMA descriptors and tracker entries of
:class:`sim_models.collective.Plan`. Then the models run, one RTL clock per memory-controller
cycle. While some model has something to do or some output is valid, every cycle is
stepped in Python, on one trigger: at the cycle's falling edge the testbench writes the
inputs and reads the outputs, and waits for ``ReadOnly`` before reading only when an input
of :data:`COMBINATIONAL` changed (``docs/cosim.md``, "One trigger per cycle"). Once
nothing has moved for ``QUIET`` cycles and no model acts before cycle ``t``, the testbench
lowers every output's ``ready`` (so nothing can transfer unseen: the stream rules hold a
``valid`` until it is taken) and lets the simulator run to ``t`` with a single trigger. At
the end it reads every engine's error bits and counters over its bus and writes the results
(``T3HW_COSIM_OUT``, JSON).

Settings (set by :func:`t3hw.tools.cosim.run`): ``T3HW_COSIM`` (JSON of
:class:`~sim_models.cosim.CosimConfig`), ``T3HW_COSIM_OUT``, ``T3HW_COSIM_PROGRESS``
(a file the progress is written to, optional).
"""

import functools
import json
import os
import random
import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

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


#: The outputs the loop samples that depend combinationally on inputs of the same cycle,
#: with those inputs (port names as ``<stream>_<field>``), in the generated Verilog:
#: the arbiter takes a load straight to the ``dram`` port's register slice, and routes a
#: compute read's response straight from ``dram_response`` to ``load_response``. Every other
#: sampled output (the other streams' ``valid``, ``payload`` and ``ready``) comes from
#: registers only. ``tests/test_cosim_comb.py`` derives this map from ``rtl/t3hw_system.v``
#: with Yosys and checks it.
COMBINATIONAL = {
    "load_ready":            ("load_valid", "dram_ready"),
    "dram_response_ready":   ("dram_response_payload", "load_response_ready"),
    "load_response_valid":   ("dram_response_payload", "dram_response_valid"),
    "load_response_payload": ("dram_response_payload",),
}
_COMB_INPUTS = frozenset(i for inputs in COMBINATIONAL.values() for i in inputs)

#: cocotb's ``Immediate`` write action (``GPI_NO_DELAY`` in cocotb 2.1's ``gpi.h``: a VPI
#: ``vpiNoDelay`` put, in the model at once, evaluated when the callback returns).
_GPI_NO_DELAY = 3


class _Engine:
    """Engine ``i``'s data ports: the simulator objects under their cocotb handles, the last
    value driven on each input, and the item whose payload each input stream carries.

    The loop reads and writes some 30 values per engine per cycle. cocotb 2.1's
    ``handle.value`` turns every read into a :class:`~cocotb.types.LogicArray` and queues
    every write for a ``ReadWrite`` callback; here each port is read and written through
    the GPI object under its handle (``handle._handle``, cocotb 2.1's ``sim_obj``, pinned in
    ``pyproject.toml``): ``get_signal_val_long`` up to 32 bits, ``get_signal_val_binstr``
    above (Verilator is two-state: always a plain binary string), and the matching setters
    with cocotb's ``Immediate`` action. Once the clock runs, the testbench writes them at
    falling edges only, where no register samples (every process of the system is
    ``always @(posedge clk)``).
    """

    IN  = ("store", "load", "dram_response", "net_rx")
    OUT = ("dram", "load_response", "net_tx")

    def __init__(self, dut, i):
        self.index = i
        self.get, self._put, self.last = {}, {}, {}
        for s in self.IN + self.OUT:
            for f in ("valid", "payload", "ready"):
                self._port(dut, f"{s}_{f}", f"e{i}__{s}__{f}")
        self._port(dut, "occupancy", f"e{i}__occupancy")
        self.item = dict.fromkeys(self.IN)
        self.moved = False          # an input of COMBINATIONAL changed since the last read

    def _port(self, dut, name, port):
        handle = getattr(dut, port)
        raw, width = handle._handle, len(handle)
        if width <= 32:
            self.get[name] = raw.get_signal_val_long
            self._put[name] = functools.partial(raw.set_signal_val_int, _GPI_NO_DELAY)
        else:
            self.get[name] = lambda: int(raw.get_signal_val_binstr(), 2)
            self._put[name] = lambda v, fmt=f"0{width}b": \
                raw.set_signal_val_binstr(_GPI_NO_DELAY, format(v, fmt))

    def set(self, name, value):
        if self.last.get(name) != value:
            self._put[name](value)
            self.last[name] = value
            if name in _COMB_INPUTS:
                self.moved = True

    def offer(self, s, item, pack):
        """Drive input stream ``s`` with ``item`` (None: idle). The payload is packed when
        the item is first offered, not again while it waits."""
        valid, payload, _ = _NAMES[s]
        if item is None:
            self.set(valid, 0)
            return
        if item is not self.item[s]:
            self.item[s] = item
            self.set(payload, pack(item))
        self.set(valid, 1)


#: Per stream, its ports' names in :class:`_Engine`: ``(valid, payload, ready)``.
_NAMES = {s: (f"{s}_valid", f"{s}_payload", f"{s}_ready") for s in _Engine.IN + _Engine.OUT}


async def reset_and_program(dut, cfg, plan, quiet=None, gpus=None):
    """Reset the system top (``quiet()``, if given, idles the data ports meanwhile) and program
    every engine in parallel over its own register port, as software would: device id,
    address-map regions, arbiter policy, DMA descriptors and tracker entries of ``plan``.
    ``gpus`` (default: the whole ring) are the ring's GPUs whose engines the top has, engine
    ``e<j>`` being GPU ``gpus[j]`` (a part of a split run, :mod:`t3hw.tools.cosim_split`).

    Returns ``(drivers, armed, cycles)``: the engines' :class:`~t3hw.sw.driver.Driver`, the
    triggers armed per engine and the cycles programming took. The exact and the fast
    co-simulation (:mod:`t3hw.verif.cosim_fast_tb`) share it, so both start their run on
    the same cycle of the same engines' state."""
    p = cfg.params
    gpus = list(range(cfg.gpus) if gpus is None else gpus)
    n = len(gpus)
    dut.rst.value = 1
    if quiet is not None:
        quiet()
    for j in range(n):
        getattr(dut, f"e{j}__bus__w_stb").value = 0
        getattr(dut, f"e{j}__bus__r_stb").value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    drivers = [Driver(CocotbBus(dut, f"e{j}__"), p) for j in range(n)]
    armed = [0] * n

    async def program(j):
        drv, i = drivers[j], gpus[j]
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
            armed[j] += 1

    tasks = [cocotb.start_soon(program(j)) for j in range(n)]
    for t in tasks:
        await t
    return drivers, armed, max(d.bus.accesses for d in drivers)


async def read_back(drivers):
    """Every engine's error bits and counters over its bus: ``(errors, stats, bad)``, ``bad``
    the names of the error bits set, per engine and block."""
    errors, stats = [], []
    for drv in drivers:
        errors.append(await drv.errors())
        stats.append(await drv.stats())
    bad = [{blk: [k for k, v in bits.items() if v] for blk, bits in e.items()} for e in errors]
    return errors, stats, bad


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

    def quiet():
        for e in engines:
            for s in _Engine.IN:
                e.set(f"{s}_valid", 0)
            for s in _Engine.OUT:
                e.set(f"{s}_ready", 0)
            e.set("occupancy", 0)

    drivers, triggers_armed, prog_cycles = await reset_and_program(dut, cfg, plan, quiet)
    await RisingEdge(dut.clk)

    # -- the run ------------------------------------------------------------------------------
    t_run = time.perf_counter()
    start = 0
    skipped = stepped = skips = late = settled = 0
    next_report = 0.0
    stuck = False
    # a payload is packed once per item; of a transfer, only the fields the models read
    pack = {"store": lambda item: c["store"].pack(addr=item[0], tile=item[1],
                                                  bytes=item[2].nbytes, kind=1),
            "load": lambda item: c["load"].pack(**item[1]),
            "dram_response": lambda item: c["dram_response"].pack(**item),
            "net_rx": lambda item: c["net"].pack(**item[2])}
    unpack = {"dram": c["dram"].unpacker(("op", "source", "addr", "bytes", "tag")),
              "load_response": c["load_response"].unpacker(("tag",)),
              "net_tx": c["net"].unpacker(c["net"].names)}
    occupancy_max = (1 << p.occupancy_width) - 1
    await FallingEdge(dut.clk)
    while not env.done():
        # At the falling edge in the middle of cycle env.cycle: the rising edge that began it
        # has been evaluated with the inputs written at the last falling edge (the cycle
        # before's), and no register samples before the next rising edge, so the inputs of
        # this cycle are written now. The outputs sampled below are functions of the
        # registers, and of the inputs in COMBINATIONAL: when none of those inputs changes
        # value, every output already has the value it keeps once this cycle's inputs settle
        # and is read at once (one trigger per cycle); otherwise the loop waits for ReadOnly
        # first (two). docs/cosim.md, "One trigger per cycle", has the argument.
        drive = [env.drive(i) for i in range(n)]      # all drives, then all observes: the
        for e, (port, rdy) in zip(engines, drive):    # order of the models' random draws
            for s in _Engine.IN:
                e.offer(s, getattr(port, s), pack[s])
            for s in _Engine.OUT:
                e.set(_NAMES[s][2], int(rdy[s]))
            e.set("occupancy", min(env.drams[e.index].occupancy, occupancy_max))
        if any(e.moved for e in engines):
            await ReadOnly()
            settled += 1
            for e in engines:
                e.moved = False
        any_valid = False
        for i, e in enumerate(engines):
            port, rdy = drive[i]
            get = e.get
            took = {s: getattr(port, s) is not None and get[_NAMES[s][2]]()
                    for s in _Engine.IN}
            shown = {}
            for s in _Engine.OUT:
                valid, payload, _ = _NAMES[s]
                if get[valid]():
                    any_valid = True
                    if rdy[s]:
                        shown[s] = unpack[s](get[payload]())
            env.observe(i, took, shown)
        env.tick()
        stepped += 1
        await FallingEdge(dut.clk)
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
                await ClockCycles(dut.clk, k, rising=False)
                env.cycle += k
                skipped += k
                skips += 1
                await ReadOnly()             # outputs of cycle env.cycle, settled
                for e in engines:
                    e.moved = False
                if any(e.get[f"{s}_valid"]() for e in engines for s in _Engine.OUT):
                    late += 1                    # an output rose during the skip: it waited
                await FallingEdge(dut.clk)
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
    errors, stats, bad = await read_back(drivers)
    ok, err = env.numerics()
    result = {
        "config": cfg.to_dict(),
        "numerics_ok": ok and not stuck, "max_abs_err": err, "stuck": stuck,
        "cycles": {"rtl": end - start, "programming": prog_cycles, "stepped": stepped,
                   "skipped": skipped, "skips": skips, "late_after_skip": late,
                   "settled": settled},
        "triggers": [s["tracker"]["triggers"] for s in stats],
        "armed": triggers_armed,
        "packets": env.packets,
        "store_wait_cycles": env.store_wait,
        "gemm_cycles": [None if g.last_retire is None else g.last_retire + 1 - start
                        for g in env.gpus],
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
