# SPDX-License-Identifier: Apache-2.0
"""The GPU-core GEMM producer: peak, tiles, staggered order, L2 reuse, roofline; the stepped
CUs reading K-slices through a capacity-bounded L2."""

import math

import numpy as np
import pytest

from sim_models.gpu import GemmProducer, GemmShape, GpuConfig, L2Model, SteppedCores


def test_peak_is_documented():
    g = GpuConfig()
    assert g.peak_flops == pytest.approx(80 * 1.4e9 * 1024)          # 114.7 TFLOP/s


def test_tiles_and_edges():
    p = GemmProducer(shape=GemmShape(m=300, k=64, n=200), gpu=GpuConfig(tile_m=256, tile_n=128))
    assert (p.n_rows, p.n_cols) == (2, 2)
    assert p.store_bytes(3) == 44 * 72 * 2
    assert p.store_region(3) == (256 * 400 + 256, 44, 144, 400)
    assert p.compute_cycles == math.ceil(2 * 256 * 128 * 64 / 1024)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_staggered_order(n):
    shape = GemmShape(m=256 * n, k=64, n=256)
    for i in range(n):
        p = GemmProducer(shape=shape, n_gpus=n, gpu_index=i)
        order = p.order()
        assert sorted(order) == list(range(len(p.tiles)))
        per = len(order) // n
        for s in range(n):
            assert {p.tiles[t].chunk for t in order[s * per:(s + 1) * per]} == {(i + 1 + s) % n}


def test_l2_reuse_reads_compulsory_bytes_when_inputs_fit():
    p = GemmProducer(shape=GemmShape(m=4096, k=512, n=2048), cache_outputs=False)
    reads = sum(p.dispatch(t) for t in p.order())
    assert reads == p.min_read_bytes()


def test_l2_sharing_and_lru():
    l2 = L2Model(capacity=100, cache_outputs=True)
    assert l2.acquire("a", 60) == 60
    assert l2.acquire("a", 60) == 0           # shared by a running tile
    l2.release("a"); l2.release("a")
    assert l2.acquire("a", 60) == 0           # retained
    l2.release("a")
    l2.store_output("c", 50)                  # pushes "a" out
    assert l2.acquire("a", 60) == 60


def test_l2_access_is_lru_without_pinning():
    l2 = L2Model(capacity=100, cache_outputs=False)
    assert l2.access("a", 40) == 40
    assert l2.access("b", 40) == 40
    assert l2.access("a", 40) == 0            # hit: "a" is now the most recent
    assert l2.access("c", 40) == 40           # evicts "b", the least recent
    assert l2.access("a", 40) == 0
    assert l2.access("b", 40) == 40
    assert (l2.hits, l2.misses) == (80, 160)


def _stepped_reads(shape, gpu, *, dt=512, bytes_per_cycle=None, cache_outputs=False):
    """Run a GEMM alone on SteppedCores with the DRAM serving every request at once (or at
    ``bytes_per_cycle``, shared by the CUs in proportion to what they asked); return the
    producer, its DRAM read bytes and its cycles."""
    p = GemmProducer(shape=shape, gpu=gpu, cache_outputs=cache_outputs)
    cores = SteppedCores(p)
    owed, reads, cycles = np.zeros(gpu.cus), 0.0, 0
    while not cores.done:
        cores.dispatch()
        new = cores.requests(dt)
        reads += new.sum()
        owed += new
        if bytes_per_cycle is None or owed.sum() <= bytes_per_cycle * dt:
            part = owed.copy()
        else:
            part = owed * (bytes_per_cycle * dt / owed.sum())
        owed -= part
        cores.deliver(part)
        for cu in cores.advance(dt):
            cores.free(cu)
        cycles += dt
    return p, reads, cycles


def test_stepped_reads_are_the_slices_that_miss():
    shape, gpu = GemmShape(m=1024, k=512, n=2048), GpuConfig(cus=8)
    p, reads, _ = _stepped_reads(shape, gpu)
    assert p.k_slices == 8
    assert reads == p.l2.misses
    assert p.l2.hits + p.l2.misses == p.panel_read_bytes()


def test_stepped_l2_capacity_matters():
    # B (512 x 2048) is 2 MB, A 1 MB; 8 CUs run half a tile row (8 of 16 columns) at a
    # time. A B slice comes back two waves later, after the other half of B (1 MB) and an
    # A panel; an A slice one wave later, after eight B column-panels (1 MB)
    shape = GemmShape(m=1024, k=512, n=2048)
    a_bytes, b_bytes = shape.m * shape.k * 2, shape.k * shape.n * 2
    big, reads_big, _ = _stepped_reads(shape, GpuConfig(cus=8, l2_bytes=4 * 2**20))
    assert reads_big == big.min_read_bytes()                  # B stays: compulsory only
    small, reads_small, _ = _stepped_reads(shape, GpuConfig(cus=8, l2_bytes=2**20))
    # with 1 MB neither comes back in time: B is read once per tile row, A once per wave
    assert reads_small == 4 * b_bytes + 2 * a_bytes
    assert 1 - reads_small / small.panel_read_bytes() < 1 - reads_big / big.panel_read_bytes()


def test_stepped_wave_shares_slices_not_panels():
    # one row of 8 tiles in one wave: they stream the same A K-slices in step, so the 2 MB A
    # panel is read once even through an L2 of 64 KB (a few slices), far below the panel
    shape = GemmShape(m=256, k=4096, n=8 * 128)
    gpu = GpuConfig(cus=8, l2_bytes=64 * 2**10)
    p, reads, _ = _stepped_reads(shape, gpu)
    assert reads == p.min_read_bytes()
    # the panel path pins whole panels instead: the same tiles hold 4 MB there
    held = sum(nbytes for t in p.order() for _, nbytes in p._panels(t)[1:]) + 256 * 4096 * 2
    assert held > 60 * gpu.l2_bytes
    # one CU: tiles run one after another, and nothing of A is left for the next tile
    p1, reads1, _ = _stepped_reads(shape, GpuConfig(cus=1, l2_bytes=64 * 2**10))
    assert reads1 == 8 * 256 * 4096 * 2 + shape.k * shape.n * 2


def test_stepped_compute_bound_time():
    shape, gpu = GemmShape(m=1024, k=512, n=2048), GpuConfig(cus=8)
    p, _, cycles = _stepped_reads(shape, gpu)
    waves = len(p.tiles) // gpu.cus
    assert waves * p.compute_cycles <= cycles <= waves * (p.compute_cycles + 512) + 512


def test_output_caching_costs_input_reuse():
    shape = GemmShape(m=8192, k=2048, n=3584)   # B = 14.7 MB: fits only without outputs
    reads = {}
    for cached in (True, False):
        p = GemmProducer(shape=shape, cache_outputs=cached)
        reads[cached] = sum(e.read_bytes for e in p.events(dram_bytes_per_cycle=714.0))
    assert reads[False] < reads[True]
    assert reads[False] >= GemmProducer(shape=shape).min_read_bytes()


def test_events_roofline_compute_bound():
    gpu = GpuConfig()
    p = GemmProducer(shape=GemmShape(m=8192, k=1536, n=3072), gpu=gpu, cache_outputs=False)
    ev = list(p.events(dram_bytes_per_cycle=1000 / 1.4))
    assert len(ev) == 32 * 24 and len({e.tile for e in ev}) == len(ev)
    end = max(e.end for e in ev)
    waves = math.ceil(len(ev) / gpu.cus)
    assert end == pytest.approx(waves * p.compute_cycles)
    assert end >= p.shape.flops / (gpu.peak_flops / (gpu.freq_ghz * 1e9))
    e = ev[0]
    assert (e.store_rows, e.store_row_bytes, e.store_pitch) == (256, 256, 3072 * 2)


def test_events_roofline_memory_bound():
    gpu = GpuConfig(cus=8, l2_bytes=1)           # one wave, no retention
    p = GemmProducer(shape=GemmShape(m=256 * 8, k=4096, n=128), gpu=gpu)
    bw = 8.0                                     # bytes/cycle: far below the compute need
    ev = list(p.events(dram_bytes_per_cycle=bw))
    moved = sum(e.read_bytes for e in ev) + sum(p.store_bytes(e.tile) for e in ev)
    end = max(e.end for e in ev)
    assert end >= moved / bw                     # the roofline's memory bound
    assert end > 10 * p.compute_cycles
    # each tile reads its own A panel; the first also the shared B panel: fair share BW/C
    a_panel = 256 * 4096 * 2
    assert end == pytest.approx((a_panel + 4096 * 128 * 2 + 256 * 128 * 2) / (bw / 8))


@pytest.mark.parametrize("kwargs, match", [
    ({"cus": 0}, "cus"), ({"freq_ghz": 0}, "freq_ghz"), ({"tile_m": 2.5}, "tile_m"),
])
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GpuConfig(**kwargs)


def test_bad_producer():
    with pytest.raises(ValueError, match="n_gpus"):
        GemmProducer(shape=GemmShape(m=256, k=8, n=128), n_gpus=2)
    with pytest.raises(ValueError, match="gpu_index"):
        GemmProducer(shape=GemmShape(m=512, k=8, n=128), n_gpus=2, gpu_index=2)
    with pytest.raises(ValueError, match="m must"):
        GemmShape(m=0, k=1, n=1)
