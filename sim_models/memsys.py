# SPDX-License-Identifier: Apache-2.0
"""The performance model's DRAM on the HBM2 timing model: sampled pseudo-channels, a
T3 arbiter in front of each, bounded outstanding GPU loads.

:class:`HbmMemory` has the timing face of :class:`~sim_models.dram.DramModel` (``request``,
``step``, ``traffic``, ``saturation``, ``bytes_per_cycle``), so :mod:`sim_models.perf` runs
on either (``SystemConfig(memory="hbm")``). Underneath it is
:class:`~sim_models.hbm.HbmModel`:

* **Sampling.** Addresses interleave every granule (``interleave_bytes``: 256 B on the
  paper's memory, 64 B on the co-simulation's) over the pseudo-channels (PCs: 64 on the
  paper's memory), channels first, so every stream loads them alike. Only the granules
  whose index modulo the PC count is below ``sample_pcs`` are simulated (channels first,
  then pseudo-channels: ``sample_pcs`` up to the channel count takes pseudo-channel 0 of
  channels ``0 .. sample_pcs - 1``), each standing for ``n_pcs / sample_pcs`` granules of
  the whole GPU. The simulated PCs see exactly their share
  of every stream, with its real addresses (row locality and bank conflicts included).
* **Arbitration per PC.** Each sampled PC has its own copy of the step's
  :class:`~sim_models.engine_model.Arbiter` (policy, starvation limit, and the threshold
  the shared arbiter derives or was given), deciding one request per cycle between the
  compute stream and the communication stream waiting for that PC. T3-MCA compares its
  threshold with the PC's real queue (``HbmModel`` accesses waiting), scaled to the whole
  memory system: every PC sees its share of every stream alike, so the whole memory's queue
  is ``n_pcs`` times this one's. (Until 2026-11-27 it was scaled by ``n_pcs /
  sample_pcs``, the factor of a sum over the sampled PCs, which made the gate open at
  ``sample_pcs`` times the threshold.)
* **One port instead** (``port="single"``, the co-simulation's memory controller: one
  engine in front of the whole memory). One arbiter, the step's own, grants at most one
  request per cycle for the whole memory, into a one-request input register; a request its
  pseudo-channel's queue refuses stays there, and nothing is granted until the model takes
  it (head-of-line blocking, as at the engine's ``dram`` port). T3-MCA compares its
  threshold with the whole memory's waiting accesses, the RTL's ``occupancy`` (which counts
  the input register too, empty whenever a request is granted). Inside each stream a
  pointer takes its reads and its writes in turn while both wait (the arbiter's round robin
  between loads and stores, DMA reads and received updates), each in the order asked. Reads
  are answered in request order (the co-simulation's DRAM has a reorder buffer). The GEMM's
  loads are bounded by ``mshrs`` for the whole GPU (its load tags) instead of per channel,
  and, with ``load_spacing``, issued as the co-simulation's GPU issues them: a queue per
  compute unit from its tile's first load, the units in turn (:meth:`HbmMemory._cu_loads`).
  Every pseudo-channel is simulated.
* **Latency at the GPU.** A GEMM load holds one of its channel's outstanding-load slots
  (``mshrs`` granule-sized requests for the whole GPU, split evenly over the PCs: the L2
  slice in front of each channel tracks its own misses) from its issue to the return of its
  data, the fabric's cycles after the DRAM's completion (the interconnect and L2 on the
  way there and back: by default what ``latency_cycles`` leaves after an unloaded DRAM read
  of one granule, or ``fabric_cycles`` when given).
  Stores, updates and the DMA's requests are at the memory controller: a write is served
  (and seen by the tracker) when the arbiter grants it into the DRAM queue, as in the RTL;
  a DMA read when its data is back.
* **Addresses.** GEMM loads: one sequential stream per compute unit (the panels its tile
  reads), a new pseudo-random base every ``panel_bytes``. Output stores and updates: the
  tile's output rows (``region``: 256-B rows ``pitch`` apart). DMA reads and received
  updates: the rows of their unit's output when given (``region``, as
  :mod:`sim_models.perf` does), else consecutive packets in regions of their own.

Each sampled granule served serves its share of its ``request`` call's bytes (a call with
no sampled granule is served at once), in whatever order they finish: the performance
model's first-in first-out accounting takes the sums. (Waiting for a call's last granule
instead would make a call's service the slowest of its channels', a delay that grows with
the number of channels simulated.) Within a PC's arbiter slot, a stream offers its oldest
request the DRAM can take now, so a write waiting for room in the write queue does not
hold reads back either.
"""

import dataclasses
import heapq
import itertools
import random
from collections import deque

from .dram import TRAFFIC_CLASSES
from .hbm import HbmModel, HbmParams
from t3hw.spec.layouts import MemOp


__all__ = ["HbmMemory", "check_optional_int"]

_TICK = 16                           # cycles between arbitration rounds
_READ = MemOp.READ.value


def check_optional_int(name, value, low):
    """``value`` if it is None or an integer of at least ``low``; else a ValueError that
    names the value and the range."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or
                              value < low):
        raise ValueError(f"{name} must be None or an integer in [{low}, inf), not {value!r}")
    return value


class HbmMemory:
    """One GPU's HBM2 memory for the performance model (module docstring).

    Parameters
    ----------
    hbm : HbmParams
        The memory system (default: the paper's 1 TB/s); its mapping must start with the
        channel and the pseudo-channel.
    sample_pcs : int
        Pseudo-channels simulated, 1 .. ``hbm.n_pcs``.
    burst_bytes : int
        Request size of the GPU and the DMA: ``hbm.interleave_bytes`` (256 on the paper's
        memory, 64 on the co-simulation's), one granule.
    latency_cycles : int
        Unloaded load latency seen by a compute unit; sets :attr:`saturation`, and the
        fabric's cycles when ``fabric_cycles`` is None (what the DRAM's own unloaded latency
        leaves of it).
    fabric_cycles : int or None
        Cycles a load's data takes from the DRAM to the compute unit (None: derived above).
    port : str
        ``"channel"`` (an arbiter per pseudo-channel, the paper's GPU) or ``"single"`` (one
        arbiter and one request per cycle for the whole memory, the co-simulation's engine;
        ``sample_pcs`` must then be ``hbm.n_pcs``).
    mshrs : int
        Outstanding loads of the whole GPU (``mshrs / n_pcs`` per pseudo-channel).
    cus : int
        Compute units (one load stream each).
    panel_bytes : int
        Bytes a load stream reads before jumping to a new base.
    load_spacing : int or None
        None: each load stream starts at a pseudo-random base and jumps every
        ``panel_bytes``. An integer: compute unit ``k``'s stream starts at ``k *
        load_spacing`` and runs on sequentially, as the co-simulation's GPU's do (a tile's
        loads start at ``tile * 4096``, :func:`~sim_models.gpu.first_load`, and the running
        tiles are consecutive).
    seed : int
        Of the pseudo-random panel bases.
    """

    def __init__(self, *, hbm=None, sample_pcs=2, burst_bytes=256, latency_cycles=350,
                 fabric_cycles=None, mshrs=4096, cus=80, panel_bytes=1 << 18, seed=1,
                 port="channel", load_spacing=None):
        self.p = p = hbm if hbm is not None else HbmParams()
        if p.mapping[:2] != ("ch", "pc"):
            raise ValueError(f"hbm must interleave its granules over channels first, then "
                             f"pseudo-channels, not {p.mapping}")
        if not 1 <= sample_pcs <= p.n_pcs:
            raise ValueError(f"sample_pcs must be in [1, {p.n_pcs}], not {sample_pcs!r}")
        if burst_bytes != p.interleave_bytes:
            raise ValueError(f"burst_bytes must be hbm.interleave_bytes="
                             f"{p.interleave_bytes} for the HBM memory, not {burst_bytes!r}")
        check_optional_int("fabric_cycles", fabric_cycles, 0)
        check_optional_int("load_spacing", load_spacing, 1)
        if port not in ("channel", "single"):
            raise ValueError(f"port must be 'channel' or 'single', not {port!r}")
        if port == "single" and sample_pcs != p.n_pcs:
            raise ValueError(f"sample_pcs must be hbm.n_pcs={p.n_pcs} with port='single' "
                             f"(one port sees every channel), not {sample_pcs!r}")
        self.port = port
        self.slot = None                     # single port: (stream, op, addr, entry)
        self.early = []                      # completions collected within a tick
        self.rob = deque()                   # single port: reads in request order
        self.last_read = {"compute": False, "comm": False}   # each class's pointer
        self.rob_done = {}                   # their completions, until older ones are in
        self.hbm = HbmModel(p)
        self.k = sample_pcs
        self.n = p.n_pcs
        self.gbits = (p.interleave_bytes - 1).bit_length()
        self.g = 1 << self.gbits
        # the PC of each sampled residue (granule index modulo n_pcs): channel, then PC
        self.pc_of = [(r % p.channels) * p.pseudo_channels + r // p.channels
                      for r in range(sample_pcs)]
        self.scale = p.n_pcs / sample_pcs
        self.burst_bytes = burst_bytes
        self.freq_ghz = p.clock_ghz
        self.latency_cycles = latency_cycles
        bursts = self.g // p.burst_bytes              # a granule's read of a closed bank
        dram = p.trcd_rd + (bursts - 1) * p.lanes * p.slot + p.tcl + p.tbl
        unloaded = -(-dram * p.ratio.denominator // p.ratio.numerator)
        self.fabric = max(0, latency_cycles - unloaded) if fabric_cycles is None \
            else fabric_cycles
        self.mshrs = max(1, round(mshrs / p.n_pcs))      # per pseudo-channel
        self.gpu_mshrs = mshrs                           # single port: the whole GPU's
        self.traffic = {cls: 0 for cls in TRAFFIC_CLASSES}
        self.busy_cycles = 0.0
        # per class: (cycles, sampled granules) from a read's ``request`` call to its data
        # out of the DRAM (the arbiter's queue, the DRAM's queue and its service; not the
        # fabric's way back): :meth:`read_latency`
        self.read_wait = {"compute": [0, 0], "comm": [0, 0]}
        self.waiting = 0.0
        self.now = 0
        self.rng = random.Random(seed)
        self.spacing, self.cu_lanes, self.cu_rr, self.cu_pick = load_spacing, None, 0, 0
        if load_spacing is None:
            self.panel_bytes = panel_bytes
            self.cursors = [[self._base(), 0] for _ in range(cus)]
        else:
            self.panel_bytes = float("inf")
            self.cursors = [[k * load_spacing, 0, None] for k in range(cus)]
            if port == "single":                # per unit, taken in turn (_cu_loads)
                self.cu_lanes = [deque() for _ in range(cus)]
        self.cu_next = 0
        self.regions = {"comm_read": 1 << 33, "comm_write": 3 << 32, "compute_write": 1 << 34}
        # an entry per request call: [bytes, sampled granules, stream]; per PC and
        # (stream, is read): (seq, op, addr, entry) waiting for the arbiter
        lanes = [(s, r) for s in ("compute", "comm") for r in (True, False)]
        self.open = {"compute": 0.0, "comm": 0.0}   # bytes requested, not yet served
        self.pending = [{lane: deque() for lane in lanes} for _ in range(sample_pcs)]
        self.lanes = {lane: deque() for lane in lanes}      # single port
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
        return self.rng.randrange(1 << (32 - self.gbits)) << self.gbits

    # -- requests ------------------------------------------------------------------------
    def _granules(self, addr, nbytes):
        """Addresses of the sampled granules of ``[addr, addr + nbytes)``."""
        bits, n = self.gbits, self.n
        g0, g1 = addr >> bits, -(-(addr + nbytes) >> bits)
        r0 = g0 % n
        if r0 >= self.k and r0 + g1 - g0 <= n:
            return []                        # the run lies between two sampled channels
        out = []
        g = g0 - r0
        while g < g1:
            for c in range(self.k):
                if g0 <= g + c < g1:
                    out.append((g + c) << bits)
            g += n
        return out

    def request(self, stream, nbytes, cls, *, op=None, region=None, cus=None):
        """``nbytes`` more of ``stream`` (``"compute"`` or ``"comm"``), counted in ``cls``;
        ``op`` a :class:`MemOp` (default: read for ``*_reads``, store otherwise),
        ``region`` ``(addr, rows, row_bytes, pitch)`` where the bytes lie, if known; ``cus``
        for the GEMM's loads, ``(tile, bytes)`` of each compute unit (:meth:`_cu_loads`)."""
        if cus is not None and self.cu_lanes is not None and stream == "compute":
            return self._cu_loads(cls, cus)
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
            g = self.g
            share = max(self.burst_bytes, -(-span // len(self.cursors) // g) * g)
            runs = []
            while left > 0:
                cur = self.cursors[self.cu_next]
                self.cu_next = (self.cu_next + 1) % len(self.cursors)
                take = min(share, left)
                runs.append(self._granules(cur[0] + cur[1], take))
                cur[1] += take
                if cur[1] >= self.panel_bytes:
                    cur[0], cur[1] = self._base(), 0
                left -= take
            if self.port == "single":        # the GPU's loads: a granule per CU in turn
                addrs = [a for tier in itertools.zip_longest(*runs) for a in tier
                         if a is not None]
            else:
                addrs = [a for run in runs for a in run]
        else:
            key = f"{stream}_{'read' if op == MemOp.READ.value else 'write'}"
            addrs = self._granules(self.regions[key], span)
            self.regions[key] += -(-span // self.g) * self.g
        lane = (stream, op == _READ)
        entry = [nbytes, len(addrs), stream, self.now]
        if not addrs:                        # all of it on channels not simulated
            self.served[stream] += nbytes
        else:
            self.open[stream] += nbytes
        self.seq += 1
        bits, n = self.gbits, self.n
        if self.port == "single":            # one queue per lane, in the order asked
            self.lanes[lane].extend((self.seq, op, a, entry) for a in addrs)
        else:
            for a in addrs:
                self.pending[(a >> bits) % n][lane].append((self.seq, op, a, entry))
        self.queued += len(addrs)

    def _cu_loads(self, cls, cus):
        """Single port with ``load_spacing``: the GEMM's loads as the co-simulation's GPU
        issues them. Compute unit ``k``'s tile ``t`` reads from ``t * load_spacing`` (wrapped
        at 1 GiB) on, a queue per unit, and the units take the port in turn
        (:class:`~sim_models.gpu.GpuCores`)."""
        cus = list(cus)
        total = sum(nb for _, nb in cus)
        if total <= 0:
            return
        self.traffic[cls] += int(total)
        entry, bits, seq = [total, 0, "compute", self.now], self.gbits, self.seq + 1
        for k, (tile, nb) in enumerate(cus):
            if nb <= 0:
                continue
            cur = self.cursors[k]
            if cur[2] != tile:                  # a new tile: its own first load
                cur[:] = [(tile * self.spacing) % (1 << 30), 0, tile]
            span = int(-(-nb // 1))            # whole bytes (the fluid GPU asks fractions)
            addrs = self._granules(cur[0] + cur[1], span)
            cur[1] += span
            self.cu_lanes[k].extend((seq, _READ, a, entry) for a in addrs)
            entry[1] += len(addrs)
        self.seq = seq
        self.queued += entry[1]
        self.open["compute"] += total

    # -- time ----------------------------------------------------------------------------
    def _arbiters(self, arb):
        if self.arbs is None:
            self.arbs = [arb.fresh() for _ in range(self.k)]
        for a in self.arbs:                  # the shared arbiter derives the threshold
            a.threshold, a.backlog = arb.threshold, arb.backlog
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
        hbm = self.hbm
        for i in range(self.k):
            pend, arb = self.pending[i], arbs[i]
            pc = self.pc_of[i]
            for _ in range(_TICK):
                waiting = hbm.waiting(pc)
                cq = self._ready(pend, "compute", waiting, i)
                mq = self._ready(pend, "comm", waiting, i)
                if cq is None and mq is None:
                    break
                # this PC's queue stands for every PC's: the whole memory's is n_pcs times it
                choice = arb.grant(compute_ready=cq is not None, comm_ready=mq is not None,
                                   occupancy=(waiting[0] + waiting[1]) * self.n)
                if choice is None:
                    break
                q = cq if choice == "compute" else mq
                _, op, addr, entry = q.popleft()
                self.queued -= 1
                self.seq += 1
                hbm.submit(t, op, addr, self.g, source=choice, tag=self.seq)
                if op == _READ:
                    self.inflight[self.seq] = (entry, i)
                    if choice == "compute":
                        self.loads[i] += 1
                else:
                    self._finish(entry)

    def _head(self, stream):
        """Single port: the queue ``stream`` offers now, or None: its reads (a GEMM load
        needs a free load tag) or its writes, in turn when both wait (the round-robin
        pointer inside the arbiter's class: loads and stores, DMA reads and received
        updates)."""
        rq, wq = self.lanes[(stream, True)], self.lanes[(stream, False)]
        if stream == "compute" and self.cu_lanes is not None:
            n = len(self.cu_lanes)
            k = next(((self.cu_rr + d) % n for d in range(n)
                      if self.cu_lanes[(self.cu_rr + d) % n]), None)
            if k is not None:                   # the next unit with loads, in turn
                rq, self.cu_pick = self.cu_lanes[k], k
        if not rq or (stream == "compute" and sum(self.loads) >= self.gpu_mshrs):
            return wq or None
        if not wq:
            return rq
        return wq if self.last_read[stream] else rq

    def _offer(self, t):
        """Single port: the input register's request to the model at cycle ``t``; True if
        it was taken."""
        stream, op, addr, entry = self.slot
        self.seq += 1
        if not self.hbm.submit(t, op, addr, self.g, source=stream, tag=self.seq):
            return False
        self.slot = None
        if op == _READ:
            i = (addr >> self.gbits) % self.n
            self.inflight[self.seq] = (entry, i)
            self.rob.append(self.seq)
            if stream == "compute":
                self.loads[i] += 1
        else:
            self._finish(entry)
        return True

    def _port_cycles(self, t, end, arb):
        """Single port: cycles ``t .. end - 1``, one grant at most in each."""
        for c in range(t, end):
            if self.slot is not None and not self._offer(c):
                # the port is not ready: nothing is granted; the banks work on this cycle
                # (so the next offer sees the queue as it is then)
                self.early += self.hbm.advance(c)
                continue
            if not self.queued:
                return
            cq, mq = self._head("compute"), self._head("comm")
            if cq is None and mq is None:
                return
            # the input register is empty whenever a request is granted
            choice = arb.grant(compute_ready=cq is not None, comm_ready=mq is not None,
                               occupancy=self.hbm.occupancy)
            if choice is None:
                continue
            q = cq if choice == "compute" else mq
            _, op, addr, entry = q.popleft()
            if self.cu_lanes is not None and q is self.cu_lanes[self.cu_pick]:
                self.cu_rr = self.cu_pick + 1
            self.last_read[choice] = op == _READ
            self.queued -= 1
            self.slot = (choice, op, addr, entry)
            self._offer(c)

    def read_latency(self, stream):
        """Mean cycles from a read's request to its data out of the DRAM, over the sampled
        granules of ``stream`` (``"compute"`` or ``"comm"``) served so far; None before
        the first."""
        total, n = self.read_wait[stream]
        return total / n if n else None

    def step(self, cycles, arbiter):
        """Run ``cycles`` cycles; return ``(compute_bytes, comm_bytes)`` served."""
        single = self.port == "single"
        arbs = None if single else self._arbiters(arbiter)
        end = self.now + cycles
        t = self.now
        while t < end:
            nxt = min(t + _TICK, end)
            if single:
                self._port_cycles(t, nxt, arbiter)
            else:
                self._grant_round(t, arbs)
            t = nxt
            done, self.early = self.early + self.hbm.advance(t - 1), []
            if single:                       # reads answer in request order
                for c in done:
                    if c.op == _READ:
                        self.rob_done[c.tag] = c
                done, last = [], 0
                while self.rob and self.rob[0] in self.rob_done:
                    c = self.rob_done.pop(self.rob.popleft())
                    last = max(last, c.done)
                    done.append(dataclasses.replace(c, done=last))
            for c in done:
                if c.op != _READ:
                    continue                 # writes were served when granted
                entry, i = self.inflight.pop(c.tag)
                wait = self.read_wait[entry[2]]
                wait[0] += c.done - entry[3]
                wait[1] += 1
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
