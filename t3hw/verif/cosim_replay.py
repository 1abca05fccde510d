# SPDX-License-Identifier: Apache-2.0
"""The fast co-simulation's data, replayed after the run: what the exact co-simulation does
with numpy arrays while it runs (:class:`sim_models.cosim.SystemEnv`), done from the log of
the run instead.

The simulation shell (:mod:`t3hw.tools.cosim_fast`) writes one line per event, in cycle
order: ``0 <gpu> <cycle> <op> <source> <addr> <bytes>`` for every request a DRAM serves, and
``1 <gpu> <cycle> <kind> <tile> 0 0`` for every packet an engine sends. With the order in
which each GPU's tiles retired (the testbench's events), that fixes every datum:

* a GPU's stores are its retired tiles' stores in order (:meth:`~sim_models.collective.Plan.
  tile_stores`); those into a ``REMOTE`` region are the data of its forwarded updates, the
  others the data of its compute writes, each stream first in, first out, as in the exact
  mode;
* a packet carries the next forwarded store's data if it is an update of the chunk its GPU
  sends straight on (as :meth:`SystemEnv.observe` decides), else the data of the next DMA
  read its DRAM served; a GPU's received packets are its ring neighbour's sent ones, in order,
  and are the data of its DRAM's writes from the network, in order;
* each DRAM applies the requests it served in the order it served them
  (:meth:`sim_models.dram.NmcDram.access`): updates add in place, DMA reads snapshot.

The DRAMs are replayed together in cycle order, so a DMA read's snapshot is taken before any
later write to its DRAM, and before the packet that carries it can arrive anywhere.
"""

from collections import deque
from pathlib import Path

import numpy as np

from sim_models.collective import DTYPE
from sim_models.cosim import NmcDram, check_numerics
from t3hw.spec.layouts import MemOp, RegionMode, WriteKind, WriteSource


__all__ = ["read_log", "replay"]

_READ, _COMPUTE = MemOp.READ.value, WriteSource.COMPUTE.value
_UPDATE = WriteKind.UPDATE.value


def read_log(path):
    """The shell's log as an ``(events, 7)`` int64 array (module docstring)."""
    text = Path(path).read_bytes()
    if not text:
        return np.zeros((0, 7), dtype=np.int64)
    flat = np.array(text.split(), dtype=np.int64)
    if flat.size % 7:
        raise ValueError(f"{path}: a truncated log ({flat.size} numbers)")
    return flat.reshape(-1, 7)


def _remote(regions, addr):
    for mode, base, size, _, _ in regions:
        if base <= addr < base + size:
            return mode == RegionMode.REMOTE
    return False


class _Packets:
    """GPU ``s``'s sent packets, resolved to their data in order when received."""

    def __init__(self, kinds, tiles, remote_chunk, units, remote_data, dma_data):
        self.from_store = (kinds == _UPDATE) & (tiles // units == remote_chunk)
        self.next = 0
        self.remote_data, self.dma_data = remote_data, dma_data

    def take(self, gpu, cycle):
        j = self.next
        if j >= len(self.from_store):
            raise AssertionError(f"cycle {cycle}: GPU {gpu} writes a received packet that "
                                 f"its neighbour never sent")
        self.next += 1
        src = self.remote_data if self.from_store[j] else self.dma_data
        if not src:
            raise AssertionError(f"cycle {cycle}: packet {j} to GPU {gpu} has no data behind "
                                 f"it")
        return src.popleft()


def replay(cfg, plan, log, retired):
    """Replay the run's data (module docstring); returns the DRAMs
    (:class:`~sim_models.dram.NmcDram`, their memory and traffic counters), ``numerics``
    (``(ok, max_abs_err)``) and ``r_writes`` per GPU.

    ``log`` is :func:`read_log`'s array, ``retired`` each GPU's tiles in retire order.
    Raises :exc:`AssertionError` where the exact mode would: a write with no data behind
    it, or data of the wrong size."""
    n = cfg.gpus
    size = plan.r_base - plan.o_base + plan.out_bytes
    drams = [NmcDram(None, base=plan.o_base, result_base=plan.r_base, size_bytes=size,
                     latency=cfg.dram_latency, stall=0.0, dtype=DTYPE) for _ in range(n)]
    local, remote = [deque() for _ in range(n)], [deque() for _ in range(n)]
    for i in range(n):
        regions = plan.regions(i)
        for t in retired[i]:
            for addr, _tile, data in plan.tile_stores(i, t):
                (remote if _remote(regions, addr) else local)[i].append(data)
    kind = log[:, 0]
    tx, serves = log[kind == 1], log[kind == 0]
    packets = []
    for s in range(n):
        mine = tx[tx[:, 1] == s]
        packets.append(_Packets(mine[:, 3], mine[:, 4], (s + 1) % n, plan.ids.units,
                                remote[s], drams[s].dma_data))
    # compute reads carry no data: count them at once, replay the rest in cycle order
    reads = (serves[:, 3] == _READ) & (serves[:, 4] == _COMPUTE)
    for i in range(n):
        drams[i].memory.count("gemm_reads", int(serves[reads & (serves[:, 1] == i), 6].sum()))
    rest = serves[~reads]
    order = np.lexsort((rest[:, 1], rest[:, 2]))           # by cycle, then GPU
    for gpu, cycle, op, source, addr, nbytes in rest[order][:, 1:7].tolist():
        d = drams[gpu]
        req = {"op": op, "source": source, "addr": addr, "bytes": nbytes}
        data = None
        if op != _READ:
            if source == _COMPUTE:
                if not local[gpu]:
                    raise AssertionError(f"cycle {cycle}: GPU {gpu} DRAM write {req} with no "
                                         f"store behind it")
                data = local[gpu].popleft()
            else:
                data = packets[(gpu + 1) % n].take(gpu, cycle)
            if data.nbytes != nbytes:
                raise AssertionError(f"cycle {cycle}: GPU {gpu} write of {nbytes} bytes "
                                     f"carries {data.nbytes} bytes of data")
        raw = d.access(req, data)
        if op == _READ:
            if raw is not None:
                d.dma_data.append(raw)
        else:
            d.written(cycle, req)
    return {"drams": drams, "numerics": check_numerics(plan, drams),
            "r_writes": [d.r_writes for d in drams]}
