# SPDX-License-Identifier: Apache-2.0
"""End-to-end numerics of the ring reduce-scatter with real FP16 data.

N GPUs, each with a functional :class:`~sim_models.dram.DramModel` holding its FP16 partial
GEMM output, run either

* ``scheme="t3"``: the fused schedule through the reference engines
  (:class:`~sim_models.engine_model.EngineModel`): the GEMM's tiles are stored in the
  staggered order through the address map (stage-0 chunk: ``remote`` region to GPU i-1; the
  rest: ``tracked``), the tracker triggers the pre-programmed DMA descriptors, the DMA walks
  them into bursts and each burst arrives at the neighbour as a near-memory update; or
* ``scheme="sequential"``: the baseline ring as NCCL's ring kernels run it, where each step
  the received chunk is written to a buffer and a reduction kernel reads it and the local
  chunk and sends the FP16 sum on, writing it only at the last step.

Packets in flight are delivered in a seeded random order (the network may interleave
sources), so the check covers the ordering the tracker must get right: a trigger that fired
one write early would forward a partial sum that misses a contribution.

Tolerance
---------
Each FP16 addition rounds once, to within ``u = 2**-11`` relative. Summing N FP16 partials
in any order therefore errs from the exact sum ``S`` of the partials by at most
``(N - 1) * u * sum_i |p_i|`` elementwise; the check asserts that bound (computed in float64).
"""

import numpy as np

from .dram import DramModel
from .engine_model import DmaDescriptor, EngineModel, Region
from .gpu import GemmProducer, GemmShape, GpuConfig
from t3hw.spec.layouts import WriteKind


__all__ = ["SCHEMES", "ring_reduce_scatter_check"]


#: The schemes :func:`ring_reduce_scatter_check` runs.
SCHEMES = ("t3", "sequential")

_U16 = 2.0 ** -11


def _partials(n, shape, rng):
    out = []
    for _ in range(n):
        a = rng.standard_normal((shape.m, shape.k)).astype(np.float16)
        b = rng.standard_normal((shape.k, shape.n)).astype(np.float16)
        out.append((a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16))
    return out


def _t3(engines, producers, partials, rng):
    inflight = []

    def flush():
        while inflight:
            p = inflight.pop(int(rng.integers(len(inflight))))
            engines[p.dest].receive(p)
            inflight.extend(engines[p.dest].run_dma())

    orders = [p.order() for p in producers]
    for step in range(len(orders[0])):
        for i, (eng, prod) in enumerate(zip(engines, producers)):
            t = orders[i][step]
            tile = prod.tiles[t]
            addr, rows, row_bytes, pitch = prod.store_region(t)
            g = prod.gpu
            block = partials[i][tile.row * g.tile_m:tile.row * g.tile_m + rows,
                                tile.col * g.tile_n:tile.col * g.tile_n + tile.cols]
            for r in range(rows):
                inflight.extend(eng.store(addr + r * pitch, block[r], tile=t))
            inflight.extend(eng.run_dma())
        if rng.random() < 0.5:           # let traffic pile up sometimes
            flush()
    flush()
    for i, eng in enumerate(engines):
        own = set(producers[i].chunks[i])
        if set(eng.completed) != own or any(eng.tracker.errors.values()):
            raise RuntimeError(f"GPU {i}: completed tiles {sorted(eng.completed)} != chunk "
                               f"{sorted(own)}, tracker errors {eng.tracker.errors}")


def _sequential(drams, producers, base, chunk_rows, pitch):
    """The baseline ring reduce-scatter as NCCL's and RCCL's ring kernels run it: GPU ``i``
    reads its chunk of step 0 and sends it; each received chunk is written into a buffer,
    read back with the local chunk, and the sum sent on from the kernel's registers (no
    write), or written over the local chunk at the last step."""
    n = len(drams)
    nbytes = chunk_rows * pitch
    sums = [None] * n                                   # the kernel's sum, sent next step
    for r in range(n - 1):
        sent = []
        for i in range(n):
            c = producers[i].stage_chunk(r)
            if r == 0:
                sent.append((c, drams[i].read(base + c * nbytes, nbytes, cls="rs_reads")))
            else:
                if sums[i][0] != c:
                    raise RuntimeError(f"GPU {i} reduced chunk {sums[i][0]} at step {r - 1} "
                                       f"but sends chunk {c} at step {r}")
                sent.append(sums[i])
        for i, (c, data) in enumerate(sent):
            dst = (i - 1) % n
            buf = base + n * nbytes                         # receive buffer after the output
            drams[dst].write(buf, data, cls="rs_writes")
            local = drams[dst].read(base + c * nbytes, nbytes, cls="rs_reads").view(np.float16)
            recv = drams[dst].read(buf, nbytes, cls="rs_reads").view(np.float16)
            total = (local + recv).view(np.uint8)
            if r == n - 2:
                drams[dst].write(base + c * nbytes, total, cls="rs_writes")
            else:
                sums[dst] = (c, total)


def ring_reduce_scatter_check(*, n_gpus, scheme="t3", rows_per_chunk=32, k=48, hidden=128,
                              seed=0):
    """Run one ring reduce-scatter with real FP16 data; compare with numpy.

    Parameters
    ----------
    n_gpus : int
        Ring size N (2 .. 16).
    scheme : str
        One of :data:`SCHEMES`.
    rows_per_chunk : int
        Output rows per chunk (a multiple of 16): T = N x rows_per_chunk.
    k, hidden : int
        GEMM reduction size and output width H (a multiple of 32).
    seed : int
        Seed of the data and of the delivery order.

    Returns
    -------
    dict
        ``n_gpus``, ``scheme``, ``max_abs_err`` and ``max_bound`` (worst element of the
        error and of its bound, module docstring), ``ok`` (every element within its bound),
        and ``traffic`` (DRAM bytes per class summed over the GPUs).
    """
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, int) or not 2 <= n_gpus <= 16:
        raise ValueError(f"n_gpus must be an integer in [2, 16], not {n_gpus!r}")
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, not {scheme!r}")
    for name, value, mult in (("rows_per_chunk", rows_per_chunk, 16), ("hidden", hidden, 32),
                              ("k", k, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < mult or value % mult:
            raise ValueError(f"{name} must be a positive multiple of {mult}, not {value!r}")
    rng = np.random.default_rng(seed)
    gpu = GpuConfig(cus=4, tile_m=16, tile_n=32)
    shape = GemmShape(m=n_gpus * rows_per_chunk, k=k, n=hidden)
    partials = _partials(n_gpus, shape, rng)
    pitch = hidden * 2
    nbytes = shape.m * pitch                 # output, then the baseline's receive buffer
    drams = [DramModel(size_bytes=2 * nbytes) for _ in range(n_gpus)]
    base = [d.alloc("out", (shape.m, hidden)) for d in drams][0]
    producers = [GemmProducer(shape=shape, gpu=gpu, n_gpus=n_gpus, gpu_index=i,
                              cache_outputs=scheme == "sequential", output_base=base)
                 for i in range(n_gpus)]
    chunk_bytes = rows_per_chunk * pitch
    if scheme == "sequential":
        for d, p in zip(drams, partials):
            d.write(base, p, cls="gemm_writes")
        _sequential(drams, producers, base, rows_per_chunk, pitch)
    else:
        engines = [EngineModel(device=i, dram=d) for i, d in enumerate(drams)]
        for i, (eng, prod) in enumerate(zip(engines, producers)):
            first = prod.stage_chunk(0)
            for c in range(n_gpus):
                if c == first:
                    eng.addrmap.add(Region(base + c * chunk_bytes, chunk_bytes, "remote",
                                           device=(i - 1) % n_gpus,
                                           remote_base=base + c * chunk_bytes))
                else:
                    eng.addrmap.add(Region(base + c * chunk_bytes, chunk_bytes, "tracked"))
            for s in range(1, n_gpus):
                for t in prod.chunks[prod.stage_chunk(s)]:
                    bytes_ = prod.store_bytes(t)
                    eng.tracker.arm(t, 2 * bytes_ // eng.burst_bytes, t)
                    if s == n_gpus - 1:
                        eng.program(t, None)
                    else:
                        addr, rows, row_bytes, tp = prod.store_region(t)
                        eng.program(t, DmaDescriptor(src=addr, rows=rows, row_bytes=row_bytes,
                                                     pitch=tp, dest_device=(i - 1) % n_gpus,
                                                     dest_addr=addr, op=WriteKind.UPDATE,
                                                     dest_tile=t))
        _t3(engines, producers, partials, rng)
    exact = np.sum([p.astype(np.float64) for p in partials], axis=0)
    bound = (n_gpus - 1) * _U16 * np.sum([np.abs(p.astype(np.float64)) for p in partials], axis=0)
    err = np.zeros_like(exact)
    for i, d in enumerate(drams):
        rows = slice(i * rows_per_chunk, (i + 1) * rows_per_chunk)
        err[rows] = np.abs(d.tensor("out")[rows].astype(np.float64) - exact[rows])
    traffic = {c: sum(d.traffic[c] for d in drams) for c in drams[0].traffic}
    return {"n_gpus": n_gpus, "scheme": scheme, "max_abs_err": float(err.max()),
            "max_bound": float(bound.max()), "ok": bool(np.all(err <= bound)),
            "traffic": traffic}
