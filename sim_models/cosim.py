# SPDX-License-Identifier: Apache-2.0
"""Whole-system co-simulation: the models around N engines of generated RTL.

:class:`CosimConfig` is one scenario: a paper workload (model, TP, sub-layer, tokens) run on
a ring of ``gpus`` GPUs, each with a T3 engine, under one arbitration policy, as a fused
GEMM + ring reduce-scatter (``collective="rs"``) or a fused all-reduce (``"allreduce"``).
:class:`~sim_models.collective.Plan` is what the driver programs into every engine and what
the GPUs store (its module explains the fused all-reduce).
:class:`SystemEnv` holds the cycle-level models that :mod:`t3hw.verif.cosim_tb` connects to
the engines of the system top, one engine per GPU:

* **GPU cores** (:class:`~sim_models.gpu.GpuCores`): ``cus`` compute units run the GEMM's
  tiles in the staggered T3 order (:class:`~sim_models.gpu.GemmProducer`, with its L2),
  loading on the engine's ``load`` port; the output rows leave on ``store``, one burst per
  store, as near-memory updates carrying the tracked unit's id.
* **NMC DRAM** (:class:`~sim_models.dram.NmcDram`, ``memory="fixed"``): one request per
  cycle from ``dram``, served in order ``dram_latency`` cycles later (updates added in
  place), answers on ``dram_response``, its queue length on ``occupancy``; bytes counted per
  traffic class. With ``memory="hbm"``, :class:`~sim_models.hbm_dram.HbmDram`: the same
  data and order, the timing of the HBM2 model (banks, rows, FR-FCFS, refresh), its
  waiting requests on ``occupancy``.
* **Network** (:class:`~sim_models.network.Ring`): one link from each GPU to the previous
  one, a transmit buffer (``net_tx`` is ready while it has room), serialization at
  ``link_bytes_per_cycle``, ``link_latency`` cycles of flight, optional jitter and
  reordering.

Data stays in Python (``DESIGN.md``): the RTL carries addresses, tile ids, lengths and tags;
the models attach the numbers to the requests and packets the RTL emits, in the order each
stream is defined to keep (local stores and received packets reach the DRAM in order; DMA
packets leave in the order of their reads).
"""

import functools
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from t3hw.spec.layouts import MemOp, WriteKind, WriteSource
from t3hw.spec.params import EngineParams

from .collective import B_BASE, DTYPE as _DTYPE, Plan
from .dram import NmcDram
from .engine_model import POLICIES
from .hbm_dram import COSIM_HBM, HbmDram
from .gpu import LOAD_SPACING, GemmShape, GpuConfig, GpuCores
from .network import Ring, link_rate
from .workloads import SUBLAYERS, Workload


__all__ = ["POLICIES", "COLLECTIVES", "MEMORIES", "CosimConfig", "Plan", "GpuCores",
           "NmcDram", "HbmDram", "Ring", "SystemEnv", "gpu_cores", "gpu_dram", "check_numerics",
           "model_sequential", "model_cycles"]

#: Collectives: fused GEMM + reduce-scatter, or fused GEMM + all-reduce.
COLLECTIVES = ("rs", "allreduce")

#: DRAM timings: ``"fixed"`` (:class:`NmcDram`: in order, one request per cycle, a fixed
#: latency) or ``"hbm"`` (:class:`HbmDram`: the HBM2 bank and row model).
MEMORIES = ("fixed", "hbm")


# the enums' values, read once (an enum member's .value is a descriptor call)
_READ, _COMPUTE, _UPDATE = MemOp.READ.value, WriteSource.COMPUTE.value, WriteKind.UPDATE.value


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
        Ring size N, 2 .. ``min(2**device_width, 64)`` (32 at the default parameters;
        :meth:`max_gpus`); tested at 2, 4 and 8.
    model, tp, sublayer, tokens : str, int, str, int
        The workload (:class:`~sim_models.workloads.Workload`): the per-GPU GEMM is
        ``[tokens, K] x [K, H]`` with ``K`` from the model's ``H``, the sub-layer and ``tp``.
        ``tokens`` must be a multiple of ``gpus * tile_m`` (chunks of whole tile rows), at
        most :meth:`max_tokens` (the tracked units must fit the tracker and the descriptor
        table: 4096 for the default 4 GPUs of Mega-GPT-2 OP, reduce-scatter).
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
    memory : str
        One of :data:`MEMORIES`: the DRAM's timing (the data is the same). ``"fixed"``
        serves one request per cycle in order after ``dram_latency`` cycles; ``"hbm"`` is
        :data:`sim_models.hbm_dram.COSIM_HBM`, 4 HBM2 pseudo-channels (64 B per cycle at the
        pins) clocked with the RTL, and ignores ``dram_latency``.
    threshold_error : int
        Added to every tracker threshold (a test of the checks: -1 triggers one write early).
    params : EngineParams
        The engines' parameters: the paper's, except the T3-MCA derivation (saturation at
        the DRAM's 64-request bandwidth-delay product, a 4096-cycle window) and
        64 DMA reads in flight (``max_outstanding``: one read per cycle over the DRAM's
        latency; 8 would cap each DMA at 8 bytes per cycle). ``docs/cosim.md`` explains
        it.
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
    memory:               str = "fixed"
    threshold_error:      int = 0
    params:               EngineParams = field(default_factory=lambda: EngineParams(
                              mca_saturation=64, mca_window_log2=12, max_outstanding=64))

    @staticmethod
    def max_gpus(params):
        """The largest ring: device numbers of ``params.device_width`` bits, at most 64."""
        return min(1 << params.device_width, 64)

    def __post_init__(self):
        _int("gpus", self.gpus, 2, self.max_gpus(self.params))
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, not {self.policy!r}")
        if self.collective not in COLLECTIVES:
            raise ValueError(f"collective must be one of {COLLECTIVES}, not {self.collective!r}")
        if self.memory not in MEMORIES:
            raise ValueError(f"memory must be one of {MEMORIES}, not {self.memory!r}")
        for name in ("cus", "flops_per_cu_cycle", "tile_m", "tile_n", "l2_bytes",
                     "dram_latency", "link_latency", "tx_buffer_bytes"):
            _int(name, getattr(self, name), 1)
        _int("net_jitter", self.net_jitter, 0)
        _int("seed", self.seed, 0)
        _int("threshold_error", self.threshold_error, -1, 1)
        link_rate(self.link_bytes_per_cycle)     # a ratio of integers, > 0
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
        top = self.max_tokens()
        if top < step:
            raise ValueError(
                f"{self.gpus} GPUs x {self.shape.n} output columns need more than "
                f"{self._id_budget()} tracker entries and DMA descriptors even at the fewest "
                f"tokens ({step}): use a narrower --hidden or fewer GPUs")
        if self.tokens % step or self.tokens > top:
            raise ValueError(f"tokens must be a multiple of gpus * tile_m = {step} (chunks of "
                             f"whole tile rows) in [{step}, {top}] (the engines' "
                             f"{self._id_budget()} tracker entries and descriptors), "
                             f"not {self.tokens!r}")

    def _id_budget(self):
        return min(self.params.tracker_entries, self.params.dma_descriptors)

    def max_tokens(self):
        """The most tokens the engines can track for this ring and layer: every tracked unit
        of every chunk (:class:`~sim_models.collective.Plan`: runs of at most ``group``
        tiles of one tile row, ``2 x`` a unit's bursts within the tracker's largest
        threshold) needs its own tracker entry and DMA descriptor, once for the
        reduce-scatter and once more for the all-gather. 0 when one tile row is too many."""
        p = self.params
        n_cols = -(-self.shape.n // self.tile_n)
        tile_bursts = self.tile_m * self.tile_n * _DTYPE.itemsize // p.burst_bytes
        group = min(n_cols, p.max_threshold // (2 * tile_bursts))
        if group < 1:
            return 0
        ids_per_tile_row = (2 if self.collective == "allreduce" else 1) * self.gpus * \
            -(-n_cols // group)
        return self._id_budget() // ids_per_tile_row * self.gpus * self.tile_m

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

    @functools.cached_property
    def gpu(self):
        """The GPU's :class:`~sim_models.gpu.GpuConfig` (made once: the replay asks for it
        per tile)."""
        return GpuConfig(cus=self.cus, l2_bytes=self.l2_bytes,
                         flops_per_cu_cycle=self.flops_per_cu_cycle, tile_m=self.tile_m,
                         tile_n=self.tile_n, elem_bytes=_DTYPE.itemsize)

    def system_config(self):
        """The performance model's :class:`~sim_models.perf.SystemConfig` of this hardware,
        under the same :class:`~t3hw.spec.params.EngineParams` (burst, tracker, T3-MCA).
        Its step is 8 cycles per 512 tokens (at least 8), so that a run of the paper's 8192
        tokens takes the model as many steps as one of 512: on T-NLG TP 16 FC-2 and
        Mega-GPT-2 TP 8 OP at 512 tokens, steps of 8, 32 and 128 cycles give cycles within
        0.5% of each other under T3 and T3-MCA (``docs/paper.md``, "On the RTL")."""
        from .perf import SystemConfig
        g, p = self.gpu, self.params
        hbm = {}
        if self.memory == "hbm":         # all of COSIM_HBM, its clock the RTL's cycle
            hbm = dict(memory="hbm", hbm=COSIM_HBM, hbm_sample_pcs=COSIM_HBM.n_pcs,
                       load_slots=max(1, (1 << p.load_tag_width) // self.cus),
                       fabric_cycles=0, lookahead_steps=math.inf, hbm_port="single",
                       load_spacing=LOAD_SPACING)
        return SystemConfig(
            gpu=g, dram_gbs=p.burst_bytes * g.freq_ghz, dram_latency_cycles=self.dram_latency,
            link_gbs=self.link_bytes_per_cycle * g.freq_ghz,
            link_latency_ns=self.link_latency / g.freq_ghz, packet_bytes=p.burst_bytes,
            step_cycles=8 * max(1, self.tokens // 512), tx_buffer_bytes=self.tx_buffer_bytes,
            params=p, **hbm)

    def to_dict(self):
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "params"}
        d["params"] = self.params.to_dict()
        return d

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        params = EngineParams(**d.pop("params"))
        return cls(params=params, **d)


@dataclass
class _Port:
    """What the env drives on one engine this cycle."""
    store: tuple = None
    load: tuple = None
    dram_response: dict = None
    net_rx: tuple = None


def gpu_cores(cfg: CosimConfig, plan: Plan, i):
    """GPU ``i``'s compute units in the co-simulation: its GEMM's tiles, their loads and
    their stores (:class:`~sim_models.gpu.GpuCores`)."""
    p = cfg.params
    return GpuCores(plan.producers[i], functools.partial(plan.tile_stores, i), index=i,
                    tag_width=p.load_tag_width, burst_bytes=p.burst_bytes, load_base=B_BASE)


def gpu_dram(cfg: CosimConfig, plan: Plan, rng):
    """One GPU's DRAM in the co-simulation: :class:`~sim_models.hbm_dram.HbmDram` on
    ``memory="hbm"``, else the fixed-latency :class:`~sim_models.dram.NmcDram` (``rng``
    draws its refusals when ``dram_stall`` is set)."""
    size = plan.r_base - plan.o_base + plan.out_bytes
    if cfg.memory == "hbm":
        return HbmDram(rng, base=plan.o_base, result_base=plan.r_base, size_bytes=size,
                       stall=cfg.dram_stall, dtype=_DTYPE)
    return NmcDram(rng, base=plan.o_base, result_base=plan.r_base, size_bytes=size,
                   latency=cfg.dram_latency, stall=cfg.dram_stall, dtype=_DTYPE)


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
        self.gpus = [gpu_cores(cfg, plan, i) for i in range(n)]
        self.drams = [gpu_dram(cfg, plan, rng) for _ in range(n)]
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
        self.r_expected = plan.r_expected      # bytes written into R at every GPU
        self.last_activity = 0

    # -- per engine, per cycle -------------------------------------------------------------
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
            (self.remote_data if self.plan.is_remote(i, addr) else self.local_data)[i].append(data)
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
            if req["op"] != _READ:
                src = self.local_data[i] if req["source"] == _COMPUTE \
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
            from_store = (pkt["kind"] == _UPDATE
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
        return all(d.r_writes >= self.r_expected and not d.pending() and not d.responses
                   for d in self.drams) and all(g.done for g in self.gpus) \
            and self.ring.empty() and all(p.net_rx is None for p in self.ports)

    def finish_cycle(self):
        """The cycle the last write of the collective was served (the end of the run)."""
        return max(d.last_write for d in self.drams)

    def numerics(self):
        """``(ok, max_abs_err)``: :func:`check_numerics` of the DRAMs."""
        return check_numerics(self.plan, self.drams)

    def traffic(self):
        return {k: sum(d.traffic[k] for d in self.drams) for k in self.drams[0].traffic}


def check_numerics(plan, drams, symmetric=False):
    """``(ok, max_abs_err)``: every GPU's final chunk (all of ``R`` for the all-reduce) in its
    DRAM (:meth:`NmcDram.view`) against numpy's float64 sum of the partials. ``symmetric``:
    ``drams`` is GPU 0's of a run of GPU 0 of a symmetric ring, whose chunk 0 must hold
    :meth:`~sim_models.collective.Plan.expected_symmetric`, and so must every chunk of its
    ``R`` after the all-reduce (each is a rotation of that one)."""
    if symmetric:
        r = drams[0].view(plan.r_base, plan.out_bytes).reshape(plan.n, plan.chunk_rows,
                                                               plan.shape.n)
        r = r if plan.gather else r[:1]
        err = np.abs(r.astype(np.float64) - plan.expected_symmetric())
        worst = float(err.max())
        return worst == 0.0, worst
    exact = plan.expected()
    worst = 0.0
    for i, d in enumerate(drams):
        r = d.view(plan.r_base, plan.out_bytes).reshape(plan.shape.m, plan.shape.n)
        rows = slice(None) if plan.gather else \
            slice(i * plan.chunk_rows, (i + 1) * plan.chunk_rows)
        err = np.abs(r[rows].astype(np.float64) - exact[rows])
        worst = max(worst, float(err.max()))
    return worst == 0.0, worst


class _Work:
    """The workload of ``cfg`` on a ring of ``cfg.gpus`` GPUs, as the performance model
    takes it."""

    def __init__(self, cfg):
        self.tp, self.shape = cfg.gpus, cfg.shape


def model_sequential(cfg: CosimConfig):
    """The performance model's Sequential run of ``cfg``'s scenario (GEMM, then the ring's
    reduce-scatter and all-gather, each alone), the same under every policy:
    ``{"cycles": per phase, "traffic": DRAM bytes per class}``, plain numbers (a caller may
    keep it, as ``t3hw paper --rtl`` does between the policies of a sub-layer)."""
    from .perf import simulate_sequential
    seq = simulate_sequential(_Work(cfg), cfg.system_config())
    return {"cycles": dict(seq.cycles), "traffic": dict(seq.traffic)}


def model_cycles(cfg: CosimConfig, sequential=None):
    """The performance model's cycles for the same scenario on the same scaled hardware:
    ``{"t3": fused GEMM + RS (+ the all-gather after it), "sequential": GEMM, RS (+ AG)}``,
    the phases, and the DRAM bytes of one GPU in both (``t3_dram_bytes``,
    ``sequential_dram_bytes``).

    The performance model runs the all-gather as a separate ring phase after the fused
    reduce-scatter, as the paper does; the co-simulation fuses it
    (:mod:`sim_models.collective`). ``sequential``: :func:`model_sequential`'s result for
    ``cfg`` if the caller has it (else it is run here).
    """
    from .perf import simulate_t3
    seq = sequential if sequential is not None else model_sequential(cfg)
    seq_cycles, seq_traffic = seq["cycles"], seq["traffic"]
    ag = {c: (v if c.startswith("ag") else 0) for c, v in seq_traffic.items()}
    t3 = simulate_t3(_Work(cfg), cfg.system_config(), policy=cfg.policy,
                     ag=(seq_cycles["ag"], ag))
    rs = cfg.collective == "rs"
    keep = (lambda c: not c.startswith("ag")) if rs else (lambda c: True)
    return {"t3": t3.cycles["gemm_rs"] if rs else t3.cycles["total"],
            "sequential": seq_cycles["gemm"] + seq_cycles["rs"] if rs else seq_cycles["total"],
            "phases": {"t3": t3.cycles, "sequential": seq_cycles},
            "t3_dram_bytes": sum(v for c, v in t3.traffic.items() if keep(c)),
            "sequential_dram_bytes": sum(v for c, v in seq_traffic.items() if keep(c)),
            "mca_threshold": t3.mca_threshold}
