# SPDX-License-Identifier: Apache-2.0
"""The fused collective of a co-simulation scenario, planned: what the driver programs into
every engine and what the GPUs store (:class:`Plan`).

:class:`~sim_models.cosim.CosimConfig` names the scenario; :class:`Plan` lays out its
buffers, cuts its chunks into tracked units and lists, per GPU, the address-map regions, the
tracker entries with their DMA descriptors, and every tile's stores with their data.
:class:`~sim_models.cosim.SystemEnv` runs it around the engines.

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

import numpy as np

from t3hw.spec.layouts import RegionMode, WriteKind

from .gpu import GemmProducer


__all__ = ["DTYPE", "O_BASE", "B_BASE", "Plan"]

#: Element type of the data (FP16).
DTYPE = np.dtype(np.float16)
#: Largest integer up to which float16 holds every integer: sums stay exact below it.
EXACT = 2048

O_BASE = 1 << 32            # the O buffer; loads (A, B panels) sit below it
A_BASE, B_BASE = 0, 1 << 31


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
    """Buffers, units, regions, tracker entries, descriptors and stores of a scenario
    (``cfg``, a :class:`~sim_models.cosim.CosimConfig`).

    Attributes
    ----------
    producers : list of GemmProducer
        One per GPU (``output_base`` = the ``O`` buffer).
    units : list of (row, col0, ncols)
        The tracked units of a chunk, in tile coordinates relative to the chunk's first tile
        row; every chunk has the same.

    Each GPU's ``[T, H]`` partial output (float16 integers, sums exact) is
    :meth:`partial`.
    """

    def __init__(self, cfg):
        self.cfg = cfg
        p, n, g = cfg.params, cfg.gpus, cfg.gpu
        shape = cfg.shape
        self.n, self.p, self.shape = n, p, shape
        self.gather = cfg.collective == "allreduce"
        self.pitch = shape.n * g.elem_bytes
        self.out_bytes = shape.m * self.pitch
        self.chunk_rows = shape.m // n
        self.chunk_bytes = self.chunk_rows * self.pitch
        self._region_cache = {}
        #: Bytes written into ``R`` at every GPU when the collective is complete: its own
        #: chunk's last-stage stores and the forwarded updates (twice the chunk), plus, in
        #: the all-reduce, the ``N - 1`` reduced chunks copied in.
        self.r_expected = self.chunk_bytes * (2 if not self.gather else 2 + (n - 1))
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
        self._rng = np.random.default_rng(cfg.seed)
        self._partials = []

    # -- data --------------------------------------------------------------------------------
    def partial(self, i):
        """GPU ``i``'s ``[T, H]`` partial output: a real GEMM partial ``A_i @ B_i`` of {-1, 0,
        1} operands, each row of ``A_i`` with at most ``2048 / N`` nonzeros, so that every
        element of every partial sum (and of every sum of ``N`` row blocks of one partial,
        :meth:`expected_symmetric`) is an integer of magnitude at most 2048 and float16 sums
        are exact in any order. Made when first asked for, GPU by GPU from the seed (a run of
        GPU 0 alone makes one, not ``N``)."""
        m, k, nn = self.shape.m, self.shape.k, self.shape.n
        nnz = min(k, EXACT // self.n)
        rng = self._rng
        while len(self._partials) <= i:
            a = np.zeros((m, k), np.float32)
            cols = rng.random((m, k)).argsort(axis=1)[:, :nnz]
            np.put_along_axis(a, cols, rng.choice([-1.0, 1.0], (m, nnz)), axis=1)
            b = rng.integers(-1, 2, (k, nn)).astype(np.float32)
            self._partials.append((a @ b).astype(DTYPE))
        return self._partials[i]

    def expected(self):
        """The all-reduced output (exact, float64), summed in place (not from an ``N x T x H``
        stack of the partials)."""
        out = self.partial(0).astype(np.float64)
        for i in range(1, self.n):
            out += self.partial(i)
        return out

    def expected_symmetric(self):
        """GPU 0's reduced chunk in a run of GPU 0 of a symmetric ring
        (:func:`t3hw.tools.cosim_split.run_parts` with ``symmetric``): there GPU ``i``'s
        partial is GPU 0's with its chunks rotated by ``i`` (chunk ``c`` of GPU ``i`` is chunk
        ``c - i`` of GPU 0), so chunk 0 sums GPU 0's ``N`` chunks (exact, float64)."""
        part = self.partial(0).astype(np.float64)
        return part.reshape(self.n, self.chunk_rows, self.shape.n).sum(axis=0)

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
    def is_remote(self, i, addr):
        """True if ``addr`` falls in one of GPU ``i``'s ``REMOTE`` regions: a store there is
        forwarded on the network, not written locally."""
        if i not in self._region_cache:                 # asked once per store
            self._region_cache[i] = self.regions(i)
        for mode, base, size, _, _ in self._region_cache[i]:
            if base <= addr < base + size:
                return mode == RegionMode.REMOTE
        return False

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
        block = self.partial(i)
        out = []
        for r in range(tile.rows):
            addr = base + (row0 + r) * self.pitch + col0 * g.elem_bytes
            for e in range(0, tile.cols, per):
                out.append((addr + e * g.elem_bytes, tid,
                            block[row0 + r, col0 + e:col0 + min(e + per, tile.cols)]))
        return out

    def tile_bursts(self, i, t):
        """``(remote, data)``: the data of :meth:`tile_stores` ``(i, t)`` as one
        ``(stores, burst elements)`` array in the same order, and whether they are stores
        into a ``REMOTE`` region (a tile lies in one chunk, so in one region); None if a
        store of the tile is shorter than a burst (its row is not a whole number of them)."""
        prod, g, burst = self.producers[i], self.cfg.gpu, self.p.burst_bytes
        tile = prod.tiles[t]
        per = burst // g.elem_bytes
        if tile.cols % per or burst % g.elem_bytes:
            return None
        row0, col0 = tile.row * g.tile_m, tile.col * g.tile_n
        addr = self.buffer(i, self.chunk_of_tile(t)) + row0 * self.pitch + col0 * g.elem_bytes
        data = self.partial(i)[row0:row0 + tile.rows, col0:col0 + tile.cols]
        return self.is_remote(i, addr), data.reshape(-1, per)
