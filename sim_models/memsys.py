# SPDX-License-Identifier: Apache-2.0
"""The performance model's DRAM on the HBM2 timing model: sampled pseudo-channels, a
T3 arbiter in front of each, bounded outstanding GPU loads.

:class:`HbmMemory` has the timing face of :class:`~sim_models.dram.DramModel` (``request``,
``step``, ``traffic``, ``saturation``, ``bytes_per_cycle``), so :mod:`sim_models.perf` runs
on either (``SystemConfig(memory="hbm")``). Underneath it is
:class:`~sim_models.hbm.HbmModel`:

* **Sampling.** Addresses interleave every 256-B granule over the 64 pseudo-channels (PCs),
  so every stream loads them alike. Only the granules that map to ``sample_pcs`` of them
  (channels ``0 .. sample_pcs - 1``, pseudo-channel 0) are simulated, each standing for
  ``64 / sample_pcs`` granules of the whole GPU. The simulated PCs see exactly their share
  of every stream, with its real addresses (row locality and bank conflicts included).
* **Arbitration per PC.** Each sampled PC has its own copy of the step's
  :class:`~sim_models.engine_model.Arbiter` (policy, starvation limit, and the threshold
  the shared arbiter derives or was given), deciding one request per cycle between the
  compute stream and the communication stream waiting for that PC. T3-MCA compares its
  threshold with the PC's real queue (``HbmModel`` accesses waiting), scaled to the whole
  memory system (x 64).
* **Latency at the GPU.** A GEMM load holds one of its channel's outstanding-load slots
  (``mshrs`` 256-B requests for the whole GPU, split evenly over the 64 PCs: the L2 slice
  in front of each channel tracks its own misses) from its issue to the return of its
  data, the fabric's cycles after the DRAM's completion (the interconnect and L2 on the
  way there and back: what ``latency_cycles`` leaves after an unloaded 256-B DRAM read).
  Stores, updates and the DMA's requests are at the memory controller: a write is served
  (and seen by the tracker) when the arbiter grants it into the DRAM queue, as in the RTL;
  a DMA read when its data is back.
* **Addresses.** GEMM loads: one sequential stream per compute unit (the panels its tile
  reads), a new pseudo-random base every ``panel_bytes``. Output stores and updates: the
  tile's output rows (``region``: 256-B rows ``pitch`` apart). DMA reads and received
  updates: consecutive 4-KB packets in regions of their own.

Each sampled granule served serves its share of its ``request`` call's bytes (a call with
no sampled granule is served at once), in whatever order they finish: the performance
model's first-in first-out accounting takes the sums. (Waiting for a call's last granule
instead would make a call's service the slowest of its channels', a delay that grows with
the number of channels simulated.) Within a PC's arbiter slot, a stream offers its oldest
request the DRAM can take now, so a write waiting for room in the write queue does not
hold reads back either.
"""

import heapq
import random
from collections import deque

from .dram import TRAFFIC_CLASSES
from .engine_model import Arbiter
from .hbm import HbmModel, HbmParams
from t3hw.spec.layouts import MemOp


__all__ = ["HbmMemory"]

_GRANULE_BITS = 8                    # 256-B granules, HbmParams' default interleaving
_TICK = 16                           # cycles between arbitration rounds
_READ = MemOp.READ.value


class HbmMemory:
    """One GPU's HBM2 memory for the performance model (module docstring).

    Parameters
    ----------
    hbm : HbmParams
        The memory system (default: the paper's 1 TB/s); ``interleave_bytes`` must be 256.
    sample_pcs : int
        Pseudo-channels simulated, 1 .. ``hbm.channels``.
    burst_bytes : int
        Request size of the GPU and the DMA (256).
    latency_cycles : int
        Unloaded load latency seen by a compute unit (the fabric adds what the DRAM's own
        unloaded latency leaves).
    mshrs : int
        Outstanding 256-B loads of the whole GPU (``mshrs / 64`` per pseudo-channel).
    cus : int
        Compute units (one load stream each).
    panel_bytes : int
        Bytes a load stream reads before jumping to a new base.
    seed : int
        Of the pseudo-random panel bases.
    """

    def __init__(self, *, hbm=None, sample_pcs=2, burst_bytes=256, latency_cycles=350,
                 mshrs=4096, cus=80, panel_bytes=1 << 18, seed=1):
        self.p = p = hbm if hbm is not None else HbmParams()
        if p.interleave_bytes != 1 << _GRANULE_BITS or p.mapping[:2] != ("ch", "pc"):
            raise ValueError(f"hbm must interleave 256-B granules over channels first, "
                             f"not {p.interleave_bytes} B / {p.mapping}")
        if not 1 <= sample_pcs <= p.channels:
            raise ValueError(f"sample_pcs must be in [1, {p.channels}], not {sample_pcs!r}")
        if burst_bytes != 1 << _GRANULE_BITS:
            raise ValueError(f"burst_bytes must be 256 for the HBM memory, not {burst_bytes!r}")
        self.hbm = HbmModel(p)
        self.k = sample_pcs
        self.scale = p.n_pcs / sample_pcs
        self.burst_bytes = burst_bytes
        self.freq_ghz = p.clock_ghz
        self.latency_cycles = latency_cycles
        bursts = (1 << _GRANULE_BITS) // p.burst_bytes       # a 256-B read of a closed bank
        dram = p.trcd_rd + (bursts - 1) * p.lanes * p.slot + p.tcl + p.tbl
        unloaded = -(-dram * p.ratio.denominator // p.ratio.numerator)
        self.fabric = max(0, latency_cycles - unloaded)
        self.mshrs = max(1, round(mshrs / p.n_pcs))      # per pseudo-channel
        self.traffic = {cls: 0 for cls in TRAFFIC_CLASSES}
        self.busy_cycles = 0.0
        self.waiting = 0.0
        self.now = 0
        self.rng = random.Random(seed)
        self.panel_bytes = panel_bytes
        self.cursors = [[self._base(), 0] for _ in range(cus)]
        self.cu_next = 0
        self.regions = {"comm_read": 1 << 33, "comm_write": 3 << 32, "compute_write": 1 << 34}
        # an entry per request call: [bytes, sampled granules, stream]; per PC and
        # (stream, is read): (seq, op, addr, entry) waiting for the arbiter
        lanes = [(s, r) for s in ("compute", "comm") for r in (True, False)]
        self.open = {"compute": 0.0, "comm": 0.0}   # bytes requested, not yet served
        self.pending = [{lane: deque() for lane in lanes} for _ in range(sample_pcs)]
        self.arbs = None
        self.loads = [0] * sample_pcs        # GEMM loads outstanding per sampled PC
        self.queued = 0                      # sampled requests waiting for an arbiter
        self.returns = []                    # (cycle, seq, entry): loads on their way back
        self.seq = 0
        self.inflight = {}                   # tag -> entry of a read in the DRAM
        self.served = {"compute": 0.0, "comm": 0.0}

    @property
    def bytes_per_cycle(self):
        """Peak bytes per GPU cycle of the whole memory."""
        return self.p.peak_bytes_per_cycle

    @property
    def read_delay(self):
        """Cycles from a read being served to its data being usable: 0 (served means the
        data is back)."""
        return 0

    @property
    def saturation(self):
        """Occupancy (requests, whole memory) at which it saturates: the bandwidth-delay
        product at ``latency_cycles``."""
        return self.bytes_per_cycle * self.latency_cycles / self.burst_bytes

    def _base(self):
        """A pseudo-random granule in the first 4 GB (the GEMM's operands)."""
        return self.rng.randrange(1 << (32 - _GRANULE_BITS)) << _GRANULE_BITS

    # -- requests ------------------------------------------------------------------------
    def _granules(self, addr, nbytes):
        """Addresses of the sampled 256-B granules of ``[addr, addr + nbytes)``."""
        g0, g1 = addr >> _GRANULE_BITS, -(-(addr + nbytes) >> _GRANULE_BITS)
        r0 = g0 & 63
        if r0 >= self.k and r0 + g1 - g0 <= 64:
            return []                        # the run lies between two sampled channels
        out = []
        g = g0 - (g0 & 63)
        while g < g1:
            for c in range(self.k):
                if g0 <= g + c < g1:
                    out.append((g + c) << _GRANULE_BITS)
            g += 64
        return out

    def request(self, stream, nbytes, cls, *, op=None, region=None):
        """``nbytes`` more of ``stream`` (``"compute"`` or ``"comm"``), counted in ``cls``;
        ``op`` a :class:`MemOp` (default: read for ``*_reads``, store otherwise),
        ``region`` ``(addr, rows, row_bytes, pitch)`` where the bytes lie, if known."""
        if stream not in self.served:
            raise ValueError(f"stream must be 'compute' or 'comm', not {stream!r}")
        if nbytes <= 0:
            return
        self.traffic[cls] += int(nbytes)
        span = int(-(-nbytes // 1))          # bytes to place (the fluid GPU asks fractions)
        op = MemOp(op if op is not None else
                   (MemOp.READ if cls.endswith("reads") else MemOp.STORE)).value
        addrs = []
        if region is not None:
            addr, rows, row_bytes, pitch = region
            for r in range(rows):
                addrs += self._granules(self.regions["compute_write"] + addr + r * pitch,
                                        row_bytes)
        elif stream == "compute" and op == MemOp.READ.value:
            left = span                      # spread over the compute units' streams
            share = max(self.burst_bytes, -(-span // len(self.cursors) // 256) * 256)
            while left > 0:
                cur = self.cursors[self.cu_next]
                self.cu_next = (self.cu_next + 1) % len(self.cursors)
                take = min(share, left)
                addrs += self._granules(cur[0] + cur[1], take)
                cur[1] += take
                if cur[1] >= self.panel_bytes:
                    cur[0], cur[1] = self._base(), 0
                left -= take
        else:
            key = f"{stream}_{'read' if op == MemOp.READ.value else 'write'}"
            addrs = self._granules(self.regions[key], span)
            self.regions[key] += -(-span // 256) * 256
        lane = (stream, op == _READ)
        entry = [nbytes, len(addrs), stream]
        if not addrs:                        # all of it on channels not simulated
            self.served[stream] += nbytes
        else:
            self.open[stream] += nbytes
        self.seq += 1
        for a in addrs:
            self.pending[(a >> _GRANULE_BITS) & 63][lane].append((self.seq, op, a, entry))
        self.queued += len(addrs)

    # -- time ----------------------------------------------------------------------------
    def _arbiters(self, arb):
        if self.arbs is None:
            self.arbs = [Arbiter(policy=arb.policy, threshold=arb.threshold,
                                 starvation_limit=arb.starvation_limit, window=arb.window,
                                 saturation=arb.saturation) for _ in range(self.k)]
        for a in self.arbs:                  # the shared arbiter derives the threshold
            a.threshold = arb.threshold
        return self.arbs

    def _finish(self, entry):
        """One sampled granule of ``entry`` is served: so is its share of the bytes."""
        share = entry[0] / entry[1]
        self.served[entry[2]] += share
        self.open[entry[2]] -= share

    def _ready(self, pend, stream, waiting, i):
        """The queue of the oldest request of ``stream`` the PC can take now (a read needs
        room in the read queue and, for the GEMM, a free load slot; a write room in the
        write queue), or None; ``waiting`` is the PC's ``(reads, writes)``."""
        p, best = self.p, None
        rq, wq = pend[(stream, True)], pend[(stream, False)]
        if rq and waiting[0] < p.read_queue and (stream == "comm" or
                                                 self.loads[i] < self.mshrs):
            best = rq
        if wq and waiting[1] < p.write_queue and (best is None or wq[0][0] < best[0][0]):
            best = wq
        return best

    def _grant_round(self, t, arbs):
        if not self.queued:
            return
        hbm, scale = self.hbm, self.scale
        for i in range(self.k):
            pend, arb = self.pending[i], arbs[i]
            pc = i * self.p.pseudo_channels              # channel i, pseudo-channel 0
            for _ in range(_TICK):
                waiting = hbm.waiting(pc)
                cq = self._ready(pend, "compute", waiting, i)
                mq = self._ready(pend, "comm", waiting, i)
                if cq is None and mq is None:
                    break
                choice = arb.grant(compute_ready=cq is not None, comm_ready=mq is not None,
                                   occupancy=(waiting[0] + waiting[1]) * scale)
                if choice is None:
                    break
                q = cq if choice == "compute" else mq
                _, op, addr, entry = q.popleft()
                self.queued -= 1
                self.seq += 1
                hbm.submit(t, op, addr, 256, source=choice, tag=self.seq)
                if op == _READ:
                    self.inflight[self.seq] = (entry, i)
                    if choice == "compute":
                        self.loads[i] += 1
                else:
                    self._finish(entry)

    def step(self, cycles, arbiter):
        """Run ``cycles`` cycles; return ``(compute_bytes, comm_bytes)`` served."""
        arbs = self._arbiters(arbiter)
        end = self.now + cycles
        t = self.now
        while t < end:
            self._grant_round(t, arbs)
            t = min(t + _TICK, end)
            for c in self.hbm.advance(t - 1):
                if c.op != _READ:
                    continue                 # writes were served when granted
                entry, i = self.inflight.pop(c.tag)
                if c.source == "compute":
                    self.seq += 1
                    heapq.heappush(self.returns, (c.done + self.fabric, self.seq, entry, i))
                else:
                    self._finish(entry)
            while self.returns and self.returns[0][0] < t:
                _, _, entry, i = heapq.heappop(self.returns)
                self.loads[i] -= 1
                self._finish(entry)
        self.now = end
        gc, gm = self.served["compute"], self.served["comm"]
        self.served = {"compute": 0.0, "comm": 0.0}
        self.busy_cycles += (gc + gm) / self.bytes_per_cycle
        self.waiting = self.open["compute"]
        return gc, gm
