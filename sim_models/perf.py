# SPDX-License-Identifier: Apache-2.0
"""Performance model: Sequential, T3, T3-MCA and Ideal for the paper's sub-layers.

A chunked-time simulation (steps of ``step_cycles``) of one GPU of the ring, built from the
behavioral models: :class:`~sim_models.gpu.GemmProducer` (tiles, L2 reuse) run by
:class:`~sim_models.gpu.SteppedCores` (the CUs, stepped),
:class:`~sim_models.dram.DramModel` (bandwidth-limited queue, traffic classes),
:class:`~sim_models.network.RingNetwork` (serialization, latency, packets),
:class:`~sim_models.engine_model.Arbiter` and the RTL's reference tracker
(:class:`~sim_models.tracker.TrackerModel`), under the engines'
:class:`~t3hw.spec.params.EngineParams` (:class:`SystemConfig`). The model only computes;
``t3hw paper`` (:mod:`t3hw.tools.paper`) runs it over the paper's table and writes the JSON
and the plots.

Scenarios
---------
* **Sequential.** The GEMM alone (output stores are write-back L2 traffic), then a ring
  reduce-scatter in N-1 synchronous steps as NCCL's ring kernels run it: the first step
  reads the local chunk and sends it; at every step the received chunk is written to a
  buffer, and a reduction kernel reads it and the local chunk and sends the sum on in the
  next step, writing it only at the last (:func:`~sim_models.ring_phase.ring_sim`). Then a
  ring all-gather (read, send, write) in N-1 steps.
* **T3.** The GEMM issues its tiles in the staggered order; stage-0 tiles are stored straight
  to the next GPU (``remote`` region, through the TX buffer: a CU whose store finds the TX
  buffer full waits); later stages' stores are NMC updates to local DRAM. The tracker counts
  each tracked unit's local and incoming update bytes; the trigger makes the DMA read the
  unit (in packets, as TX buffer room allows) and send it as an update. The last stage's
  units hold the reduced chunk. The compute stream (tile reads, output stores) and the
  communication stream (DMA reads, incoming updates) share the DRAM under the round-robin
  arbiter. Then the same all-gather as Sequential.
* **T3-MCA.** The same, with the ``t3_mca`` arbiter (``engine_model`` documents its rule).
* **Ideal.** ``max(GEMM, RS) + AG`` with the Sequential run's own phase times.
* **Ideal-RS+NMC.** ``max(GEMM, RS') + AG``, RS' the Sequential reduce-scatter with the
  reduction done in memory (no reduction kernel).

DRAM contention is the only thing that separates T3 from a perfect overlap besides the ring's
fill and drain: the GEMM's tiles slow down when their reads are not served, and communication
is delayed when the arbiter favours the GEMM.

Symmetry
--------
All N GPUs run the same schedule rotated by one chunk, so their timelines are identical. The
model simulates GPU 0 and takes what it receives from GPU 1 to be what it sends itself, one
link away: GPU 1's unit ``j`` of stage ``s`` is GPU 0's unit ``j`` of stage ``s + 1``. This
requires every chunk to split into the same tracked units (checked; ValueError otherwise).

Tracked units
-------------
The tracker is direct-mapped with ``tracker_entries`` entries, and the ids of units live at
the same time must differ modulo that. When the ring is slower than the GEMM (OP layers) the
GEMM runs several stages ahead of the communication, so units of all N-1 tracked stages can be
live at once. A unit is therefore a run of at most ``g`` consecutive tiles of one tile row of
a chunk (a rectangle, so one DMA descriptor), with ``g`` the smallest that leaves at most
``U <= tracker_entries / (N - 1)`` units per chunk; unit ``j`` of stage ``s`` carries id
``s * U + j``, so the ids of stages 1 .. N-1 are all distinct modulo ``tracker_entries``.
A unit's threshold is its local plus its incoming bytes in beats; the beat (the tracker's
counting unit) is ``burst_bytes``, doubled until the threshold fits ``count_width``.
"""

import functools
import heapq
import math
from collections import Counter, deque
from dataclasses import dataclass, field

import numpy as np

from .dram import TRAFFIC_CLASSES, DramModel
from .engine_model import MCA_NAMES, Arbiter, DmaDescriptor, observe_bytes
from .gpu import GemmProducer, GpuConfig, SteppedCores
from .hbm_params import HbmParams
from .memsys import HbmMemory, check_optional_int
from .network import RingNetwork
from .ring_phase import Fifo as _Fifo, ring_sim as _ring_sim
from .tracker import TrackerModel
from t3hw.spec.layouts import MemOp, WriteKind, WriteSource
from t3hw.spec.params import EngineParams


__all__ = ["SystemConfig", "PhaseResult", "simulate_sequential", "simulate_t3", "run_workload",
           "summarize", "dram_by_tp", "geomean", "PAPER"]


#: The paper's published figures (T3.md), for comparison in reports and docs (the JSON
#: reports and the plots are written by :mod:`t3hw.tools.paper`).
PAPER = {
    "summary": {"speedup_geomean": {"t3": 0.20, "t3_mca": 0.30, "ideal": 0.35},
                "speedup_max": {"t3": 0.39, "t3_mca": 0.47, "ideal": 0.50},
                "dram_reduction_geomean": 0.22, "dram_reduction_max": 0.36},
    "summary_tp32": {"speedup_geomean": {"t3_mca": 0.29}, "speedup_max": {"t3_mca": 0.35}},
}


@dataclass(frozen=True)
class SystemConfig:
    """Hardware and model parameters (defaults: the paper's hardware, documented choices).

    Attributes
    ----------
    gpu : GpuConfig
        Compute units, clock, L2, peak, tile shape.
    dram_gbs : float
        DRAM bandwidth, GB/s (paper: 1000).
    dram_latency_cycles : int
        Unloaded DRAM latency (350 cycles, 250 ns).
    link_gbs : float
        One direction of a ring link, GB/s (75: half of 150 GB/s bidirectional).
    link_latency_ns : float
        Link latency (paper: 500 ns).
    packet_bytes : int
        Network packet and DMA request size of this model.
    step_cycles : int
        Time step of the GEMM and fused phases (the ring phases use a quarter of it).
    tx_buffer_bytes : int
        Network transmit staging per GPU: DMA reads and remote stores wait when it is full.
    mca_threshold : int or None
        T3-MCA threshold programmed for this model, or None for ``params.mca_threshold``
        (derived when that is 0). A threshold of its own because the paper's DRAM saturates
        at about 977 requests, beyond the RTL's 8-bit ``occupancy_width``.
    memory : str
        ``"fluid"`` (:class:`~sim_models.dram.DramModel`: a bandwidth account, the default)
        or ``"hbm"`` (:class:`~sim_models.memsys.HbmMemory`: the HBM2 timing model of
        ``docs/dram.md``, sampled, with a T3 arbiter per pseudo-channel and bounded
        outstanding loads). ``dram_gbs`` applies to the fluid model only; the HBM2 one has
        its own (1024 GB/s).
    hbm : HbmParams or None
        The ``"hbm"`` memory's organisation and timings (None: ``HbmParams()``, the
        defaults of ``docs/dram.md``).
    hbm_sample_pcs : int
        Pseudo-channels the ``"hbm"`` memory simulates (of ``hbm.n_pcs``, 64 by default).
    load_slots : int
        Outstanding loads (of ``burst_bytes``) per compute unit (``"hbm"`` only).
    hbm_port : str
        The ``"hbm"`` memory's arbitration: ``"channel"`` (an arbiter per pseudo-channel, the
        paper's GPU) or ``"single"`` (one arbiter, one request per cycle for the whole
        memory: the co-simulation's engine; :class:`~sim_models.memsys.HbmMemory`).
    load_spacing : int or None
        The ``"hbm"`` memory's GEMM load addresses: None, pseudo-random panels; an integer,
        compute unit ``k`` reads on from ``k * load_spacing`` (the co-simulation's GPU,
        whose tiles' loads start 4 KiB apart; :class:`~sim_models.memsys.HbmMemory`).
    lookahead_steps : float
        How far ahead of its compute a compute unit asks for its tile's reads, in
        ``step_cycles`` (2; ``math.inf``: the whole tile at dispatch, as the
        co-simulation's GPU does on the ``"hbm"`` memory, its loads bounded by their tags).
    fabric_cycles : int or None
        Cycles a load's data takes from the DRAM to its compute unit on the ``"hbm"``
        memory (None: what ``dram_latency_cycles`` leaves after the DRAM's unloaded read,
        the L2 and interconnect of the paper's GPU; the co-simulation's GPU has none).
    params : EngineParams
        The engines' parameters, which the model reads rather than shadows:
        ``burst_bytes`` (DRAM request size and tracker beat), the tracker geometry
        (``tracker_entries``, ``count_width``, ``beats_width``, ``cmd_width``),
        ``starvation_limit``, ``mca_window_log2`` and ``mca_threshold``. Default: the
        paper's, with ``burst_bytes = 256`` for speed (thresholds must fit ``count_width``).
    """

    gpu:                 GpuConfig = field(default_factory=GpuConfig)
    dram_gbs:            float = 1000.0
    dram_latency_cycles: int = 350
    link_gbs:            float = 75.0
    link_latency_ns:     float = 500.0
    packet_bytes:        int = 4096
    step_cycles:         int = 512
    tx_buffer_bytes:     int = 256 * 1024
    mca_threshold:       int = None
    rr_fraction:         float = 1.0
    rr_backlog:          int = 0
    memory:              str = "fluid"
    hbm:                 HbmParams = None
    hbm_sample_pcs:      int = 2
    load_slots:          int = 16
    hbm_port:            str = "channel"
    load_spacing:        int = None
    lookahead_steps:     float = 2
    fabric_cycles:       int = None
    params:              EngineParams = field(
                             default_factory=lambda: EngineParams(burst_bytes=256))

    def __post_init__(self):
        if not isinstance(self.params, EngineParams):
            raise ValueError(f"params must be an EngineParams, not {self.params!r}")
        for name in ("dram_latency_cycles", "packet_bytes", "step_cycles", "tx_buffer_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer in [1, inf), not {v!r}")
        for name in ("dram_gbs", "link_gbs"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be in (0, inf), not {getattr(self, name)!r}")
        if not self.link_latency_ns >= 0:
            raise ValueError(f"link_latency_ns must be in [0, inf), not {self.link_latency_ns!r}")
        if self.packet_bytes % self.burst_bytes:
            raise ValueError(f"packet_bytes must be a multiple of burst_bytes="
                             f"{self.burst_bytes}, not {self.packet_bytes!r}")
        if self.hbm is not None and not isinstance(self.hbm, HbmParams):
            raise ValueError(f"hbm must be an HbmParams or None, not {self.hbm!r}")
        if self.memory not in ("fluid", "hbm"):
            raise ValueError(f"memory must be 'fluid' or 'hbm', not {self.memory!r}")
        for name in ("hbm_sample_pcs", "load_slots"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer in [1, inf), not {v!r}")
        granule = (self.hbm or HbmParams()).interleave_bytes
        if self.memory == "hbm" and self.burst_bytes != granule:
            raise ValueError(f"params.burst_bytes must be hbm.interleave_bytes={granule} "
                             f"with memory='hbm', not {self.burst_bytes!r}")
        if self.hbm_port not in ("channel", "single"):
            raise ValueError(f"hbm_port must be 'channel' or 'single', not {self.hbm_port!r}")
        if isinstance(self.lookahead_steps, bool) or \
                not isinstance(self.lookahead_steps, (int, float)) or not self.lookahead_steps > 0:
            raise ValueError(f"lookahead_steps must be a number in (0, inf], "
                             f"not {self.lookahead_steps!r}")
        check_optional_int("fabric_cycles", self.fabric_cycles, 0)
        check_optional_int("load_spacing", self.load_spacing, 1)
        # T3-MCA-RR's variants: checked here, with their ranges, not at the first run
        Arbiter(policy="t3_mca_rr", rr_fraction=self.rr_fraction, rr_backlog=self.rr_backlog)
        if self.tx_buffer_bytes < self.packet_bytes:
            raise ValueError(f"tx_buffer_bytes must be in [{self.packet_bytes}, inf), "
                             f"not {self.tx_buffer_bytes!r}")

    @property
    def burst_bytes(self):
        """DRAM request size and tracker beat: ``params.burst_bytes``."""
        return self.params.burst_bytes

    def arbiter(self, policy, saturation):
        """A fresh :class:`~sim_models.engine_model.Arbiter` under ``policy`` with the
        engines' T3-MCA parameters (``saturation``: the DRAM's, in requests)."""
        p = self.params
        threshold = self.mca_threshold if self.mca_threshold is not None else \
            (p.mca_threshold or None)
        return Arbiter(policy=policy, threshold=threshold, starvation_limit=p.starvation_limit,
                       window=1 << p.mca_window_log2, saturation=saturation,
                       rr_fraction=self.rr_fraction, rr_backlog=self.rr_backlog)

    def dram(self):
        """A fresh timing-only memory: :class:`DramModel` or :class:`HbmMemory`."""
        if self.memory == "hbm":
            return HbmMemory(hbm=self.hbm, sample_pcs=self.hbm_sample_pcs,
                             burst_bytes=self.burst_bytes,
                             latency_cycles=self.dram_latency_cycles,
                             fabric_cycles=self.fabric_cycles, port=self.hbm_port,
                             load_spacing=self.load_spacing,
                             mshrs=self.load_slots * self.gpu.cus, cus=self.gpu.cus)
        return DramModel(bandwidth_gbs=self.dram_gbs, freq_ghz=self.gpu.freq_ghz,
                         latency_cycles=self.dram_latency_cycles, burst_bytes=self.burst_bytes)

    def ring(self, n_gpus):
        """A :class:`RingNetwork` of ``n_gpus`` with these link parameters."""
        return RingNetwork(n_gpus=n_gpus, link_gbs=self.link_gbs,
                           latency_ns=self.link_latency_ns, packet_bytes=self.packet_bytes,
                           freq_ghz=self.gpu.freq_ghz)


@dataclass
class PhaseResult:
    """Cycles per phase and DRAM bytes per traffic class of one scenario.

    ``mca_threshold`` is the T3-MCA threshold used (programmed or derived), else None.
    """
    cycles: dict
    traffic: dict
    mca_threshold: int = None

    @property
    def total(self):
        """End-to-end cycles."""
        return self.cycles["total"]


def _units(producer, n, max_units, burst_bytes, packet_bytes, max_threshold):
    """Tracked units per stage (lists of tile ids), their bytes, and the tracker beat."""
    per_chunk = max(len(c) for c in producer.chunks)
    g = max(1, math.ceil(per_chunk / max_units))
    while True:
        stages = []
        for s in range(n):
            units, run = [], []
            for t in producer.chunks[producer.stage_chunk(s)]:
                if run and (len(run) == g or producer.tiles[t].row != producer.tiles[run[0]].row):
                    units.append(run)
                    run = []
                run.append(t)
            units.append(run)
            stages.append(units)
        if max(len(u) for u in stages) <= max_units:
            break
        g += 1
    sizes = [[sum(producer.store_bytes(t) for t in u) for u in units] for units in stages]
    if any(sz != sizes[0] for sz in sizes):
        raise ValueError(f"tokens x hidden must split into {n} chunks of identical tracked units "
                         f"for the symmetric ring model; {producer.shape} does not")
    beat = burst_bytes
    while 2 * max(sizes[0]) // beat > max_threshold and beat < packet_bytes:
        beat *= 2
    if 2 * max(sizes[0]) // beat > max_threshold:
        raise ValueError(f"a tracked unit's threshold must be at most {max_threshold} beats of "
                         f"at most packet_bytes={packet_bytes}; {producer.shape} needs "
                         f"{2 * max(sizes[0]) // beat}")
    if any(producer.store_bytes(t) % beat for u in stages[0] for t in u) or packet_bytes % beat:
        raise ValueError(f"the tracker beat must divide every tile's output bytes and the "
                         f"packet; {beat} does not for {producer.shape}")
    return stages, sizes[0], beat


def _gemm_sim(work, cfg, *, fused, policy="compute_first"):
    """The GEMM phase: alone (``fused=False``) or fused with the ring RS (T3): ``(cycles,
    traffic, arbiter, gemm_end)``, ``gemm_end`` where the last tile left its compute unit."""
    n, dt = work.tp, cfg.step_cycles
    prod = GemmProducer(shape=work.shape, gpu=cfg.gpu, n_gpus=n if fused else 1,
                        cache_outputs=not fused)
    dram = cfg.dram()
    arb = cfg.arbiter(policy, dram.saturation)
    gemm = SteppedCores(prod, lookahead_steps=cfg.lookahead_steps)
    cfifo, mfifo = _Fifo(), _Fifo()
    now, gemm_end = 0.0, None
    if not fused:
        while not (gemm.done and not cfifo):
            gemm.dispatch()
            new = gemm.requests(dt)
            if new.sum() > 0:
                cfifo.push("read", None, new.sum(), new)
                dram.request("compute", new.sum(), "gemm_reads",
                             cus=zip(list(gemm.tile), new))
            gc, _ = dram.step(dt, arb)
            cfifo.serve(gc, gemm.deliver)
            for cu in gemm.advance(dt):
                t = int(gemm.tile[cu])
                nb = prod.store_bytes(t)
                cfifo.push("store", None, nb)
                dram.request("compute", nb, "gemm_writes", op=MemOp.STORE,
                             region=prod.store_region(t))
                gemm.free(cu)
            now += dt
        return now, dram.traffic, arb, now      # alone, the GEMM ends with its last store

    p = cfg.params
    stages, ubytes, beat = _units(prod, n, max(1, p.tracker_entries // (n - 1)),
                                  p.burst_bytes, cfg.packet_bytes, p.max_threshold)
    n_units = len(ubytes)
    unit_of = {t: (s, j) for s, units in enumerate(stages) for j, u in enumerate(units) for t in u}
    ring = cfg.ring(n)
    link = ring.links[0]
    tracker = TrackerModel(p)
    cmd_mask = (1 << p.cmd_width) - 1
    descriptors, armed = {}, set()
    dma, dma_out, rx_off = deque(), 0, Counter()   # dma: [unit, left, done]
    arrivals, seq = [], 0
    done_units = 0

    @functools.lru_cache(maxsize=None)
    def region(s, j):                     # unit (s, j)'s output: (addr, rows, row_bytes, pitch)
        tiles = stages[s][j]
        addr, rows, _, pitch = prod.store_region(tiles[0])
        return addr, rows, sum(prod.store_region(t)[2] for t in tiles), pitch

    def descriptor(s, j):
        addr, rows, row_bytes, pitch = region(s, j)
        return DmaDescriptor(src=addr, rows=rows, row_bytes=row_bytes, pitch=pitch,
                             dest_device=n - 1, dest_addr=addr, op=WriteKind.UPDATE,
                             dest_tile=(s + 1) * n_units + j)

    def comm(unit, off, nbytes, cls, op=None):
        # a packet's bytes where they lie: the unit's rows, walked as the DMA walks them
        addr, _, row_bytes, pitch = region(*unit)
        while nbytes > 0:
            r, c = divmod(off, row_bytes)
            take = min(nbytes, row_bytes - c)
            dram.request("comm", take, cls, op=op, region=(addr + r * pitch + c, 1, take, pitch))
            off, nbytes = off + take, nbytes - take

    def observe(s, j, nbytes, source):
        nonlocal done_units
        uid = s * n_units + j
        if uid not in armed:
            if not tracker.arm(uid, 2 * ubytes[j] // beat, uid & cmd_mask):
                raise RuntimeError(f"tracker entry of unit {uid} is still armed: "
                                   f"tracker errors {tracker.errors}")
            armed.add(uid)
            if s < n - 1:
                descriptors[uid] = descriptor(s, j)
        for trig in observe_bytes(tracker, uid, nbytes, burst_bytes=beat,
                                  source=source):
            armed.discard(trig.tile)
            if s == n - 1:
                done_units += 1
            else:
                dma.append([(s, j), descriptors.pop(trig.tile).nbytes, 0])

    held = deque()
    while done_units < n_units:
        end = now + dt
        while arrivals and arrivals[0][0] <= now:
            _, _, (s, j), nb = heapq.heappop(arrivals)
            mfifo.push("rx", (s + 1, j), nb)
            comm((s + 1, j), rx_off[s + 1, j], nb, "rs_writes", MemOp.UPDATE)
            rx_off[s + 1, j] += nb
        while held:                       # stage-0 tiles waiting for TX buffer room
            cu = held[0]
            t = int(gemm.tile[cu])
            nb = prod.store_bytes(t)
            if link.queued_bytes + dma_out + nb > cfg.tx_buffer_bytes:
                break
            held.popleft()
            for size in ring.packets(nb):
                link.enqueue(size, unit_of[t], ready=now)
            gemm.free(cu)
        gemm.dispatch()
        new = gemm.requests(dt)
        if new.sum() > 0:
            cfifo.push("read", None, new.sum(), new)
            dram.request("compute", new.sum(), "gemm_reads", cus=zip(list(gemm.tile), new))
        while dma and link.queued_bytes + dma_out + cfg.packet_bytes <= cfg.tx_buffer_bytes:
            nb = min(cfg.packet_bytes, dma[0][1])
            mfifo.push("dma", dma[0][0], nb)
            comm(dma[0][0], dma[0][2], nb, "rs_reads")
            dma_out += nb
            dma[0][1] -= nb
            dma[0][2] += nb
            if not dma[0][1]:
                dma.popleft()
        running = not gemm.done
        gemm_end = now if gemm_end is None and not running else gemm_end
        arb.backlog = sum(u[1] for u in dma)      # triggered bytes not yet asked for
        gc, gm = dram.step(dt, arb)
        if running:                       # T3-MCA: compute's share of this step's capacity
            arb.measure(dt, min(1.0, gc / (dram.bytes_per_cycle * dt)))
        for _, (s, j), nb in cfifo.serve(gc, gemm.deliver):
            observe(s, j, nb, WriteSource.COMPUTE)
        for kind, (s, j), nb in mfifo.serve(gm):
            if kind == "dma":
                dma_out -= nb
                link.enqueue(nb, (s, j), ready=end + dram.read_delay)
            else:
                observe(s, j, nb, WriteSource.REMOTE)
        for cu in gemm.advance(dt):
            t = int(gemm.tile[cu])
            s, j = unit_of[t]
            if s == 0:
                held.append(cu)
            else:
                nb = prod.store_bytes(t)
                cfifo.push("store", (s, j), nb)
                dram.request("compute", nb, "gemm_writes", op=MemOp.UPDATE,
                             region=prod.store_region(t))
                gemm.free(cu)
        for d in link.transmit(end):
            seq += 1
            heapq.heappush(arrivals, (d.arrival, seq, d.tag, d.nbytes))
        now = end
        if (gemm.done and not (cfifo or mfifo or arrivals or dma or held or dma_out
                               or link.queued_bytes) and done_units < n_units):
            raise RuntimeError(
                f"the fused run stopped with {n_units - done_units} of {n_units} last-stage "
                f"units never complete (nothing left to serve or send at cycle {now:.0f}); "
                f"armed units: {sorted(armed)[:8]}")
    if any(tracker.errors.values()):
        raise RuntimeError(f"tracker errors in the fused run: {tracker.errors}")
    return now, dram.traffic, arb, now if gemm_end is None else gemm_end


def simulate_sequential(work, cfg=None):
    """Sequential: GEMM, then ring RS, then ring AG. Returns a :class:`PhaseResult`."""
    cfg = cfg or SystemConfig()
    g, g_traffic, _, _ = _gemm_sim(work, cfg, fused=False)
    rs, rs_traffic = _ring_sim(work, cfg, "rs")
    ag, ag_traffic = _ring_sim(work, cfg, "ag")
    traffic = {c: g_traffic[c] + rs_traffic[c] + ag_traffic[c] for c in TRAFFIC_CLASSES}
    return PhaseResult({"gemm": g, "rs": rs, "ag": ag, "total": g + rs + ag}, traffic)


def simulate_t3(work, cfg=None, *, policy="round_robin", ag=None):
    """T3 (``policy="round_robin"``), T3-MCA (``"t3_mca"``) or T3-MCA with round robin below
    the threshold (``"t3_mca_rr"``, ours): fused GEMM+RS, then AG. ``cycles["gemm"]`` is
    the cycle, inside the fused phase, at which the GEMM's last tile left its compute unit.

    ``ag`` is ``(cycles, traffic)`` of the all-gather if already simulated (it is the same
    phase as Sequential's).
    """
    cfg = cfg or SystemConfig()
    fused, f_traffic, arb, gemm_end = _gemm_sim(work, cfg, fused=True, policy=policy)
    ag_cycles, ag_traffic = ag if ag is not None else _ring_sim(work, cfg, "ag")
    traffic = {c: f_traffic[c] + ag_traffic[c] for c in TRAFFIC_CLASSES}
    return PhaseResult({"gemm_rs": fused, "gemm": gemm_end, "ag": ag_cycles, "total": fused
                        + ag_cycles}, traffic,
                       arb.threshold if policy in MCA_NAMES else None)


def run_workload(work, cfg=None):
    """Every scenario of one workload: an entry of the ``configs`` list, plus ``phases``
    (cycles per phase of each scenario), which the JSON report leaves out.

    ``ideal_rs_nmc`` is the paper's Ideal-RS+NMC: ``max(GEMM, RS with near-memory
    reduction) + AG``, the RS of :func:`_ring_sim` ``"rs_nmc"`` (no reduction kernel: each
    received chunk is added in memory as it arrives).
    """
    cfg = cfg or SystemConfig()
    seq = simulate_sequential(work, cfg)
    ag = (seq.cycles["ag"], {c: (v if c.startswith("ag") else 0) for c, v in seq.traffic.items()})
    t3 = simulate_t3(work, cfg, policy="round_robin", ag=ag)
    mca = simulate_t3(work, cfg, policy="t3_mca", ag=ag)
    rr = simulate_t3(work, cfg, policy="t3_mca_rr", ag=ag)
    ideal = max(seq.cycles["gemm"], seq.cycles["rs"]) + seq.cycles["ag"]
    rs_nmc, _ = _ring_sim(work, cfg, "rs_nmc")
    ideal_nmc = max(seq.cycles["gemm"], rs_nmc) + seq.cycles["ag"]
    return {"model": work.model, "tp": work.tp, "sublayer": work.sublayer, "tokens": work.tokens,
            "cycles": {"sequential": seq.total, "t3": t3.total, "t3_mca": mca.total,
                       "t3_mca_rr": rr.total, "ideal": ideal, "ideal_rs_nmc": ideal_nmc},
            "dram_bytes": {"sequential": seq.traffic, "t3": t3.traffic, "t3_mca": mca.traffic,
                           "t3_mca_rr": rr.traffic},
            "phases": {"sequential": seq.cycles, "t3": t3.cycles, "t3_mca": mca.cycles,
                       "t3_mca_rr": rr.cycles,
                       "rs_nmc": {"rs": rs_nmc}}}


def geomean(xs):
    """The geometric mean of the positive numbers ``xs``."""
    return float(np.exp(np.mean(np.log(xs))))


def summarize(configs):
    """Speedups (``sequential / x - 1``) and DRAM reductions (``1 - t3_mca / sequential``).

    Geomeans are taken over ``1 + speedup`` and over the traffic ratios, then shifted back.
    """
    if not configs:
        raise ValueError("configs must be a non-empty list")
    out = {"speedup_geomean": {}, "speedup_max": {}}
    for key in ("t3", "t3_mca", "t3_mca_rr", "ideal", "ideal_rs_nmc"):
        if key not in configs[0]["cycles"]:
            continue
        ratios = [c["cycles"]["sequential"] / c["cycles"][key] for c in configs]
        out["speedup_geomean"][key] = geomean(ratios) - 1
        out["speedup_max"][key] = max(ratios) - 1
    kept = [sum(c["dram_bytes"]["t3_mca"].values()) / sum(c["dram_bytes"]["sequential"].values())
            for c in configs]
    out["dram_reduction_geomean"] = 1 - geomean(kept)
    out["dram_reduction_max"] = 1 - min(kept)
    return out


def dram_by_tp(configs):
    """The DRAM traffic by class that the paper reports, Sequential against T3-MCA, per TP
    degree (``{"8": {...}, ...}``): ``rs_reads`` and ``gemm_reads``, the geomean of
    ``sequential / t3_mca``; ``writes_reduction``, ``1 - (gemm + rs writes of T3-MCA) /
    (those of Sequential)``, geomean over the ratios; ``ag_unchanged``, whether every
    config's all-gather bytes are the same in both."""
    if not configs:
        raise ValueError("configs must be a non-empty list")
    out = {}
    for tp in sorted({c["tp"] for c in configs}):
        pairs = [(c["dram_bytes"]["sequential"], c["dram_bytes"]["t3_mca"])
                 for c in configs if c["tp"] == tp]
        writes = [(t["gemm_writes"] + t["rs_writes"]) / (s["gemm_writes"] + s["rs_writes"])
                  for s, t in pairs]
        out[str(tp)] = {
            "rs_reads": geomean([s["rs_reads"] / t["rs_reads"] for s, t in pairs]),
            "gemm_reads": geomean([s["gemm_reads"] / t["gemm_reads"] for s, t in pairs]),
            "writes_reduction": 1 - geomean(writes),
            "ag_unchanged": all(s[k] == t[k] for s, t in pairs
                                for k in ("ag_reads", "ag_writes")),
            "configs": len(pairs)}
    return out
