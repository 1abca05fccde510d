# SPDX-License-Identifier: Apache-2.0
"""The fast co-simulation's data, replayed after the run: what the exact co-simulation does
with numpy arrays while it runs (:class:`sim_models.cosim.SystemEnv`), done from the log of
the run instead.

The simulation shell (:mod:`t3hw.tools.cosim_fast`) writes one record of seven
little-endian int64s per event, in cycle order: ``0 <gpu> <cycle> <op> <source> <addr>
<bytes>`` for every request a DRAM serves but the GEMM's loads, and ``1 <gpu> <cycle> <kind>
<tile> 0 0`` for every packet an engine sends; at the end, ``2 <gpu> 0 0 0 0 <bytes>``, the
bytes of the GEMM's loads each DRAM served (they carry no data: only their count is kept).
With the order in which each GPU's tiles retired (the testbench's events), that fixes every
datum:

* a GPU's stores are its retired tiles' stores in order (:meth:`~sim_models.collective.Plan.
  tile_stores`); those into a ``REMOTE`` region are the data of its forwarded updates, the
  others the data of its compute writes, each stream first in, first out, as in the exact
  mode;
* a packet carries the next forwarded store's data if it is an update of the chunk its GPU
  sends straight on (as :meth:`SystemEnv.observe` decides), else the data of the next DMA
  read its DRAM served; a GPU's received packets are its ring neighbour's sent ones, in order,
  and are the data of its DRAM's writes from the network, in order;
* each DRAM applies the requests it served in the order it served them, as
  :meth:`sim_models.dram.NmcDram.access` does: updates add in place (FP16), stores overwrite,
  DMA reads snapshot; the traffic counters are summed from the log at once.

The DRAMs are replayed together in cycle order, so a DMA read's snapshot is taken before any
later write to its DRAM, and before the packet that carries it can arrive anywhere.

Only that order matters, not the rest of the cycle order: a request depends on the request
before it at the same burst of the same DRAM and, if it writes a received packet made of a
snapshot, on the DMA read that took it. When every request is one aligned burst (every
co-simulation's log), :func:`_by_bursts` gives each request a level above those it depends
on and applies a level at a time, each kind of request of a level as one numpy operation on
the DRAM viewed as rows of a burst; otherwise, and for a log the exact mode would refuse
(to say why), :func:`_by_rows` applies one request at a time. Both leave the same memory
(``tests/test_cosim_replay.py``).
"""

from collections import deque
from pathlib import Path

import numpy as np

from sim_models.collective import DTYPE
from sim_models.cosim import NmcDram, check_numerics
from t3hw.spec.layouts import MemOp, WriteKind, WriteSource


__all__ = ["read_log", "replay"]

_READ, _STORE = MemOp.READ.value, MemOp.STORE.value
_COMPUTE, _DMA = WriteSource.COMPUTE.value, WriteSource.DMA.value
_UPDATE = WriteKind.UPDATE.value


def _count(drams, serves, loads, result_base):
    """Each DRAM's traffic counters, ``r_writes`` and ``last_write`` from its serves and the
    GEMM's load bytes (``loads``, the log's kind-2 lines), as
    :meth:`~sim_models.dram.NmcDram.access` and ``written`` count them one by one (summed
    per GPU at once, without a copy of each GPU's serves)."""
    n = len(drams)
    gpu, cycle, op, source, addr, nbytes = (serves[:, k] for k in range(1, 7))
    read, compute, in_r = op == _READ, source == _COMPUTE, addr >= result_base
    dma_read = read & (source == _DMA)
    remote_write = ~read & ~compute
    per_gpu = lambda mask: np.bincount(gpu[mask], weights=nbytes[mask], minlength=n)
    counts = {cls: per_gpu(mask) for cls, mask in (
        ("gemm_writes", ~read & compute),
        ("rs_reads", dma_read & ~in_r), ("ag_reads", dma_read & in_r),
        ("rs_writes", remote_write & (op != _STORE)),
        ("ag_writes", remote_write & (op == _STORE)))}
    results = ~read & in_r
    r_writes = per_gpu(results)
    last = np.zeros(n, np.int64)
    np.maximum.at(last, gpu[results], cycle[results])
    for g, d in enumerate(drams):
        counted = loads[loads[:, 1] == g]
        if len(counted) != 1:
            raise AssertionError(f"the log has {len(counted)} counts of GPU {g}'s GEMM "
                                 f"loads, not 1 (a run that did not end?)")
        d.memory.count("gemm_reads", int(counted[0, 6]))
        for cls, c in counts.items():
            d.memory.count(cls, int(c[g]))
        d.r_writes, d.last_write = int(r_writes[g]), int(last[g])


def read_log(path):
    """The shell's log as an ``(events, 7)`` int64 array (module docstring)."""
    raw = Path(path).read_bytes()
    if len(raw) % 56:
        raise ValueError(f"{path}: a truncated log ({len(raw)} bytes, not a multiple of a "
                         f"56-byte record)")
    words = np.frombuffer(raw, dtype="<i8")        # a read-only view: nothing writes it
    return (words if words.dtype == np.int64 else words.astype(np.int64)).reshape(-1, 7)


def _forwarded(sent, plan):
    """Which of GPU ``s``'s sent packets (``sent``: its log records, ``s`` their GPU field)
    carry one of its forwarded stores, as :meth:`SystemEnv.observe` decides: updates of the
    chunk it sends straight on, ``(s + 1) % n``; the others carry its DMA reads' snapshots."""
    if not len(sent):
        return np.zeros(0, bool)
    chunk = (int(sent[0, 1]) + 1) % plan.n
    return (sent[:, 3] == _UPDATE) & (sent[:, 4] // plan.ids.units == chunk)


class _Packets:
    """GPU ``s``'s sent packets, resolved to their data in order when received."""

    def __init__(self, from_store, remote_data, dma_data):
        self.from_store = from_store
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


def replay(cfg, plan, log, retired, *, by_bursts=True):
    """Replay the run's data (module docstring); returns the DRAMs
    (:class:`~sim_models.dram.NmcDram`, their memory and traffic counters), ``numerics``
    (``(ok, max_abs_err)``) and ``r_writes`` per GPU.

    ``log`` is :func:`read_log`'s array, ``retired`` each GPU's tiles in retire order.
    Raises :exc:`AssertionError` where the exact mode would: a write with no data behind
    it, or data of the wrong size. ``by_bursts`` (the default) applies the log level by
    level (:func:`_by_bursts`) where it can, else request by request (:func:`_by_rows`);
    False always takes the latter. Both leave the same memory."""
    n = len(retired)               # the GPUs simulated: the ring's, or GPU 0 of a symmetric one
    size = plan.r_base - plan.o_base + plan.out_bytes
    drams = [NmcDram(None, base=plan.o_base, result_base=plan.r_base, size_bytes=size,
                     latency=cfg.dram_latency, stall=0.0, dtype=DTYPE) for _ in range(n)]
    kind = log[:, 0]
    tx, serves, loads = log[kind == 1], log[kind == 0], log[kind == 2]
    _count(drams, serves, loads, plan.r_base)
    addr, nbytes = serves[:, 5], serves[:, 6]
    outside = ((serves[:, 3] != _READ) | (serves[:, 4] == _DMA)) & \
        ((addr < plan.o_base) | (addr + nbytes > plan.o_base + size))
    if outside.any():
        gpu, cycle, _, _, addr, nbytes = serves[outside][0, 1:7].tolist()
        raise AssertionError(f"cycle {cycle}: GPU {gpu} DRAM access of {nbytes} bytes at "
                             f"{addr:#x}, outside the memory [{plan.o_base:#x}, "
                             f"{plan.o_base + size:#x})")
    # every logged serve, in cycle order (then GPU): a run's log is, a split run's is its
    # parts' logs one after the other
    key = serves[:, 2] * n + serves[:, 1]
    rest = serves if (key[1:] >= key[:-1]).all() else serves[np.argsort(key, kind="stable")]
    words = [d.memory.mem.view(DTYPE) for d in drams]        # element i: byte 2 i
    if not (by_bursts and _by_bursts(plan, words, rest, tx, retired)):
        _by_rows(plan, drams, words, rest, tx, retired)
    return {"drams": drams, "numerics": check_numerics(plan, drams, symmetric=n < plan.n),
            "r_writes": [d.r_writes for d in drams]}


def _by_rows(plan, drams, words, rest, tx, retired):
    """Apply ``rest`` request by request, each write with its data as the exact mode
    attaches it (module docstring); raises where the exact mode would."""
    n = len(drams)
    local, remote = [deque() for _ in range(n)], [deque() for _ in range(n)]
    for i in range(n):
        for t in retired[i]:
            for addr, _tile, data in plan.tile_stores(i, t):
                (remote if plan.is_remote(i, addr) else local)[i].append(data)
    packets = []
    for s in range(n):
        packets.append(_Packets(_forwarded(tx[tx[:, 1] == s], plan), remote[s],
                                drams[s].dma_data))
    base = plan.o_base
    # six flat lists, not one list per row: a list per row makes the garbage collector
    # rescan every row already made, several times over a long log
    columns = (rest[:, k].tolist() for k in range(1, 7))
    for gpu, cycle, op, source, addr, nbytes in zip(*columns):
        lo = (addr - base) >> 1
        hi = lo + (nbytes >> 1)
        if op == _READ:
            drams[gpu].dma_data.append(words[gpu][lo:hi].copy())
            continue
        if source == _COMPUTE:
            if not local[gpu]:
                raise AssertionError(f"cycle {cycle}: GPU {gpu} DRAM write of {nbytes} bytes at "
                                     f"{addr:#x} with no store behind it")
            data = local[gpu].popleft()
        else:
            data = packets[(gpu + 1) % n].take(gpu, cycle)
        if data.nbytes != nbytes:
            raise AssertionError(f"cycle {cycle}: GPU {gpu} write of {nbytes} bytes carries "
                                 f"{data.nbytes} bytes of data")
        if op == _STORE:
            words[gpu][lo:hi] = data
        else:
            words[gpu][lo:hi] += data


def _sources(plan, rest, tx, retired, per):
    """The data each request of ``rest`` moves, as rows of one pool: ``(pool, row, after)``,
    ``pool`` every GPU's local stores, then its forwarded stores, in retire order, then a
    row per DMA read for its snapshot; ``row[k]`` the pool row request ``k`` reads or
    writes; ``after[k]`` the request whose snapshot write ``k`` carries (else -1). None where
    the exact mode would fail (then :func:`_by_rows` says why) or a store is not one burst."""
    n = len(retired)
    stores = [[] for _ in range(2 * n)]              # local of GPU i at i, forwarded at n + i
    for i in range(n):
        for t in retired[i]:
            got = plan.tile_bursts(i, t)
            if got is None:
                return None
            stores[n * got[0] + i].append(got[1])
    stacks = [np.concatenate(s) if s else np.empty((0, per), DTYPE) for s in stores]
    sizes = [len(s) for s in stacks]
    offs = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    gpu, op, source = rest[:, 1], rest[:, 3], rest[:, 4]
    read = op == _READ
    compute, reads = ~read & (source == _COMPUTE), np.flatnonzero(read)
    row = np.empty(len(rest), np.int64)
    row[reads] = offs[-1] + np.arange(len(reads))
    after = np.full(len(rest), -1, np.int64)
    for g in range(n):
        s = (g + 1) % n
        mine = gpu == g
        writes = np.flatnonzero(compute & mine)      # the k-th takes the k-th local store
        if len(writes) > sizes[g]:
            return None
        row[writes] = offs[g] + np.arange(len(writes))
        got = np.flatnonzero(~read & ~compute & mine)   # the k-th takes packet k of GPU s
        fwd = _forwarded(tx[tx[:, 1] == s], plan)
        if len(got) > len(fwd):
            return None
        fwd = fwd[:len(got)]
        nth_fwd, nth_read = np.cumsum(fwd) - 1, np.cumsum(~fwd) - 1
        if fwd.any() and nth_fwd[-1] >= sizes[n + s]:
            return None
        row[got[fwd]] = offs[n + s] + nth_fwd[fwd]
        if (~fwd).any():
            theirs = reads[gpu[reads] == s]
            if nth_read[-1] >= len(theirs):
                return None
            src = theirs[nth_read[~fwd]]
            if (src > got[~fwd]).any():              # its snapshot is not taken yet
                return None
            row[got[~fwd]] = row[src]
            after[got[~fwd]] = src
    pool = np.empty((offs[-1] + len(reads), per), DTYPE)
    for k, s in enumerate(stacks):
        pool[offs[k]:offs[k + 1]] = s
    return pool, row, after


def _levels(loc, after):
    """Each request's level: above that of the request before it at the same place
    (``loc``) and above that of the read whose snapshot it writes (``after``). Requests of
    one level touch different places, and every snapshot they write is of a lower level."""
    order = np.argsort(loc, kind="stable")
    same = loc[order[1:]] == loc[order[:-1]]
    deps = [(order[1:][same], order[:-1][same]), (np.flatnonzero(after >= 0),
                                                  after[after >= 0])]
    level = np.zeros(len(loc), np.int64)
    while True:                                      # longest path, a step per round
        new = level.copy()
        for rows, on in deps:
            new[rows] = np.maximum(new[rows], level[on] + 1)
        if np.array_equal(new, level):
            return level
        level = new


def _by_bursts(plan, words, rest, tx, retired):
    """Apply ``rest`` as :func:`_by_rows` does, a level (:func:`_levels`) and GPU at a
    time, with one numpy operation per kind of request: the reads' snapshots, the stores
    and the updates of a level touch different bursts, so their order inside it does not
    matter, and each write's data is a row of :func:`_sources`' pool. Returns False, and
    changes nothing, where it cannot: a request not of one aligned burst, or a log the
    exact mode would refuse."""
    burst, base = plan.p.burst_bytes, plan.o_base
    per = burst // np.dtype(DTYPE).itemsize
    if burst % np.dtype(DTYPE).itemsize or words[0].size % per:
        return False
    gpu, op, addr, nbytes = rest[:, 1], rest[:, 3], rest[:, 5], rest[:, 6]
    if ((nbytes != burst) | ((addr - base) % burst != 0)).any():
        return False
    got = _sources(plan, rest, tx, retired, per)
    if got is None:
        return False
    pool, row, after = got
    nb = words[0].size // per
    at = (addr - base) // burst
    level = _levels(gpu * nb + at, after)
    mems = [w.reshape(nb, per) for w in words]       # views of the DRAMs' memories
    group = level * len(mems) + gpu                 # a level's requests, GPU by GPU
    by = np.argsort(group, kind="stable")
    cuts = np.flatnonzero(np.diff(group[by])) + 1
    read, store = op == _READ, op == _STORE
    for grp in np.split(by, cuts):
        mem = mems[gpu[grp[0]]]
        r, s = read[grp], store[grp]
        u = ~r & ~s
        if r.any():
            pool[row[grp[r]]] = mem[at[grp[r]]]
        if s.any():
            mem[at[grp[s]]] = pool[row[grp[s]]]
        if u.any():
            mem[at[grp[u]]] += pool[row[grp[u]]]
    return True
