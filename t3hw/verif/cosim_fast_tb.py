# SPDX-License-Identifier: Apache-2.0
"""cocotb testbench of the fast co-simulation: the simulation shell around
:class:`~t3hw.verif.simhdl.top.FastSystem` generates the clock, and the GPU cores, DRAMs and
ring run as simulation-only HDL; Python is woken at tile events only.

The run, against the exact co-simulation (:mod:`t3hw.verif.cosim_tb`):

* reset and programming are the same code (:func:`~t3hw.verif.cosim_tb.reset_and_program`),
  so the run starts on the same cycle of the same engine state; the testbench raises ``run``
  at the falling edge where the exact loop writes its first inputs (cycle 0), with cycle 0's
  tiles on every GPU's ``desc`` (every unit is free then: the testbench knows which take a
  tile, and checks it once the cycle has started);
* then it sleeps on the top's ``stamp`` (it changes, at a rising edge, in every cycle in
  which some GPU retires or dispatches a tile, and once the run is done). At an event it
  does what :class:`sim_models.gpu.GpuCores` does in Python at that cycle's end: the
  retiring compute units' tiles leave the producer's L2
  (:meth:`~sim_models.gpu.GemmProducer.retire`, in CU order), the dispatched tiles enter it
  (:meth:`~sim_models.gpu.GemmProducer.dispatch`), and each dispatched CU's tile is written
  on ``g<i>__desc`` at once, which the shell samples at the falling edge in the middle of
  the cycle, for the rising edge that ends it;
* at the end it reads the counters of the models and, over the register buses, every
  engine's error bits and counters, and writes the results, with each GPU's tiles in the
  order they retired: :func:`t3hw.verif.cosim_replay.replay` attaches the data to the log the
  shell wrote and checks the numerics afterwards.

A run split over processes (:mod:`t3hw.tools.cosim_split`) runs this testbench once per
part, on the part's GPUs only (``T3HW_PART`` = ``part/parts``; ``T3HW_XCHG``, the shared
file): when its GPUs are done it keeps simulating, polling the other parts' progress, until
every part is done and every packet sent between them was received; it then marks itself
stopped, so that no other part waits for its cycles, and reads its engines back. Its
result has ``done_since``, the cycle its ``done`` last rose, from which
:func:`t3hw.tools.cosim_split.merge` takes the whole run's.

Settings (set by :mod:`t3hw.tools.cosim_fast`): ``T3HW_COSIM`` (JSON of
:class:`~sim_models.cosim.CosimConfig`), ``T3HW_COSIM_OUT`` (the results, JSON),
``T3HW_COSIM_PROGRESS`` (optional), ``T3HW_PART`` and ``T3HW_XCHG`` (a split run's).
"""

import json
import os
import time
from collections import deque

import cocotb
from cocotb.triggers import Edge, FallingEdge, First, RisingEdge, Timer

from sim_models.collective import B_BASE
from sim_models.cosim import CosimConfig, Plan
from sim_models.gpu import first_load
from .exchange import Exchange, quiescent
from .cosim_tb import read_back, reset_and_program
from .simhdl.gpu import desc_layout, store_descriptors


#: Simulated time between the testbench's checks of progress and of a stuck run (ns; the
#: shell's clock period is 10 ns).
CHECK_NS = 2_000_000
#: Checks in a row without any tile retired, packet sent or result byte written: stuck.
STUCK_CHECKS = 5
#: Simulated time between a done part's looks at the other parts' progress (ns).
POLL_NS = 5_000
#: cocotb's ``Immediate`` write action (``GPI_NO_DELAY``).
_GPI_NO_DELAY = 3


class _Gpu:
    """GPU ``i``'s event ports (raw simulator objects), its producer and its tile order: the
    part of :class:`sim_models.gpu.GpuCores` that is not per cycle. ``j``: its ports'
    index in the top (``i``, but in a part of a split run)."""

    def __init__(self, dut, i, plan, params, j=None):
        self.i, self.prod, self.burst = i, plan.producers[i], params.burst_bytes
        j = i if j is None else j
        h = lambda name: getattr(dut, f"g{j}__{name}")
        self.retire, self.dispatch = h("retire")._handle, h("dispatch")._handle
        self.cus = len(h("retire"))
        self.desc = h("desc")
        self.order = deque(self.prod.order())
        self.stores = store_descriptors(plan, i)
        self.layout = desc_layout(params)
        self.fields = [(name, f.offset, (1 << f.width) - 1) for name, f in self.layout]
        self.held = [None] * self.cus               # the tile each CU holds
        self.retired = []                           # tiles, in the order they retired
        self.last_retire = None                     # the cycle of the last retirement

    def _entry(self, t):
        """The ``desc`` entry of tile ``t``, packed (as ``GpuCores.dispatch`` would set up
        the CU: its loads, its first load's address, and its stores)."""
        addr0, rows, row_bytes, pitch, tid = self.stores[t]
        loads = -(-self.prod.dispatch(t) // self.burst)
        values = {"loads": loads, "load_addr": first_load(B_BASE, t), "addr0": addr0,
                  "rows": rows, "row_bytes": row_bytes, "pitch": pitch, "tid": tid}
        word = 0
        for name, offset, mask in self.fields:
            if values[name] & ~mask:
                raise AssertionError(f"GPU {self.i}: tile {t}'s {name} = {values[name]} does "
                                     f"not fit its field of the simulation-only GPU")
            word |= values[name] << offset
        return word

    def first(self):
        """Write cycle 0's tiles before the cycle starts (the shell samples ``desc`` at its
        falling edge): every unit is free then, so units ``0 .. min(cus, tiles) - 1``
        dispatch and none retires. Returns that dispatch mask, for :meth:`check_first`."""
        mask = (1 << min(self.cus, len(self.order))) - 1
        self._dispatch(mask)
        return mask

    def check_first(self, mask):
        """Raise if cycle 0's retire and dispatch masks are not what :meth:`first` wrote
        tiles for."""
        r, d = self.retire.get_signal_val_long(), self.dispatch.get_signal_val_long()
        if r or d != mask:
            raise AssertionError(f"GPU {self.i}: cycle 0 retires {r:#x} and dispatches "
                                 f"{d:#x}; the testbench wrote tiles for {mask:#x}")

    def handle(self, cycle):
        """Cycle ``cycle``'s retires and dispatches, as ``GpuCores.retire`` then
        ``dispatch``."""
        r, d = self.retire.get_signal_val_long(), self.dispatch.get_signal_val_long()
        if r:
            self.last_retire = cycle
        for k in range(self.cus):
            if r >> k & 1:
                t = self.held[k]
                self.prod.retire(t)
                self.retired.append(t)
                self.held[k] = None
        self._dispatch(d)

    def _dispatch(self, d):
        """The next tiles to the units of mask ``d``, written on ``desc``."""
        if d:
            value, size = 0, self.layout.size
            for k in range(self.cus):
                if d >> k & 1:
                    t = self.order.popleft()
                    self.held[k] = t
                    value |= self._entry(t) << (k * size)
            raw, width = self.desc._handle, len(self.desc)
            raw.set_signal_val_binstr(_GPI_NO_DELAY, format(value, f"0{width}b"))


def _val(dut, name):
    return int(getattr(dut, name).value)


def _part():
    """``(part, parts, exchange)`` of a split run, ``(0, 1, None)`` otherwise. A run of GPU 0
    of a symmetric ring is part 0 of ``gpus`` parts on an exchange of one part
    (:func:`t3hw.tools.cosim_split.run_parts` with ``symmetric``)."""
    spec = os.environ.get("T3HW_PART")
    if not spec:
        return 0, 1, None
    part, parts = (int(x) for x in spec.split("/"))
    path, _, shared = os.environ["T3HW_XCHG"].split("|")[:3]
    return part, parts, Exchange(path, int(shared))


def _others_failed(progress, part):
    """The parts (but ``part``) that stopped before they were done."""
    return [q for q, p in enumerate(progress) if q != part and p[4] and not p[1]]


@cocotb.test()
async def cosim_fast(dut):
    """Program every engine, run the scenario with Python at tile events, write the results."""
    cfg = CosimConfig.from_dict(json.loads(os.environ["T3HW_COSIM"]))
    out_path = os.environ["T3HW_COSIM_OUT"]
    progress_path = os.environ.get("T3HW_COSIM_PROGRESS")
    part, parts, ex = _part()
    n = cfg.gpus // parts
    ring = list(range(part * n, (part + 1) * n))         # the ring's GPUs this top has
    dut._log.info("seed=%d %s", cfg.seed, cfg.to_dict())
    t_wall = time.perf_counter()
    plan = Plan(cfg)
    # the scenario's sizes, before reset (the shell samples them at falling edges)
    dut.run.value = 0
    dut.result_base.value = plan.r_base
    dut.r_expected.value = plan.r_expected
    if ex is not None:
        dut.first.value = ring[0]
    for j, i in enumerate(ring):
        getattr(dut, f"g{j}__tiles").value = len(plan.producers[i].order())
        getattr(dut, f"g{j}__compute").value = plan.producers[i].compute_cycles
        getattr(dut, f"g{j}__desc").value = 0
    drivers, armed, prog_cycles = await reset_and_program(dut, cfg, plan, gpus=ring)
    await RisingEdge(dut.clk)
    gpus = [_Gpu(dut, i, plan, cfg.params, j) for j, i in enumerate(ring)]
    tiles_total = n * len(plan.producers[0].tiles)

    if ex is not None:
        ex.start(part)                          # the parts start their runs together
    # -- the run: cycle 0 starts at the next falling edge, as in the exact loop, where the
    # shell samples `run` (t3hw.tools.cosim_fast.shell) --------------------------------------
    t_run = time.perf_counter()
    dut.run._handle.set_signal_val_int(_GPI_NO_DELAY, 1)
    first = [g.first() for g in gpus]           # cycle 0's tiles, sampled with `run`
    await FallingEdge(dut.clk)
    await Timer(1, "ns")
    for g, mask in zip(gpus, first):
        g.check_first(mask)
    stamp, now, done = dut.stamp._handle, dut.cycle._handle, dut.done._handle
    events = wakes = 0
    stuck, last, quiet, waiting, failed = False, None, 0, False, []
    try:
        while True:
            # a done part of a split run polls the others until the whole ring is done
            trig = await First(Edge(dut.stamp), Timer(POLL_NS if waiting else CHECK_NS, "ns"))
            wakes += 1
            if ex is not None:
                waiting = bool(done.get_signal_val_long())
                if waiting or isinstance(trig, Timer):      # not at every tile event
                    prog = ex.progress()
                    failed = _others_failed(prog, part)
                    if failed or (waiting and quiescent(prog)):
                        break
            if isinstance(trig, Timer):
                if waiting:
                    continue
                mark = (sum(g.retired.__len__() for g in gpus),
                        sum(_val(dut, f"g{j}__packets") + _val(dut, f"g{j}__r_writes")
                            for j in range(n)))
                quiet = quiet + 1 if mark == last else 0
                last = mark
                if progress_path:
                    with open(progress_path, "w") as f:
                        f.write(json.dumps({"cycle": _val(dut, "cycle"), "tiles": mark[0],
                                            "tiles_total": tiles_total,
                                            "r_bytes": sum(_val(dut, f"g{j}__r_writes")
                                                           for j in range(n)),
                                            "r_total": n * plan.r_expected}))
                if quiet >= STUCK_CHECKS or _val(dut, "error"):
                    stuck = quiet >= STUCK_CHECKS
                    break
                continue
            if not stamp.get_signal_val_long():
                continue
            if _val(dut, "error") or (ex is None and _val(dut, "done")):
                break
            if waiting:
                continue
            events += 1
            cyc = now.get_signal_val_long()
            for g in gpus:
                g.handle(cyc)
    finally:
        if ex is not None:
            ex.stop(part)           # the others no longer wait for this part's cycles
    cycle = _val(dut, "cycle")
    wall_run = time.perf_counter() - t_run

    per_gpu = [{k: _val(dut, f"g{j}__{k}") for k in
                ("tiles_done", "store_wait", "packets", "r_writes", "last_write", "gpu_error",
                 "dram_error", "error_cycle")} for j in range(n)]
    errors, stats, bad = await read_back(drivers)
    result = {
        "config": cfg.to_dict(),
        "mode": "fast",
        "stuck": stuck,
        "model_error": {"any": _val(dut, "error"), "ring": _val(dut, "ring_error"),
                        "ring_cycle": _val(dut, "ring_error_cycle"),
                        "gpu": [g["gpu_error"] for g in per_gpu],
                        "dram": [g["dram_error"] for g in per_gpu],
                        "cycle": [g["error_cycle"] for g in per_gpu]},
        "cycles": {"rtl": max(g["last_write"] for g in per_gpu), "programming": prog_cycles,
                   "run": cycle, "events": events, "wakes": wakes},
        "triggers": [s["tracker"]["triggers"] for s in stats],
        "armed": armed,
        "packets": [g["packets"] for g in per_gpu],
        "store_wait_cycles": [g["store_wait"] for g in per_gpu],
        "gemm_cycles": [None if g.last_retire is None else g.last_retire + 1 for g in gpus],
        "tiles_done": [g["tiles_done"] for g in per_gpu],
        "r_writes": [g["r_writes"] for g in per_gpu],
        "retired": [g.retired for g in gpus],
        "memory": cfg.memory,
        "hbm": None,
        "errors": bad,
        "stats": stats,
        "units": {"per_chunk": len(plan.units), "group": plan.group},
        "sim_wall_s": time.perf_counter() - t_wall,
        "run_wall_s": wall_run,
    }
    if ex is not None:
        result["part"] = {"part": part, "parts": parts, "done_since": _val(dut, "done_since"),
                          "late": _val(dut, "xlate"), "others_failed": failed,
                          "done": _val(dut, "done")}
        ex.close()
    with open(out_path, "w") as f:
        json.dump(result, f)
    dut._log.info("cycles %d (run %d), %d events, %d wakes, %.0f cycles/s; errors %s",
                  result["cycles"]["rtl"], cycle, events, wakes,
                  cycle / wall_run if wall_run else 0, bad)
    assert not stuck, f"stuck at cycle {cycle}: per GPU {per_gpu}"
    assert not result["model_error"]["any"], f"a model's error: {result['model_error']}"
    assert not failed, f"parts {failed} stopped before the ring was done"
