# SPDX-License-Identifier: Apache-2.0
"""Whole-system co-simulation: the models around N engines of generated RTL.

:class:`CosimConfig` is one scenario: a paper workload (model, TP, sub-layer, tokens) run on
a ring of ``gpus`` GPUs, each with a T3 engine, under one arbitration policy, as a fused
GEMM + ring reduce-scatter (``collective="rs"``) or a fused all-reduce (``"allreduce"``).
:class:`Plan` is what the driver programs into every engine and what the GPUs store.
:class:`SystemEnv` holds the behavioral models that :mod:`t3hw.verif.cosim_tb` connects to the
engines of the system top, one engine per GPU:

* **GPU cores** (:class:`GpuCores`): ``cus`` compute units run the GEMM's tiles in the
  staggered T3 order (:class:`~sim_models.gpu.GemmProducer`, with its L2). A tile reads its
  panels' L2 misses as ``burst_bytes`` loads on the engine's ``load`` port (tags from a free
  list), computes for ``compute_cycles`` (overlapping its reads: it ends at the later of
  the two), then its output rows leave through a write buffer on ``store``, one burst per
  store, as near-memory updates carrying the tracked unit's id.
* **NMC DRAM** (:class:`NmcDram`): takes at most one request per cycle from ``dram`` (one
  RTL clock is one memory-controller cycle), serves them in order ``latency`` cycles later,
  adds updates in place (numpy), answers reads on ``dram_response`` and reports its queue
  length on ``occupancy``; it counts bytes per traffic class.
* **Network** (:class:`Ring`): one link from each GPU to the previous one, with a transmit
  buffer (``net_tx`` is ready while it has room), serialization at ``link_bytes_per_cycle``,
  ``link_latency`` cycles of flight and optional jitter and reordering.

Data stays in Python (``DESIGN.md``): the RTL carries addresses, tile ids, lengths and tags;
the models attach the numbers to the requests and packets the RTL emits, in the order each
stream is defined to keep (local stores and received packets reach the DRAM in order; DMA
packets leave in the order of their reads).

The all-reduce mechanism
------------------------
Every GPU has two buffers of the ``[T, H]`` output: ``O`` (the partial sums of the
reduce-scatter) and ``R`` (the result). GPU ``i`` produces chunk ``i + 1 + s`` (rows
``c T/N ..`` of chunk ``c``) at ring stage ``s`` and sends to GPU ``i - 1``, so chunk ``c``'s
reduction starts at GPU ``c - 1`` (whose stage-0 stores go straight to GPU ``c - 2`` as
updates, through a ``REMOTE`` region), travels ``c - 2 -> ... -> c + 1`` and ends, fully
reduced, in ``R`` at GPU ``c``, its owner: GPU ``c``'s last-stage stores and GPU ``c + 1``'s
forwarded updates of that chunk land in ``R`` there. Each chunk is cut into tracked units
(runs of at most ``group`` tiles of one tile row: a rectangle, one DMA descriptor), tracked
under

* ``RS(c, u) = c U + u`` at every GPU that receives it in the reduce-scatter, with threshold
  ``2 B`` (its ``B`` bursts stored locally plus the ``B`` bursts arriving), whose trigger sends
  the unit to the next GPU as an update; at its owner the trigger instead copies the reduced
  unit into the next GPU's ``R`` (``STORE``, all-reduce only);
* ``AG(c, u) = N U + c U + u`` at every GPU the copy passes through, with threshold ``B``
  (the arriving copy), whose trigger forwards it again; the last hop (GPU ``c + 1``) maps
  that part of ``R`` as ``LOCAL``, so it is written and not forwarded.

No host step separates the two phases: the write that completes a unit at its owner
triggers the all-gather of that unit.
"""

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from t3hw.spec.layouts import MemOp, RegionMode, WriteKind, WriteSource
from t3hw.spec.params import EngineParams

from .gpu import GemmProducer, GemmShape, GpuConfig
from .workloads import SUBLAYERS, Workload


__all__ = ["POLICIES", "COLLECTIVES", "CosimConfig", "Plan", "GpuCores", "NmcDram", "Ring",
           "SystemEnv", "model_cycles"]

#: Arbitration policies (the ``ArbPolicy`` names).
POLICIES = ("round_robin", "compute_first", "t3_mca")
#: Collectives: fused GEMM + reduce-scatter, or fused GEMM + all-reduce.
COLLECTIVES = ("rs", "allreduce")

_DTYPE = np.dtype(np.float16)
#: Largest integer up to which float16 holds every integer: sums stay exact below it.
_EXACT = 2048

O_BASE = 1 << 32            # the O buffer; loads (A, B panels) sit below it
A_BASE, B_BASE = 0, 1 << 31


def _int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, int) or value < low or \
            (high is not None and value > high):
        top = "inf" if high is None else high
        raise ValueError(f"{name} must be an integer in [{low}, {top}], not {value!r}")
    return value


@dataclass(frozen=True)
class CosimConfig:
    """One co-simulation scenario and its scaled hardware.

    The hardware is the paper's, scaled to one memory-controller request per RTL cycle:
    the DRAM serves ``burst_bytes`` per cycle (paper: 714 B per 1.4 GHz cycle), and the GPU's
    compute and the links keep the paper's ratios to it: ``cus * flops_per_cu_cycle /
    burst_bytes`` is about the paper's 115 FLOP per DRAM byte, the link's bytes per cycle
    are 7.5 % of the DRAM's (75 GB/s against 1000 GB/s), the link latency is the paper's
    500 ns (700 cycles). The DRAM latency is shortened to ``dram_latency`` cycles so that
    its bandwidth-delay product fits the arbiter's occupancy counter.

    Attributes
    ----------
    gpus : int
        Ring size N (2 .. 8 ... the engines' ``device_width`` and tracker size bound it).
    model, tp, sublayer, tokens : str, int, str, int
        The workload (:class:`~sim_models.workloads.Workload`): the per-GPU GEMM is
        ``[tokens, K] x [K, H]`` with ``K`` from the model's ``H``, the sub-layer and ``tp``.
        ``tokens`` must be a multiple of ``gpus * tile_m`` (chunks of whole tile rows).
    hidden : int or None
        Overrides the model's ``H`` (a narrower layer of the same shape, for short
        regression runs); a multiple of ``tile_n``.
    policy : str
        One of :data:`POLICIES`.
    collective : str
        One of :data:`COLLECTIVES`.
    seed : int
        Data, stimulus and fault randomness.
    net_jitter : int
        Mean extra flight time per packet (cycles), exponentially distributed as a queueing
        delay is: a few packets straggle far behind the others.
    reorder : bool
        Packets may overtake each other (jittered arrivals are not re-sorted per link).
    dram_stall : float
        Probability per cycle that the DRAM starts refusing requests for 1 .. 16 cycles.
    threshold_error : int
        Added to every tracker threshold (a test of the checks: -1 triggers one write early).
    params : EngineParams
        The engines' parameters: the paper's, except the T3-MCA derivation (saturation at
        the DRAM's 64-request bandwidth-delay product, a 4096-cycle window), a trigger queue
        as deep as the tracker (``trigger_depth = 256``: no completion can find it full) and
        64 DMA reads in flight (``max_outstanding``: one read per cycle over the DRAM's
        latency; 8 would cap each DMA at 8 bytes per cycle). ``docs/cosim.md`` explains
        both.
    """

    gpus:                 int = 4
    model:                str = "Mega-GPT-2"
    tp:                   int = 16
    sublayer:             str = "OP"
    tokens:               int = 128
    hidden:               int = None
    policy:               str = "t3_mca"
    collective:           str = "rs"
    seed:                 int = 1
    cus:                  int = 8
    flops_per_cu_cycle:   int = 896
    tile_m:               int = 32
    tile_n:               int = 64
    l2_bytes:             int = 2 * 2**20
    dram_latency:         int = 64
    link_bytes_per_cycle: float = 4.8
    link_latency:         int = 700
    tx_buffer_bytes:      int = 4096
    net_jitter:           int = 0
    reorder:              bool = False
    dram_stall:           float = 0.0
    threshold_error:      int = 0
    params:               EngineParams = field(default_factory=lambda: EngineParams(
                              mca_saturation=64, mca_window_log2=12, trigger_depth=256,
                              max_outstanding=64))

    def __post_init__(self):
        top = min(1 << self.params.device_width, 64)
        _int("gpus", self.gpus, 2, top)
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, not {self.policy!r}")
        if self.collective not in COLLECTIVES:
            raise ValueError(f"collective must be one of {COLLECTIVES}, not {self.collective!r}")
        for name in ("cus", "flops_per_cu_cycle", "tile_m", "tile_n", "l2_bytes",
                     "dram_latency", "link_latency", "tx_buffer_bytes"):
            _int(name, getattr(self, name), 1)
        _int("net_jitter", self.net_jitter, 0)
        _int("seed", self.seed, 0)
        _int("threshold_error", self.threshold_error, -1, 1)
        if not self.link_bytes_per_cycle > 0:
            raise ValueError(f"link_bytes_per_cycle must be in (0, inf), "
                             f"not {self.link_bytes_per_cycle!r}")
        if not 0 <= self.dram_stall < 1:
            raise ValueError(f"dram_stall must be in [0, 1), not {self.dram_stall!r}")
        if self.tile_n * 2 % self.params.burst_bytes:
            raise ValueError(f"tile_n * 2 bytes must be a multiple of burst_bytes="
                             f"{self.params.burst_bytes}, not tile_n={self.tile_n!r}")
        Workload(model=self.model, tp=self.tp, sublayer=self.sublayer, tokens=self.tokens)
        if self.hidden is not None:
            _int("hidden", self.hidden, self.tile_n)
            if self.hidden % self.tile_n or SUBLAYERS[self.sublayer] * self.hidden % self.tp:
                raise ValueError(f"hidden must be a multiple of tile_n={self.tile_n} with "
                                 f"{SUBLAYERS[self.sublayer]} * hidden divisible by "
                                 f"tp={self.tp}, not {self.hidden!r}")
        step = self.gpus * self.tile_m
        if self.tokens % step:
            raise ValueError(f"tokens must be a multiple of gpus * tile_m = {step} (chunks of "
                             f"whole tile rows), not {self.tokens!r}")

    @property
    def workload(self):
        return Workload(model=self.model, tp=self.tp, sublayer=self.sublayer,
                        tokens=self.tokens)

    @property
    def shape(self):
        if self.hidden is None:
            return self.workload.shape
        return GemmShape(m=self.tokens, k=SUBLAYERS[self.sublayer] * self.hidden // self.tp,
                         n=self.hidden)

    @property
    def gpu(self):
        return GpuConfig(cus=self.cus, l2_bytes=self.l2_bytes,
                         flops_per_cu_cycle=self.flops_per_cu_cycle, tile_m=self.tile_m,
                         tile_n=self.tile_n, elem_bytes=_DTYPE.itemsize)

    def system_config(self):
        """The performance model's :class:`~sim_models.perf.SystemConfig` of this hardware."""
        from .perf import SystemConfig
        g, p = self.gpu, self.params
        return SystemConfig(
            gpu=g, dram_gbs=p.burst_bytes * g.freq_ghz, dram_latency_cycles=self.dram_latency,
            link_gbs=self.link_bytes_per_cycle * g.freq_ghz,
            link_latency_ns=self.link_latency / g.freq_ghz, packet_bytes=p.burst_bytes,
            burst_bytes=p.burst_bytes, step_cycles=8, tx_buffer_bytes=self.tx_buffer_bytes,
            starvation_limit=p.starvation_limit, mca_window=1 << p.mca_window_log2,
            mca_threshold=p.mca_threshold or None, tracker=p)

    def to_dict(self):
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "params"}
        d["params"] = self.params.to_dict()
        return d

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        params = EngineParams(**d.pop("params"))
        return cls(params=params, **d)


class _Ids:
    """Tile ids of the tracked units: ``RS(c, u)`` and ``AG(c, u)`` (module docstring)."""

    def __init__(self, n, units):
        self.n, self.units = n, units

    def rs(self, c, u):
        return c * self.units + u

    def ag(self, c, u):
        return (self.n + c) * self.units + u

    def count(self, gather):
        return (2 if gather else 1) * self.n * self.units


class Plan:
    """Buffers, units, regions, tracker entries, descriptors and stores of a scenario.

    Attributes
    ----------
    producers : list of GemmProducer
        One per GPU (``output_base`` = the ``O`` buffer).
    units : list of (row, col0, ncols)
        The tracked units of a chunk, in tile coordinates relative to the chunk's first tile
        row; every chunk has the same.
    partials : list of ndarray
        Each GPU's ``[T, H]`` partial output (float16 integers, sums exact).
    """

    def __init__(self, cfg: CosimConfig):
        self.cfg = cfg
        p, n, g = cfg.params, cfg.gpus, cfg.gpu
        shape = cfg.shape
        self.n, self.p, self.shape = n, p, shape
        self.gather = cfg.collective == "allreduce"
        self.pitch = shape.n * g.elem_bytes
        self.out_bytes = shape.m * self.pitch
        self.chunk_rows = shape.m // n
        self.chunk_bytes = self.chunk_rows * self.pitch
        span = 1 << (self.out_bytes - 1).bit_length()
        self.o_base, self.r_base = O_BASE, O_BASE + span
        if self.r_base + span > 1 << p.addr_width:
            raise ValueError(f"addr_width={p.addr_width} must be at least "
                             f"{(self.r_base + span - 1).bit_length()} for this output")
        self.producers = [GemmProducer(shape=shape, gpu=g, n_gpus=n, gpu_index=i,
                                       cache_outputs=False, output_base=self.o_base)
                          for i in range(n)]
        prod = self.producers[0]
        self.tile_rows_per_chunk = self.chunk_rows // g.tile_m
        # units: runs of at most `group` tiles of one tile row
        budget = min(p.tracker_entries, p.dma_descriptors)
        group = 1
        while True:
            per_row = -(-prod.n_cols // group)
            self.units_per_chunk = self.tile_rows_per_chunk * per_row
            unit_bursts = g.tile_m * group * g.tile_n * g.elem_bytes // p.burst_bytes
            if _Ids(n, self.units_per_chunk).count(self.gather) <= budget \
                    and 2 * unit_bursts <= p.max_threshold:
                break
            if group >= prod.n_cols or 2 * unit_bursts > p.max_threshold:
                raise ValueError(
                    f"{n} GPUs x {self.tile_rows_per_chunk} tile rows per chunk need more "
                    f"tracker entries and descriptors than {budget} or thresholds above "
                    f"{p.max_threshold}; use fewer tokens or GPUs")
            group += 1
        self.group = group
        self.units = [(r, c0, min(group, prod.n_cols - c0))
                      for r in range(self.tile_rows_per_chunk)
                      for c0 in range(0, prod.n_cols, group)]
        self.ids = _Ids(n, len(self.units))
        self.unit_of_col = {}
        for u, (r, c0, nc) in enumerate(self.units):
            for c in range(c0, c0 + nc):
                self.unit_of_col[(r, c)] = u
        self.partials = self._partials(np.random.default_rng(cfg.seed))

    # -- data --------------------------------------------------------------------------------
    def _partials(self, rng):
        """Real GEMM partials ``A_i @ B_i`` of {-1, 0, 1} operands, each row of ``A_i`` with at
        most ``2048 / N`` nonzeros: every element of every partial sum is an integer of
        magnitude at most 2048, so float16 sums are exact in any order."""
        m, k, nn = self.shape.m, self.shape.k, self.shape.n
        nnz = min(k, _EXACT // self.n)
        out = []
        for _ in range(self.n):
            a = np.zeros((m, k), np.float32)
            cols = rng.random((m, k)).argsort(axis=1)[:, :nnz]
            np.put_along_axis(a, cols, rng.choice([-1.0, 1.0], (m, nnz)), axis=1)
            b = rng.integers(-1, 2, (k, nn)).astype(np.float32)
            out.append((a @ b).astype(_DTYPE))
        return out

    def expected(self):
        """The all-reduced output (exact, float64)."""
        return np.sum([q.astype(np.float64) for q in self.partials], axis=0)

    # -- geometry ----------------------------------------------------------------------------
    def chunk_of_tile(self, t):
        return self.producers[0].tiles[t].row // self.tile_rows_per_chunk

    def unit_of_tile(self, t):
        tile = self.producers[0].tiles[t]
        return self.unit_of_col[(tile.row % self.tile_rows_per_chunk, tile.col)]

    def stage(self, i, c):
        """Ring stage at which GPU ``i`` produces chunk ``c``."""
        return (c - i - 1) % self.n

    def buffer(self, i, c):
        """Base of the buffer that holds chunk ``c``'s reduce-scatter at GPU ``i``."""
        return self.r_base if c == i else self.o_base

    def unit_region(self, c, u):
        """``(offset, rows, row_bytes)`` of unit ``u`` of chunk ``c`` in a buffer."""
        r, c0, _ = self.units[u]
        g = self.cfg.gpu
        row = c * self.chunk_rows + r * g.tile_m
        return row * self.pitch + c0 * g.tile_n * g.elem_bytes, g.tile_m, \
            self.unit_cols(u) * g.elem_bytes

    def unit_cols(self, u):
        """Output columns of unit ``u`` (the last tile of a row may be narrower)."""
        _, c0, nc = self.units[u]
        g = self.cfg.gpu
        return min(nc * g.tile_n, self.shape.n - c0 * g.tile_n)

    def unit_bursts(self, u):
        _, rows, row_bytes = self.unit_region(0, u)
        return rows * -(-row_bytes // self.p.burst_bytes)

    # -- what the driver programs ------------------------------------------------------------
    def regions(self, i):
        """``(mode, base, size, device, remote_base)`` of GPU ``i``'s regions."""
        n, cb = self.n, self.chunk_bytes
        prev, first = (i - 1) % n, (i + 1) % n
        out = []

        def add(mode, lo, hi, device=0, remote=0):
            if hi > lo:
                out.append((mode, lo, hi - lo, device, remote))

        o = self.o_base
        add(RegionMode.TRACKED, o, o + first * cb)
        add(RegionMode.REMOTE, o + first * cb, o + (first + 1) * cb, prev,
            self.buffer(prev, first) + first * cb)
        add(RegionMode.TRACKED, o + (first + 1) * cb, o + n * cb)
        r = self.r_base
        if self.gather:
            last = (i - 1) % n                      # the chunk whose all-gather ends here
            add(RegionMode.TRACKED, r, r + last * cb)
            add(RegionMode.LOCAL, r + last * cb, r + (last + 1) * cb)
            add(RegionMode.TRACKED, r + (last + 1) * cb, r + n * cb)
        else:                                       # the own chunk ends the collective
            add(RegionMode.LOCAL, r + i * cb, r + (i + 1) * cb)
        if len(out) > self.p.regions:
            raise ValueError(f"GPU {i} needs {len(out)} regions; regions must be at least that")
        return out

    def entries(self, i):
        """``(tile, threshold, descriptor fields)`` of every unit GPU ``i`` tracks."""
        n, ids, e = self.n, self.ids, self.cfg.threshold_error
        prev = (i - 1) % n
        out = []
        for c in range(n):
            s = self.stage(i, c)
            for u in range(len(self.units)):
                off, rows, row_bytes = self.unit_region(c, u)
                b = self.unit_bursts(u)
                desc = dict(rows=rows, row_bytes=row_bytes, pitch=self.pitch, device=prev)
                if s == 0:
                    pass                                         # stored remotely
                elif c != i:                                     # reduce-scatter hop
                    nxt = self.buffer(prev, c)
                    out.append((ids.rs(c, u), 2 * b + e, dict(
                        desc, src=self.o_base + off, dst=nxt + off, op=WriteKind.UPDATE,
                        tile=ids.rs(c, u))))
                elif self.gather:                                # own chunk: start the AG
                    out.append((ids.rs(c, u), 2 * b + e, dict(
                        desc, src=self.r_base + off, dst=self.r_base + off,
                        op=WriteKind.STORE, tile=ids.ag(c, u))))
                if self.gather and c not in (i, prev):           # all-gather forward
                    out.append((ids.ag(c, u), b + e, dict(
                        desc, src=self.r_base + off, dst=self.r_base + off,
                        op=WriteKind.STORE, tile=ids.ag(c, u))))
        return out

    def tile_stores(self, i, t):
        """The stores of tile ``t`` at GPU ``i``: ``(addr, tile id, data)`` per burst."""
        prod, g, burst = self.producers[i], self.cfg.gpu, self.p.burst_bytes
        tile = prod.tiles[t]
        c, u = self.chunk_of_tile(t), self.unit_of_tile(t)
        base = self.buffer(i, c)
        row0, col0 = tile.row * g.tile_m, tile.col * g.tile_n
        per = burst // g.elem_bytes
        tid = self.ids.rs(c, u)
        block = self.partials[i]
        out = []
        for r in range(tile.rows):
            addr = base + (row0 + r) * self.pitch + col0 * g.elem_bytes
            for e in range(0, tile.cols, per):
                out.append((addr + e * g.elem_bytes, tid,
                            block[row0 + r, col0 + e:col0 + min(e + per, tile.cols)]))
        return out


# -- models ------------------------------------------------------------------------------------
class NmcDram:
    """One GPU's DRAM with near-memory update: a request per cycle, in-order service.

    Requests taken at cycle ``t`` are served at ``t + latency`` or later, one per cycle.
    ``mem`` holds the ``O`` and ``R`` buffers (float16); reads are timing only, except DMA
    reads, whose data (a snapshot at service time) is queued for the packet they become.
    """

    def __init__(self, plan, rng, *, latency, stall):
        self.plan, self.rng = plan, rng
        self.latency, self.stall = latency, stall
        self.mem = np.zeros((plan.r_base - plan.o_base + plan.out_bytes) // _DTYPE.itemsize,
                            _DTYPE)
        self.queue = deque()                 # (due, request, data)
        self.responses = deque()
        self.dma_data = deque()
        self.stall_left = 0
        self.traffic = {k: 0 for k in ("gemm_reads", "gemm_writes", "rs_reads", "rs_writes",
                                       "ag_reads", "ag_writes")}
        self.r_writes = 0                    # bytes written into R (completion)
        self.last_write = 0

    def ready(self):
        if self.stall_left:
            self.stall_left -= 1
            return False
        if self.stall and self.rng.random() < self.stall:
            self.stall_left = self.rng.randint(1, 16) - 1
            return False
        return True

    def take(self, cycle, req, data):
        self.queue.append((cycle + self.latency, req, data))

    def serve(self, cycle):
        """Serve the oldest due request; returns True if one was served."""
        if not self.queue or self.queue[0][0] > cycle:
            return False
        _, req, data = self.queue.popleft()
        plan, nbytes = self.plan, req["bytes"]
        in_r = req["addr"] >= plan.r_base
        if req["op"] == MemOp.READ.value:
            if req["source"] == WriteSource.DMA.value:
                e = (req["addr"] - plan.o_base) // _DTYPE.itemsize
                self.dma_data.append(self.mem[e:e + nbytes // _DTYPE.itemsize].copy())
                # a DMA read of R copies a reduced unit onwards: the all-gather
                self.traffic["ag_reads" if in_r else "rs_reads"] += nbytes
            else:
                self.traffic["gemm_reads"] += nbytes
            self.responses.append({"source": req["source"], "tag": req["tag"]})
            return True
        e = (req["addr"] - plan.o_base) // _DTYPE.itemsize
        if req["op"] == MemOp.STORE.value:
            self.mem[e:e + data.size] = data
        else:
            self.mem[e:e + data.size] += data
        if req["source"] == WriteSource.COMPUTE.value:
            self.traffic["gemm_writes"] += nbytes
        else:
            self.traffic["ag_writes" if req["op"] == MemOp.STORE.value else "rs_writes"] += nbytes
        if in_r:
            self.r_writes += nbytes
            self.last_write = cycle
        return True

    @property
    def occupancy(self):
        return len(self.queue)

    def next_due(self):
        return self.queue[0][0] if self.queue else None


class Ring:
    """Unidirectional ring: GPU ``i`` sends to GPU ``i - 1`` over its own link.

    A packet taken from ``net_tx`` at cycle ``t`` waits in the transmit buffer for the link,
    is serialized at ``bytes_per_cycle`` and arrives ``latency`` cycles (plus, with
    ``jitter``, an exponential delay of that mean) after its last byte left. Without ``reorder`` the arrivals of a link keep their sending order.
    """

    def __init__(self, n, rng, *, bytes_per_cycle, latency, tx_bytes, jitter, reorder):
        self.n, self.rng = n, rng
        self.bpc, self.latency, self.tx_bytes = bytes_per_cycle, latency, tx_bytes
        self.jitter, self.reorder = jitter, reorder
        self.free_at = [0.0] * n             # when each link finishes its queued bytes
        self.departures = [deque() for _ in range(n)]   # (departure time, bytes) in the buffer
        self.last_arrival = [0] * n
        self.wire = [[] for _ in range(n)]   # per destination: heap (arrival, seq, pkt, data)
        self.seq = 0
        self.packets = 0
        self.bytes = 0

    def buffered(self, i, cycle):
        dq = self.departures[i]
        while dq and dq[0][0] <= cycle:
            dq.popleft()
        return sum(b for _, b in dq)

    def tx_ready(self, i, cycle, nbytes):
        return self.buffered(i, cycle) + nbytes <= self.tx_bytes

    def send(self, i, cycle, pkt, data):
        dst = (i - 1) % self.n
        if pkt["device"] != dst:
            raise AssertionError(f"cycle {cycle}: GPU {i} sent {pkt} to device "
                                 f"{pkt['device']}; its ring neighbour is {dst}")
        nbytes = pkt["bytes"]
        start = max(self.free_at[i], float(cycle))
        self.free_at[i] = start + nbytes / self.bpc
        self.departures[i].append((self.free_at[i], nbytes))
        arrival = math.ceil(self.free_at[i]) + self.latency
        if self.jitter:                      # queueing delay: exponential, mean `jitter`
            arrival += int(self.rng.expovariate(1.0 / self.jitter))
        if not self.reorder:
            arrival = max(arrival, self.last_arrival[i])
            self.last_arrival[i] = arrival
        self.seq += 1
        heapq.heappush(self.wire[dst], (arrival, self.seq, pkt, data))
        self.packets += 1
        self.bytes += nbytes

    def arrived(self, dst, cycle):
        """The earliest packet for ``dst`` that has arrived by ``cycle`` (taken off the
        wire: it waits at the receiver's port), or None."""
        w = self.wire[dst]
        return heapq.heappop(w) if w and w[0][0] <= cycle else None

    def next_arrival(self):
        times = [w[0][0] for w in self.wire if w]
        return min(times) if times else None

    def empty(self):
        return not any(self.wire)


class GpuCores:
    """The compute units of one GPU running its GEMM (module docstring).

    A CU holding a tile issues its loads, computes, and hands its output to the write
    buffer, which feeds ``store`` one burst per cycle; the CU is then free.
    """

    def __init__(self, plan, i, *, tag_width, burst_bytes):
        self.plan, self.i = plan, i
        self.prod = plan.producers[i]
        self.order = deque(self.prod.order())
        self.burst = burst_bytes
        self.free_tags = deque(range(1 << tag_width))
        self.cus = [None] * self.prod.gpu.cus     # per CU: dict or None
        self.tag_cu = {}
        self.stores = deque()                    # (addr, tile id, data)
        self.load_rr = 0
        self.loads = 0
        self.tiles_done = 0
        self.compute = self.prod.compute_cycles
        self.first_load = None
        self.last_store = None

    def dispatch(self, cycle):
        for k, cu in enumerate(self.cus):
            if cu is None and self.order:
                t = self.order.popleft()
                nbytes = self.prod.dispatch(t)
                self.cus[k] = {"tile": t, "loads": -(-nbytes // self.burst), "out": 0,
                               "addr": B_BASE + (t * 4096) % (1 << 30), "start": cycle,
                               "last": cycle}

    def load(self):
        """The next load to issue ``(cu, payload fields)`` or None (round-robin over CUs)."""
        if not self.free_tags:
            return None
        n = len(self.cus)
        for d in range(n):
            k = (self.load_rr + d) % n
            cu = self.cus[k]
            if cu is not None and cu["loads"]:
                return k, dict(addr=cu["addr"], bytes=self.burst, tag=self.free_tags[0])
        return None

    def issued(self, k, cycle):
        cu = self.cus[k]
        tag = self.free_tags.popleft()
        self.tag_cu[tag] = k
        cu["loads"] -= 1
        cu["out"] += 1
        cu["addr"] += self.burst
        self.load_rr = (k + 1) % len(self.cus)
        self.loads += 1
        if self.first_load is None:
            self.first_load = cycle

    def returned(self, tag, cycle):
        k = self.tag_cu.pop(tag, None)
        if k is None:
            raise AssertionError(f"cycle {cycle}: GPU {self.i} got a load response with tag "
                                 f"{tag}, which has no load outstanding")
        self.free_tags.append(tag)
        cu = self.cus[k]
        cu["out"] -= 1
        cu["last"] = cycle

    def retire(self, cycle):
        """Tiles whose reads are back and whose compute is over leave for the write buffer."""
        for k, cu in enumerate(self.cus):
            if cu is not None and not cu["loads"] and not cu["out"] and \
                    cycle >= max(cu["start"] + self.compute, cu["last"] + 1):
                self.prod.retire(cu["tile"])
                self.stores.extend(self.plan.tile_stores(self.i, cu["tile"]))
                self.cus[k] = None
                self.tiles_done += 1

    def next_event(self, cycle):
        """The earliest cycle at which a CU can retire, if none can act now."""
        times = []
        for cu in self.cus:
            if cu is None:
                continue
            if cu["loads"]:
                return cycle
            if not cu["out"]:
                times.append(max(cu["start"] + self.compute, cu["last"] + 1))
        return min(times) if times else None

    @property
    def done(self):
        return not self.order and all(cu is None for cu in self.cus) and not self.stores


@dataclass
class _Port:
    """What the env drives on one engine this cycle."""
    store: tuple = None
    load: tuple = None
    dram_response: dict = None
    net_rx: tuple = None


class SystemEnv:
    """The GPUs, DRAMs and ring around the N engines, and the scoreboard (module docstring).

    :mod:`t3hw.verif.cosim_tb` calls, every simulated cycle, :meth:`drive` (per engine: what to put
    on its inputs and which outputs are ready), then :meth:`observe` with what the engine
    showed, then :meth:`tick`. :meth:`idle_until` says how far it may skip when nothing moves.
    """

    def __init__(self, cfg: CosimConfig, plan: Plan, rng):
        self.cfg, self.plan, self.rng = cfg, plan, rng
        n, p = cfg.gpus, cfg.params
        self.n, self.p = n, p
        self.cycle = 0
        self.gpus = [GpuCores(plan, i, tag_width=p.load_tag_width, burst_bytes=p.burst_bytes)
                     for i in range(n)]
        self.drams = [NmcDram(plan, rng, latency=cfg.dram_latency, stall=cfg.dram_stall)
                      for _ in range(n)]
        self.ring = Ring(n, rng, bytes_per_cycle=cfg.link_bytes_per_cycle,
                         latency=cfg.link_latency, tx_bytes=cfg.tx_buffer_bytes,
                         jitter=cfg.net_jitter, reorder=cfg.reorder)
        self.local_data = [deque() for _ in range(n)]   # data of local stores, in order
        self.remote_data = [deque() for _ in range(n)]  # data of remote stores, in order
        self.rx_data = [deque() for _ in range(n)]      # data of received packets, in order
        self.ports = [_Port() for _ in range(n)]
        self.ready = [dict(dram=True, load_response=True, net_tx=True) for _ in range(n)]
        self.remote_chunk = [(i + 1) % n for i in range(n)]
        self.packets = [0] * n
        self.store_wait = [0] * n          # cycles a GPU store was offered and not taken
        self.regions = [plan.regions(i) for i in range(n)]
        want = plan.chunk_bytes * (2 if not plan.gather else 2 + (n - 1))
        self.r_expected = want                 # bytes written into R at every GPU
        self.last_activity = 0

    # -- per engine, per cycle -------------------------------------------------------------
    def _remote(self, i, addr):
        for mode, base, size, _, _ in self.regions[i]:
            if base <= addr < base + size:
                return mode == RegionMode.REMOTE
        return False

    def drive(self, i):
        """Inputs of engine ``i`` this cycle: a :class:`_Port` and the output readies."""
        g, d, port, cyc = self.gpus[i], self.drams[i], self.ports[i], self.cycle
        if port.store is None and g.stores:
            port.store = g.stores[0]
        if port.load is None:
            port.load = g.load()
        if port.dram_response is None and d.responses:
            port.dram_response = d.responses[0]
        if port.net_rx is None:
            port.net_rx = self.ring.arrived(i, cyc)
        rdy = self.ready[i]
        rdy["dram"] = d.ready()
        rdy["load_response"] = True
        rdy["net_tx"] = self.ring.tx_ready(i, cyc, self.p.burst_bytes)
        return port, rdy

    def observe(self, i, took, shown):
        """``took``: which inputs were taken (``{name: bool}``); ``shown``: the outputs that
        transferred this cycle (``{name: fields}``, already unpacked)."""
        g, d, port, cyc = self.gpus[i], self.drams[i], self.ports[i], self.cycle
        active = False
        if port.store is not None and not took.get("store"):
            self.store_wait[i] += 1
        if took.get("store"):
            addr, tile, data = g.stores.popleft()
            (self.remote_data if self._remote(i, addr) else self.local_data)[i].append(data)
            port.store = None
            g.last_store = cyc
            active = True
        if took.get("load"):
            g.issued(port.load[0], cyc)
            port.load = None
            active = True
        if took.get("dram_response"):
            d.responses.popleft()
            port.dram_response = None
            active = True
        if took.get("net_rx"):
            self.rx_data[i].append(port.net_rx[3])
            port.net_rx = None
            active = True
        req = shown.get("dram")
        if req is not None:
            data = None
            if req["op"] != MemOp.READ.value:
                src = self.local_data[i] if req["source"] == WriteSource.COMPUTE.value \
                    else self.rx_data[i]
                if not src:
                    raise AssertionError(f"cycle {cyc}: GPU {i} DRAM write {req} with no "
                                         f"store or packet behind it")
                data = src.popleft()
                if req["bytes"] != data.nbytes:
                    raise AssertionError(f"cycle {cyc}: GPU {i} write of {req['bytes']} bytes "
                                         f"carries {data.nbytes} bytes of data")
            d.take(cyc, req, data)
            active = True
        rsp = shown.get("load_response")
        if rsp is not None:
            g.returned(rsp["tag"], cyc)
            active = True
        pkt = shown.get("net_tx")
        if pkt is not None:
            from_store = (pkt["kind"] == WriteKind.UPDATE.value
                          and pkt["tile"] // self.plan.ids.units == self.remote_chunk[i])
            src = self.remote_data[i] if from_store else d.dma_data
            if not src:
                raise AssertionError(f"cycle {cyc}: GPU {i} sent {pkt} with no data behind it")
            data = src.popleft()
            if pkt["bytes"] != data.nbytes:
                raise AssertionError(f"cycle {cyc}: GPU {i} packet {pkt} carries "
                                     f"{data.nbytes} bytes of data")
            self.ring.send(i, cyc, pkt, data)
            self.packets[i] += 1
            active = True
        if active:
            self.last_activity = cyc
        return active

    def tick(self):
        """End of a cycle: the DRAMs serve, the CUs retire and dispatch."""
        cyc = self.cycle
        for i in range(self.n):
            if self.drams[i].serve(cyc):
                self.last_activity = cyc
            self.gpus[i].retire(cyc)
            self.gpus[i].dispatch(cyc)
        self.cycle += 1

    # -- skipping --------------------------------------------------------------------------
    def pending_inputs(self):
        """True when some input would be driven this cycle (nothing may be skipped)."""
        cyc = self.cycle
        for i in range(self.n):
            g, d = self.gpus[i], self.drams[i]
            w = self.ring.wire[i]
            if g.stores or g.load() is not None or d.responses or d.stall_left or \
                    self.ports[i].net_rx is not None or (w and w[0][0] <= cyc):
                return True
        return False

    def next_event(self):
        """The next cycle at which a model acts on its own (None: never)."""
        times = [self.ring.next_arrival()]
        for i in range(self.n):
            times.append(self.gpus[i].next_event(self.cycle))
            times.append(self.drams[i].next_due())
        times = [t for t in times if t is not None]
        return min(times) if times else None

    # -- completion and results --------------------------------------------------------------
    def done(self):
        return all(d.r_writes >= self.r_expected and not d.queue and not d.responses
                   for d in self.drams) and all(g.done for g in self.gpus) \
            and self.ring.empty() and all(p.net_rx is None for p in self.ports)

    def finish_cycle(self):
        """The cycle the last write of the collective was served (the end of the run)."""
        return max(d.last_write for d in self.drams)

    def numerics(self):
        """``(ok, max_abs_err)``: every GPU's final chunk (all of ``R`` for the all-reduce)
        against numpy's float64 sum of the partials."""
        plan = self.plan
        exact = plan.expected()
        worst = 0.0
        for i, d in enumerate(self.drams):
            e0 = (plan.r_base - plan.o_base) // _DTYPE.itemsize
            r = d.mem[e0:e0 + plan.out_bytes // _DTYPE.itemsize].reshape(plan.shape.m,
                                                                       plan.shape.n)
            rows = slice(None) if plan.gather else \
                slice(i * plan.chunk_rows, (i + 1) * plan.chunk_rows)
            err = np.abs(r[rows].astype(np.float64) - exact[rows])
            worst = max(worst, float(err.max()))
        return worst == 0.0, worst

    def traffic(self):
        return {k: sum(d.traffic[k] for d in self.drams) for k in self.drams[0].traffic}


def model_cycles(cfg: CosimConfig):
    """The performance model's cycles for the same scenario on the same scaled hardware:
    ``{"t3": fused GEMM + RS (+ the all-gather after it), "sequential": GEMM, RS (+ AG)}``,
    the phases, and the DRAM bytes of one GPU in both (``t3_dram_bytes``,
    ``sequential_dram_bytes``).

    The performance model runs the all-gather as a separate ring phase after the fused
    reduce-scatter, as the paper does; the co-simulation fuses it (module docstring).
    """
    from .perf import simulate_sequential, simulate_t3

    class _Work:                       # the workload's GEMM on a ring of cfg.gpus GPUs
        tp = cfg.gpus
        shape = cfg.shape

    sc = cfg.system_config()
    seq = simulate_sequential(_Work, sc)
    ag = {c: (v if c.startswith("ag") else 0) for c, v in seq.traffic.items()}
    t3 = simulate_t3(_Work, sc, policy=cfg.policy, ag=(seq.cycles["ag"], ag))
    rs = cfg.collective == "rs"
    keep = (lambda c: not c.startswith("ag")) if rs else (lambda c: True)
    return {"t3": t3.cycles["gemm_rs"] if rs else t3.cycles["total"],
            "sequential": seq.cycles["gemm"] + seq.cycles["rs"] if rs else seq.cycles["total"],
            "phases": {"t3": t3.cycles, "sequential": seq.cycles},
            "t3_dram_bytes": sum(v for c, v in t3.traffic.items() if keep(c)),
            "sequential_dram_bytes": sum(v for c, v in seq.traffic.items() if keep(c)),
            "mca_threshold": t3.mca_threshold}
