# SPDX-License-Identifier: Apache-2.0
"""GPU-core models: a tiled GEMM ``[T, K] x [K, H] -> [T, H]`` on C compute units.

One GEMM, two clocks:

* :class:`GemmProducer` is the GEMM itself, shared by every model: its tiles, their staggered
  issue order, each tile's compute cycles, its DRAM reads through the L2 (:class:`L2Model`)
  and its output region. :meth:`GemmProducer.events` runs it alone.
* :class:`SteppedCores` runs a producer's tiles on the CUs in steps of many cycles, each
  tile at a roofline under the DRAM bytes it was delivered (fluid), reading its panels
  K-slice by K-slice through the L2: the performance model's GPU (:mod:`sim_models.perf`).
* :class:`GpuCores` runs a producer's tiles cycle by cycle against an engine's ports: loads
  of ``burst_bytes`` with tags, then the output's stores one burst per cycle: the
  co-simulation's GPU (:class:`sim_models.cosim.SystemEnv`, around the RTL).

Documented choices
------------------
* **Peak throughput.** ``flops_per_cu_cycle = 1024`` FP16 FLOP per CU per cycle (dense
  matrix FP16). That is MI210's 181 TFLOP/s peak over 104 CUs at 1.7 GHz, and also V100's
  (8 tensor cores x 64 FMA per SM per cycle). With the paper's 80 CUs at 1.4 GHz:
  ``80 * 1.4e9 * 1024 = 114.7`` TFLOP/s.
* **Tiles.** Each workgroup computes one ``tile_m x tile_n`` output macro-tile (default
  256 x 128, a common FP16 macro-tile of rocBLAS/Tensile and CUTLASS kernels) over the whole
  K. Edge tiles cost a full tile of compute (the kernel runs whole MFMA blocks) and store only
  their valid part. Tiles are issued to the C CUs in order; a CU takes the next tile as soon
  as it retires one, so tiles run in waves of C.
* **Tile time.** A tile's compute is ``2 * tile_m * tile_n * K / flops_per_cu_cycle`` cycles;
  its DRAM reads (the A and B panel slices that miss in L2) stream evenly over the compute
  of their K-slice, so the tile runs at ``min(compute rate, delivered bytes / needed
  bytes)``: a per-tile roofline under whatever DRAM bandwidth the tile gets. The tile ends
  with the stores of its output, tagged with its tile id.
* **L2 reuse, stepped GPU** (:class:`SteppedCores`, the performance model), at K-slice
  granularity. A tile's K loop runs ``ceil(K / tile_k)`` iterations (``tile_k = 64``, the
  K-depth of one iteration of a 256 x 128 FP16 macro-tile kernel); iteration ``i`` reads the
  ``tile_m x tile_k`` slice ``i`` of its A row-panel and the ``tile_k x tile_n`` slice ``i``
  of its B column-panel. Every slice goes through one fully-associative LRU of ``l2_bytes``
  (:meth:`L2Model.access`); nothing is pinned, so the L2 holds what its capacity allows and
  no more. A slice is looked up when the tile's read frontier (its compute position plus the
  CU's lookahead) enters it, in the order the running tiles get there: the tiles of a wave
  that stream the same slices close together in time share them (the first misses, the
  others hit), tiles that have drifted apart share them only if the slice survives in
  between, and a wave reuses the previous wave's slices only if everything read in between
  fits. Drift is not set: it comes from the tiles' different start times and delivered
  bytes. A hit costs no DRAM bytes (a request merged with an outstanding miss counts as a
  hit, and does not wait for it). If ``cache_outputs`` is set (the baseline: output stores
  are write-back L2 traffic), each retired tile's output enters the LRU and pushes slices
  out; T3's output stores are updates that bypass the L2 and leave it to the inputs.
* **L2 reuse, panel path** (:meth:`GemmProducer.dispatch` / :meth:`GemmProducer.retire`:
  :meth:`GemmProducer.events` and the co-simulation's :class:`GpuCores`), at panel
  granularity, unchanged: a tile reads the A row-panel of its tile row (``tile_m x K``) and
  the B column-panel of its tile column (``K x tile_n``) when it starts. A panel already used
  by a running tile is shared, and held (never evicted) until its last user retires; then it
  ages in LRU order. Live and retained panels together fill at most ``l2_bytes`` only while
  the live ones fit: the co-simulation's default GEMM does, the paper's do not (whence the
  slice path for the performance model).
* **Staggered order.** With ``n_gpus = N`` the output is cut into N chunks of consecutive
  tiles (row-major tile order, sizes as equal as possible) and GPU ``i`` issues chunk
  ``(i + 1 + s) % N`` at stage ``s``.
"""

import bisect
import heapq
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from .l2 import L2Model


__all__ = ["GpuConfig", "GemmShape", "Tile", "TileEvent", "L2Model", "GemmProducer",
           "SteppedCores", "GpuCores", "first_load", "LOAD_SPACING"]


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer in [{low}, inf), not {value!r}")


@dataclass(frozen=True)
class GpuConfig:
    """The simulated GPU (defaults: the paper's, plus the documented peak and tile shape).

    Attributes
    ----------
    cus : int
        Compute units (paper: 80).
    freq_ghz : float
        Clock in GHz (paper: 1.4). The models count cycles of this clock.
    l2_bytes : int
        L2 capacity (paper: 16 MB).
    flops_per_cu_cycle : int
        Peak FP16 matrix FLOP per CU per cycle (1024, see the module docstring).
    tile_m, tile_n : int
        Output macro-tile of one workgroup (256 x 128).
    tile_k : int
        K-depth of one iteration of a tile's K loop (64): the granularity at which the
        stepped GPU (:class:`SteppedCores`) reads its A and B panels through the L2.
    elem_bytes : int
        Bytes per element (2: FP16).
    """

    cus:                int = 80
    freq_ghz:           float = 1.4
    l2_bytes:           int = 16 * 2**20
    flops_per_cu_cycle: int = 1024
    tile_m:             int = 256
    tile_n:             int = 128
    elem_bytes:         int = 2
    tile_k:             int = 64

    def __post_init__(self):
        for name in ("cus", "l2_bytes", "flops_per_cu_cycle", "tile_m", "tile_n", "elem_bytes",
                     "tile_k"):
            _check_int(name, getattr(self, name), 1)
        if not self.freq_ghz > 0:
            raise ValueError(f"freq_ghz must be in (0, inf), not {self.freq_ghz!r}")

    @property
    def peak_flops(self):
        """Peak FP16 FLOP/s of the whole GPU."""
        return self.cus * self.freq_ghz * 1e9 * self.flops_per_cu_cycle


@dataclass(frozen=True)
class GemmShape:
    """``[m, k] x [k, n]``: m = tokens T, k = the sliced reduction dim, n = hidden H."""
    m: int
    k: int
    n: int

    def __post_init__(self):
        for name in ("m", "k", "n"):
            _check_int(name, getattr(self, name), 1)

    @property
    def flops(self):
        """Multiply-adds counted as 2 FLOP."""
        return 2 * self.m * self.k * self.n


@dataclass(frozen=True)
class Tile:
    """One output macro-tile: id ``row * n_cols + col``; ``rows x cols`` valid elements."""
    id:    int
    row:   int
    col:   int
    rows:  int
    cols:  int
    chunk: int


@dataclass(frozen=True)
class TileEvent:
    """One tile of an isolated GEMM run (see :meth:`GemmProducer.events`).

    ``store_addr`` is the address of the tile's first output element; its stores are
    ``store_rows`` rows of ``store_row_bytes`` bytes, ``store_pitch`` bytes apart, each
    tagged with ``tile``.
    """
    order:           int
    tile:            int
    cu:              int
    start:           float
    end:             float
    read_bytes:      int
    store_addr:      int
    store_rows:      int
    store_row_bytes: int
    store_pitch:     int


class GemmProducer:
    """The GEMM of one GPU: its tiles, issue order, per-tile compute and DRAM reads.

    Parameters
    ----------
    shape : GemmShape
    gpu : GpuConfig
    n_gpus : int
        Ring size N (1: no staggering, one chunk).
    gpu_index : int
        This GPU's index i in ``[0, N)``; sets the rotation of the chunk order.
    cache_outputs : bool
        L2 write-back of the output (baseline) or bypass (T3).
    output_base : int
        Address of the ``[m, n]`` output (row-major, ``n * elem_bytes`` pitch).
    """

    def __init__(self, *, shape, gpu=GpuConfig(), n_gpus=1, gpu_index=0, cache_outputs=True,
                 output_base=0):
        if not isinstance(shape, GemmShape):
            raise ValueError(f"shape must be a GemmShape, not {shape!r}")
        if not isinstance(gpu, GpuConfig):
            raise ValueError(f"gpu must be a GpuConfig, not {gpu!r}")
        _check_int("n_gpus", n_gpus, 1)
        if not 0 <= gpu_index < n_gpus:
            raise ValueError(f"gpu_index must be in [0, {n_gpus - 1}], not {gpu_index!r}")
        _check_int("output_base", output_base, 0)
        self.shape, self.gpu = shape, gpu
        self.n_gpus, self.gpu_index = n_gpus, gpu_index
        self.output_base = output_base
        self.n_rows = -(-shape.m // gpu.tile_m)
        self.n_cols = -(-shape.n // gpu.tile_n)
        n_tiles = self.n_rows * self.n_cols
        if n_tiles < n_gpus:
            raise ValueError(f"n_gpus must be in [1, {n_tiles}] (one tile per chunk at least) "
                             f"for {shape}, not {n_gpus!r}")
        self.chunks = [list(map(int, c)) for c in np.array_split(np.arange(n_tiles), n_gpus)]
        chunk_of = np.empty(n_tiles, dtype=int)
        for c, ids in enumerate(self.chunks):
            chunk_of[ids] = c
        self.tiles = []
        for t in range(n_tiles):
            r, c = divmod(t, self.n_cols)
            self.tiles.append(Tile(t, r, c, min(gpu.tile_m, shape.m - r * gpu.tile_m),
                                   min(gpu.tile_n, shape.n - c * gpu.tile_n), int(chunk_of[t])))
        self.compute_cycles = math.ceil(2 * gpu.tile_m * gpu.tile_n * shape.k
                                        / gpu.flops_per_cu_cycle)
        self.l2 = L2Model(capacity=gpu.l2_bytes, cache_outputs=cache_outputs)
        self.k_bounds = list(range(0, shape.k, gpu.tile_k)) + [shape.k]

    def stage_chunk(self, stage):
        """The chunk this GPU produces at ring stage ``stage``: ``(i + 1 + s) % N``."""
        if self.n_gpus == 1:
            return 0
        return (self.gpu_index + 1 + stage) % self.n_gpus

    def order(self):
        """Tile ids in issue order: chunk by chunk in the staggered order, row-major inside."""
        return [t for s in range(self.n_gpus) for t in self.chunks[self.stage_chunk(s)]]

    def store_bytes(self, tile):
        """Bytes of the valid output of ``tile`` (an id)."""
        t = self.tiles[tile]
        return t.rows * t.cols * self.gpu.elem_bytes

    def store_region(self, tile):
        """``(addr, rows, row_bytes, pitch)`` of the output of ``tile`` (an id)."""
        t, g = self.tiles[tile], self.gpu
        pitch = self.shape.n * g.elem_bytes
        addr = self.output_base + t.row * g.tile_m * pitch + t.col * g.tile_n * g.elem_bytes
        return addr, t.rows, t.cols * g.elem_bytes, pitch

    def _panels(self, tile):
        t, g, k = self.tiles[tile], self.gpu, self.shape.k
        return ((("A", t.row), t.rows * k * g.elem_bytes),
                (("B", t.col), k * t.cols * g.elem_bytes))

    def dispatch(self, tile):
        """``tile`` starts on a CU; returns its DRAM read bytes (its panels' L2 misses)."""
        return sum(self.l2.acquire(key, nbytes) for key, nbytes in self._panels(tile))

    def retire(self, tile):
        """``tile`` finished: release its panels and pass its output through the L2."""
        for key, _ in self._panels(tile):
            self.l2.release(key)
        self.l2.store_output(("C", tile), self.store_bytes(tile))

    @property
    def k_slices(self):
        """Iterations of a tile's K loop: ``ceil(k / tile_k)``."""
        return len(self.k_bounds) - 1

    def _slices(self, tile, i):
        t, e = self.tiles[tile], self.gpu.elem_bytes
        depth = self.k_bounds[i + 1] - self.k_bounds[i]
        return ((("A", t.row, i), t.rows * depth * e), (("B", t.col, i), depth * t.cols * e))

    def read_slice(self, tile, i):
        """``tile`` reads the ``i``-th K-slice of its A and B panels (``tile_m x tile_k`` and
        ``tile_k x tile_n``) through the L2's LRU; returns the bytes that miss (the
        stepped GPU's path, :class:`SteppedCores`)."""
        return sum(self.l2.access(key, nbytes) for key, nbytes in self._slices(tile, i))

    def write_output(self, tile):
        """``tile`` finished on the stepped GPU: its output passes through the L2."""
        self.l2.store_output(("C", tile), self.store_bytes(tile))

    def panel_read_bytes(self):
        """Bytes the tiles read from their A and B panels (hits and misses): the hit rates'
        denominator."""
        e, k = self.gpu.elem_bytes, self.shape.k
        return sum((t.rows + t.cols) * k * e for t in self.tiles)

    def min_read_bytes(self):
        """Compulsory DRAM reads: every element of A and B once."""
        s = self.shape
        return (s.m * s.k + s.k * s.n) * self.gpu.elem_bytes

    def events(self, *, dram_bytes_per_cycle):
        """Yield :class:`TileEvent` for an isolated run of the GEMM (no other traffic).

        Each running tile gets ``1/C`` of ``dram_bytes_per_cycle``, for its reads and stores;
        its time is ``max(compute, (read + store bytes) / share)``. This is the API that a
        co-simulation drives the RTL from; the performance model instead shares the DRAM
        among tiles and communication step by step.
        """
        if not dram_bytes_per_cycle > 0:
            raise ValueError(f"dram_bytes_per_cycle must be in (0, inf), "
                             f"not {dram_bytes_per_cycle!r}")
        share = dram_bytes_per_cycle / self.gpu.cus
        free = [(0.0, cu) for cu in range(self.gpu.cus)]
        running = []                                  # (end, tile) heap
        for n, tile in enumerate(self.order()):
            start, cu = heapq.heappop(free)
            while running and running[0][0] <= start:
                self.retire(heapq.heappop(running)[1])
            read = self.dispatch(tile)
            end = start + max(self.compute_cycles, (read + self.store_bytes(tile)) / share)
            heapq.heappush(running, (end, tile))
            heapq.heappush(free, (end, cu))
            addr, rows, row_bytes, pitch = self.store_region(tile)
            yield TileEvent(n, tile, cu, start, end, read, addr, rows, row_bytes, pitch)
        while running:
            self.retire(heapq.heappop(running)[1])


class SteppedCores:
    """The CUs running one GEMM, stepped: per-tile roofline under delivered DRAM bytes.

    The performance model's GPU (module docstring). Each step it calls :meth:`dispatch`
    (free CUs take the next tiles), :meth:`requests` (the read bytes the CUs issue, a per-CU
    array, up to ``lookahead_steps`` ahead of their compute), :meth:`deliver` (the bytes the
    DRAM served them) and :meth:`advance`; a finished tile holds its CU until :meth:`free`.

    A tile's K loop is ``producer.k_slices`` iterations; its reads are those of its A and B
    K-slices that miss in the L2 (:meth:`GemmProducer.read_slice`), looked up when the
    tile's read frontier (its compute position plus the lookahead) enters the slice, in
    the order the running tiles get there. A tile's cumulative miss bytes over its K
    position are piecewise linear (flat over a slice that hit): the CU requests them up
    to its read frontier, and computes up to where its delivered bytes reach.
    """

    def __init__(self, producer, lookahead_steps=2):
        # The state is per CU in Python lists, and each step loops over the CUs in Python:
        # numpy's per-call cost on arrays of a few CUs was most of the model's time. Every
        # figure is computed with the same floating-point operations in the same order as
        # the array version did (the paper's table and the co-simulation's model cycles are
        # the same to the bit).
        self.p = producer
        cus = producer.gpu.cus
        self.cus = cus
        self.queue = deque(producer.order())
        self.tile = [-1] * cus
        self.req = [0.0] * cus
        self.got = [0.0] * cus
        self.frac = [0.0] * cus
        self.held = [False] * cus
        self.tc = float(producer.compute_cycles)
        self.lookahead = lookahead_steps
        n = producer.k_slices
        self.n = n
        kb = np.array(producer.k_bounds, dtype=float) / producer.shape.k
        self.kb = kb.tolist()
        self.kw = np.diff(kb).tolist()
        self.miss = [[0.0] * n for _ in range(cus)]        # miss bytes per K-slice of its tile
        self.cum = [[0.0] * (n + 1) for _ in range(cus)]   # their prefix sums
        self.known = [0] * cus                             # slices looked up so far

    @property
    def done(self):
        return not self.queue and all(t < 0 for t in self.tile)

    def dispatch(self):
        for cu in range(self.cus):
            if self.tile[cu] >= 0:
                continue
            if not self.queue:
                break
            self.tile[cu] = self.queue.popleft()
            self.req[cu] = self.got[cu] = self.frac[cu] = 0.0
            self.miss[cu] = [0.0] * self.n
            self.cum[cu] = [0.0] * (self.n + 1)
            self.known[cu] = 0

    def requests(self, dt):
        """Read bytes the CUs issue this step (a per-CU array): up to a few steps ahead."""
        kb, kw, last = self.kb, self.kw, len(self.kw) - 1
        ahead = self.lookahead * dt / self.tc
        fronts, todo = [0.0] * self.cus, []
        for cu in range(self.cus):
            if self.tile[cu] < 0:
                continue
            front = min(1.0, self.frac[cu] + ahead)
            fronts[cu] = front
            upto = bisect.bisect_left(kb, front, 0, len(kb) - 1)
            if upto > self.known[cu]:
                todo += [(kb[i] - self.frac[cu], cu, i) for i in range(self.known[cu], upto)]
                self.known[cu] = upto
        for _, cu, i in sorted(todo):
            miss, cum = self.miss[cu], self.cum[cu]
            miss[i] = self.p.read_slice(self.tile[cu], i)
            cum[i + 1] = cum[i] + miss[i]
        new = [0.0] * self.cus
        for cu in range(self.cus):
            if self.tile[cu] < 0:
                continue
            front = fronts[cu]
            i = min(bisect.bisect_right(kb, front) - 1, last)
            target = self.cum[cu][i] + (front - kb[i]) / kw[i] * self.miss[cu][i]
            take = max(target - self.req[cu], 0.0)
            new[cu] = take
            self.req[cu] += take
        return np.array(new)

    def deliver(self, part):
        got = self.got
        for cu, v in enumerate(part.tolist() if isinstance(part, np.ndarray) else part):
            got[cu] += v

    def advance(self, dt):
        """Advance the running tiles by ``dt``; return the CUs whose tile just finished."""
        kb, kw, last = self.kb, self.kw, len(self.kw) - 1
        step = dt / self.tc
        fin = []
        for cu in range(self.cus):
            if self.tile[cu] < 0 or self.held[cu]:
                continue
            known, cum, got = self.known[cu], self.cum[cu], self.got[cu]
            # slices whose bytes are all delivered (a prefix: the sums do not fall), and
            # how far into the next
            j = bisect.bisect_right(cum, got + 1.0, 1, known + 1) - 1
            jj = min(j, last)
            if j < known:
                part = (got - cum[jj]) / max(self.miss[cu][jj], 1.0)
                have = kb[j] + min(max(part, 0.0), 1.0) * kw[jj]
            else:
                have = kb[j]
            frac = min(self.frac[cu] + step, have)
            self.frac[cu] = frac
            if frac >= 1.0 - 1e-9:
                self.held[cu] = True
                fin.append(cu)
        return fin

    def free(self, cu):
        self.p.write_output(int(self.tile[cu]))
        self.tile[cu] = -1
        self.held[cu] = False


#: Bytes between the first loads of consecutive tiles in the co-simulation's GPU.
LOAD_SPACING = 4096


def first_load(load_base, tile):
    """The address of tile ``tile``'s first load (the next go up by a burst each): loads carry
    timing only, so each tile's start at its own 4 KiB step, wrapped at 1 GiB."""
    return load_base + (tile * LOAD_SPACING) % (1 << 30)


class GpuCores:
    """The compute units of one GPU running its GEMM cycle by cycle, at an engine's ports.

    The co-simulation's GPU (module docstring). A CU holding a tile reads its panels' L2
    misses as ``burst_bytes`` loads (the ``load`` port, tags from a free list, round-robin
    over the CUs), computes for ``compute_cycles`` (overlapping its reads: it ends at the
    later of the two), then hands its output to the write buffer, which feeds ``store`` one
    burst per cycle; the CU is then free.

    Parameters
    ----------
    producer : GemmProducer
        This GPU's GEMM.
    tile_stores : callable
        ``tile_stores(tile)``: the stores of a finished tile, ``(addr, tile id, data)`` per
        burst, in order.
    index : int
        This GPU's index (in messages).
    tag_width : int
        Width of a load tag: ``2**tag_width`` loads may be outstanding.
    burst_bytes : int
        Bytes per load.
    load_base : int
        Where the loads' addresses start (they carry timing only).
    """

    def __init__(self, producer, tile_stores, *, index=0, tag_width, burst_bytes, load_base=0):
        self.prod, self.tile_stores, self.i = producer, tile_stores, index
        self.order = deque(self.prod.order())
        self.burst = burst_bytes
        self.load_base = load_base
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
        self.last_retire = None                  # the cycle the last tile so far retired in
        # Kept as they change, so that no per-cycle call scans the CUs:
        self.busy = 0                            # CUs holding a tile
        self.loading = 0                         # CUs with loads still to issue
        self.due = []                            # heap (retire cycle, CU) of the CUs whose
                                                 # reads are all issued and back

    def _reads_done(self, k, cycle):
        """CU ``k`` has no load to issue or outstanding since ``cycle``: it retires once its
        compute is over too (at the earliest the next cycle)."""
        heapq.heappush(self.due, (max(self.cus[k]["start"] + self.compute, cycle + 1), k))

    def dispatch(self, cycle):
        if not self.order or self.busy == len(self.cus):
            return
        for k, cu in enumerate(self.cus):
            if cu is None and self.order:
                t = self.order.popleft()
                nbytes = self.prod.dispatch(t)
                self.cus[k] = {"tile": t, "loads": -(-nbytes // self.burst), "out": 0,
                               "addr": first_load(self.load_base, t), "start": cycle,
                               "last": cycle}
                self.busy += 1
                if self.cus[k]["loads"]:
                    self.loading += 1
                else:
                    self._reads_done(k, cycle)

    def load(self):
        """The next load to issue ``(cu, payload fields)`` or None (round-robin over CUs)."""
        if not self.free_tags or not self.loading:
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
        if not cu["loads"]:
            self.loading -= 1
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
        if not cu["out"] and not cu["loads"]:
            self._reads_done(k, cycle)

    def retire(self, cycle):
        """Tiles whose reads are back and whose compute is over leave for the write buffer,
        in CU order."""
        due = self.due
        if not due or due[0][0] > cycle:
            return
        ks = []
        while due and due[0][0] <= cycle:
            ks.append(heapq.heappop(due)[1])
        for k in sorted(ks):
            cu = self.cus[k]
            self.prod.retire(cu["tile"])
            self.stores.extend(self.tile_stores(cu["tile"]))
            self.cus[k] = None
            self.busy -= 1
            self.tiles_done += 1
        self.last_retire = cycle

    def next_event(self, cycle):
        """The earliest cycle at which a CU can retire, if none can act now."""
        if self.loading:
            return cycle
        return self.due[0][0] if self.due else None

    @property
    def done(self):
        return not self.order and not self.busy and not self.stores
