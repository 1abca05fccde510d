# SPDX-License-Identifier: Apache-2.0
"""Reference semantics of one T3 engine in Python: address map, DMA, arbiter, engine.

The tracker is :class:`sim_models.tracker.TrackerModel` (the RTL's reference model); this
module wires it with the other blocks of ``DESIGN.md``:

* :class:`AddressMap`: regions ``(base, size, mode)``. ``local``: the store goes to local
  DRAM untracked; ``remote``: it leaves for device ``device`` as an update, at
  ``addr - base + remote_base`` there; ``tracked``: it goes to local DRAM and the tracker
  counts it. A store that matches no region goes local and increments ``unmatched``.
* :class:`DmaDescriptor`: ``rows`` rows of ``row_bytes``, ``pitch`` apart, from ``src`` to
  ``dest_addr`` on ``dest_device`` (same pitch there), with op copy (:attr:`WriteKind.STORE`)
  or update (:attr:`WriteKind.UPDATE`) and the tile id the destination tracker counts it
  under. :meth:`DmaDescriptor.walk` cuts it into bursts of at most ``burst_bytes``, row by
  row, in order (the RTL reference :func:`sim_models.dma.walk`); a burst never crosses a
  row; each burst is one network packet.
* :class:`Arbiter`: the policy in front of the DRAM between the compute stream and the
  communication stream, per request (:meth:`Arbiter.grant`) and aggregated over a step of
  many cycles (:meth:`Arbiter.split`, used by the performance model).
* :class:`EngineModel`: one GPU's engine over a functional :class:`~sim_models.dram.DramModel`.

T3-MCA rule (policy ``"t3_mca"``)
---------------------------------
Compute requests always go first. A communication request issues only while the DRAM queue
occupancy (requests waiting plus in service, both streams) is below ``threshold``; once
communication has waited ``starvation_limit`` cycles, one request is forced through.
If ``threshold`` is not programmed it is derived from the compute stream's request rate,
which is what the hardware can count. The measurement window starts with the first compute
grant after configuration and lasts ``window`` cycles; during it the arbiter behaves as
compute-first with the starvation limit (a communication request that has waited
``starvation_limit`` cycles is still forced through). At its end

    rate      = compute requests granted in the window / window cycles
    threshold = max(1, ceil(q_sat * (1 + rate) / 2))

where ``rate`` (0 .. 1) is the compute stream's share of the DRAM's peak request rate (the
DRAM takes at most one request per memory-controller cycle; the performance model, whose
steps serve bytes, uses compute bytes granted / bytes the DRAM could have served) and
``q_sat = dram bytes/cycle * latency / burst`` (``saturation``) the occupancy at which the
DRAM saturates (bandwidth-delay product, in requests). By Little's law the compute stream
keeps ``n_gemm = rate * q_sat`` requests in flight, so this is

    threshold = ceil((n_gemm + q_sat) / 2)

expressed in the measurable rate instead of the occupancy: communication may fill the queue
halfway from the GEMM's typical level to saturation, and is held back when the GEMM itself
bursts above that. A memory-intensive GEMM (rate near 1) gets a threshold close to saturation
(little room left for comm), a compute-bound one (rate near 0) about half of saturation.

T3-MCA-RR rule (policy ``"t3_mca_rr"``, this kit's)
---------------------------------------------------
T3-MCA, except that while the threshold is in effect and the occupancy is below it, the two
streams alternate when both request (round robin), where T3-MCA gives compute every such
slot. The RTL's turn looks at the occupancy two cycles late (``docs/arbiter.md``); this
model, which serves the performance model, compares the occupancy it is given.

Two variants of the turn exist in this model only, to study the policy (``docs/paper.md``,
"A policy of our own"); their defaults give the RTL's rule. ``rr_fraction`` takes the turn
only while the occupancy is below ``max(1, ceil(threshold * rr_fraction))`` (between that
and the threshold the rule is T3-MCA's); ``rr_backlog`` takes it only while the DMA has at
least that many bytes of triggered work whose reads it has not issued
(:attr:`Arbiter.backlog`, which the caller sets: the performance model, every step), a sign
that the ring, not the GEMM, is behind.
"""

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from .dma import walk as dma_walk
from .tracker import TrackerModel
from t3hw.spec.layouts import MCA_POLICIES, ArbPolicy, WriteKind, WriteSource
from t3hw.spec.params import EngineParams


__all__ = ["MODES", "POLICIES", "MCA_NAMES",
           "Region", "AddressMap", "Burst", "DmaDescriptor", "Arbiter",
           "Packet", "EngineModel", "observe_bytes"]


#: Region modes of the address map.
MODES = ("local", "remote", "tracked")
#: Arbitration policies: the names of :class:`~t3hw.spec.layouts.ArbPolicy`, lower case, in
#: code order (``POLICIES[code]``); the one list of them in the models.
POLICIES = tuple(p.name.lower() for p in ArbPolicy)

#: The names of :data:`~t3hw.spec.layouts.MCA_POLICIES`: T3-MCA's gate and derivation.
MCA_NAMES = frozenset(p.name.lower() for p in MCA_POLICIES)


def _nonneg_int(name, value, low=0):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer in [{low}, inf), not {value!r}")
    return int(value)


@dataclass(frozen=True)
class Region:
    """One address-map region: ``[base, base + size)`` with a mode.

    ``device`` and ``remote_base`` are used by ``remote`` regions only.
    """
    base:        int
    size:        int
    mode:        str
    device:      int = 0
    remote_base: int = 0

    def __post_init__(self):
        _nonneg_int("base", self.base)
        _nonneg_int("size", self.size, 1)
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {self.mode!r}")
        _nonneg_int("device", self.device)
        _nonneg_int("remote_base", self.remote_base)


class AddressMap:
    """The producer-output address-space configuration: a small region table.

    Parameters
    ----------
    max_regions : int
        Table size (regions must not overlap).
    """

    def __init__(self, *, max_regions=16):
        self.max_regions = _nonneg_int("max_regions", max_regions, 1)
        self.regions = []
        self.unmatched = 0

    def add(self, region):
        """Program one region; overlapping or too many regions raise ValueError."""
        if len(self.regions) >= self.max_regions:
            raise ValueError(f"region count must be in [0, {self.max_regions}]")
        for r in self.regions:
            if region.base < r.base + r.size and r.base < region.base + region.size:
                raise ValueError(f"region {region} overlaps {r}")
        self.regions.append(region)

    def route(self, addr):
        """``(mode, device, address)`` of a store to ``addr`` (device -1: this GPU)."""
        for r in self.regions:
            if r.base <= addr < r.base + r.size:
                if r.mode == "remote":
                    return "remote", r.device, addr - r.base + r.remote_base
                return r.mode, -1, addr
        self.unmatched += 1
        return "local", -1, addr


@dataclass(frozen=True)
class Burst:
    """One DMA request: ``nbytes`` from local ``src`` to ``dest`` on the descriptor's device."""
    src:    int
    dest:   int
    nbytes: int


@dataclass(frozen=True)
class DmaDescriptor:
    """A pre-programmed DMA command (see the module docstring)."""
    src:         int
    rows:        int
    row_bytes:   int
    pitch:       int
    dest_device: int
    dest_addr:   int
    op:          WriteKind
    dest_tile:   int

    def __post_init__(self):
        for name in ("src", "dest_device", "dest_addr", "dest_tile"):
            _nonneg_int(name, getattr(self, name))
        for name in ("rows", "row_bytes"):
            _nonneg_int(name, getattr(self, name), 1)
        _nonneg_int("pitch", self.pitch, self.row_bytes if self.rows > 1 else 0)
        WriteKind(self.op)

    @property
    def nbytes(self):
        """Bytes moved."""
        return self.rows * self.row_bytes

    def walk(self, params):
        """The bursts of this descriptor under ``params`` (the engine's
        :class:`~t3hw.spec.params.EngineParams`: its ``burst_bytes`` and ``addr_width``), in
        order (row by row, none crossing a row).

        The order is the RTL's, from :func:`sim_models.dma.walk`. A bare ``burst_bytes`` (an
        int) stands for the paper's parameters with that burst.
        """
        if not isinstance(params, EngineParams):
            params = EngineParams(burst_bytes=params)
        desc = {"src": self.src, "dst": self.dest_addr, "rows": self.rows,
                "row_bytes": self.row_bytes, "pitch": self.pitch}
        return [Burst(*b) for b in dma_walk(params, desc)]


class Arbiter:
    """Compute vs communication arbitration in front of the DRAM.

    Parameters
    ----------
    policy : str
        One of :data:`POLICIES`.
    threshold : int or None
        T3-MCA occupancy threshold in requests; None derives it (module docstring).
    starvation_limit : int
        T3-MCA: cycles a pending comm request may wait before one is forced.
    window : int
        T3-MCA: cycles at the GEMM start over which the threshold is derived.
    saturation : float
        T3-MCA: occupancy (requests) at which the DRAM saturates, ``q_sat``.
    rr_fraction : float
        T3-MCA-RR: the turn's share of the threshold, in (0, 1] (module docstring).
    rr_backlog : int
        T3-MCA-RR: the DMA backlog (bytes) the turn needs, in [0, inf) (module docstring).
    """

    def __init__(self, *, policy, threshold=None, starvation_limit=1024, window=16384,
                 saturation=1.0, rr_fraction=1.0, rr_backlog=0):
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
        if threshold is not None:
            _nonneg_int("threshold", threshold, 1)
        self.policy = policy
        self.threshold = threshold
        self.starvation_limit = _nonneg_int("starvation_limit", starvation_limit, 1)
        self.window = _nonneg_int("window", window, 1)
        if not saturation > 0:
            raise ValueError(f"saturation must be in (0, inf), not {saturation!r}")
        self.saturation = float(saturation)
        if isinstance(rr_fraction, bool) or not isinstance(rr_fraction, (int, float)) \
                or not 0 < rr_fraction <= 1:
            raise ValueError(f"rr_fraction must be in (0, 1], not {rr_fraction!r}")
        self.rr_fraction = float(rr_fraction)
        self.rr_backlog = _nonneg_int("rr_backlog", rr_backlog, 0)
        self.backlog = 0         # triggered DMA bytes whose reads are not issued (caller)
        self.wait = 0.0          # cycles the comm stream has waited since its last issue
        self.last = "comm"       # round-robin pointer: who was granted last
        self._seen = 0.0         # cycles of the window measured so far (derived threshold)
        self._granted = 0.0      # sum of cycles x compute rate: compute grants in the window
        self.forced = 0          # comm requests forced by the starvation limit

    def fresh(self):
        """A new arbiter with this one's parameters and none of its state (the HBM2
        memory's per-channel arbiters, :class:`sim_models.memsys.HbmMemory`)."""
        return Arbiter(policy=self.policy, threshold=self.threshold,
                       starvation_limit=self.starvation_limit, window=self.window,
                       saturation=self.saturation, rr_fraction=self.rr_fraction,
                       rr_backlog=self.rr_backlog)

    # -- threshold derivation ------------------------------------------------------------
    @property
    def measuring(self):
        """True while a T3-MCA arbiter is still deriving its threshold."""
        return self.policy in MCA_NAMES and self.threshold is None

    def measure(self, cycles, compute_rate):
        """Record ``cycles`` of the GEMM in which compute used ``compute_rate`` of the DRAM.

        ``compute_rate`` (in [0, 1]) is the compute requests granted per cycle over the DRAM's
        peak of one per cycle (equivalently compute bytes served / bytes the DRAM could have
        served). The window starts with the first call with a nonzero rate (the first compute
        grant); once it has covered ``window`` cycles the threshold is derived from the mean
        rate (module docstring).
        """
        if not 0.0 <= compute_rate <= 1.0:
            raise ValueError(f"compute_rate must be in [0, 1], not {compute_rate!r}")
        if not self.measuring or (self._seen == 0 and compute_rate == 0):
            return
        self._seen += cycles
        self._granted += cycles * compute_rate
        if self._seen >= self.window:
            rate = self._granted / self._seen
            self.threshold = max(1, math.ceil(self.saturation * (1 + rate) / 2 - 1e-9))

    def _open(self, occupancy):
        return self.threshold is None or occupancy < self.threshold

    def _turn_threshold(self):
        """The occupancy below which T3-MCA-RR takes its round-robin turn, or 0 (no turn:
        the threshold is being derived, or the backlog is short of ``rr_backlog``)."""
        if self.measuring or self.backlog < self.rr_backlog:
            return 0
        return max(1, math.ceil(self.threshold * self.rr_fraction - 1e-9))

    # -- one grant slot ------------------------------------------------------------------
    def grant(self, *, compute_ready, comm_ready, occupancy):
        """Decide one request slot (one cycle): ``"compute"``, ``"comm"`` or ``None``."""
        if self.policy == "round_robin":
            if compute_ready and comm_ready:
                choice = "compute" if self.last == "comm" else "comm"
            else:
                choice = "compute" if compute_ready else ("comm" if comm_ready else None)
        elif self.policy == "compute_first":
            choice = "compute" if compute_ready else ("comm" if comm_ready else None)
        elif comm_ready and self.wait >= self.starvation_limit:     # also while measuring
            choice = "comm"
            self.forced += 1
        elif (self.policy == "t3_mca_rr" and compute_ready and comm_ready
              and occupancy < self._turn_threshold()):
            choice = "compute" if self.last == "comm" else "comm"
        elif compute_ready:
            choice = "compute"
        elif comm_ready and self._open(occupancy):
            choice = "comm"
        else:
            choice = None
        if choice is not None:
            self.last = choice
        if choice == "comm" or not comm_ready:
            self.wait = 0
        else:
            self.wait += 1
        return choice

    # -- a step of many cycles -----------------------------------------------------------
    def split(self, *, capacity, cycles, compute, comm, occupancy, burst_bytes, latency=1.0):
        """Split ``capacity`` bytes of one step between the streams; ``(compute, comm)``.

        The fluid equivalent of calling :meth:`grant` once per request over the step with
        constant demands: ``compute`` and ``comm`` are the bytes pending. For T3-MCA,
        communication may raise the occupancy (``occupancy`` at the step start, requests) up
        to the threshold: ``(threshold - occupancy) * burst_bytes * cycles / latency`` bytes
        (Little's law: requests in flight = rate x ``latency``), plus the forced requests.
        """
        if self.policy == "round_robin":
            gc = min(compute, max(capacity / 2, capacity - comm))
            return gc, min(comm, capacity - gc)
        if self.policy == "compute_first":
            gc = min(compute, capacity)
            return gc, min(comm, capacity - gc)
        forced = 0.0
        if comm > 0:
            n = int((self.wait + cycles) // self.starvation_limit)
            forced = min(comm, n * burst_bytes, capacity)
        gc = min(compute, capacity - forced)
        room = capacity - gc - forced
        if self.measuring:                  # compute-first plus the forced requests
            extra = max(0.0, min(comm - forced, room))
        elif self._open(occupancy) and self.policy == "t3_mca_rr":
            # round robin below the turn's threshold: communication takes at least half of
            # what the forced requests leave, more if compute asks for less; then, up to the
            # gate's threshold, the slots compute leaves (T3-MCA)
            allow = (self.threshold - occupancy) * burst_bytes * cycles / latency
            turn = max(0.0, (self._turn_threshold() - occupancy) * burst_bytes * cycles
                       / latency)
            left = capacity - forced
            rr = max(0.0, min(comm - forced, left - min(compute, left / 2), turn))
            gc = min(compute, left - rr)
            extra = rr + max(0.0, min(comm - forced - rr, left - gc - rr, allow - rr))
        elif self._open(occupancy) and room > 0:
            allow = (self.threshold - occupancy) * burst_bytes * cycles / latency
            extra = min(comm - forced, room, allow)
        else:
            extra = 0.0
        gm = forced + extra
        self.forced += int(round(forced / burst_bytes))
        if comm <= 0 or extra > 0:
            self.wait = 0.0
        elif forced:
            self.wait = (self.wait + cycles) % self.starvation_limit
        else:
            self.wait += cycles
        return gc, gm


@dataclass
class Packet:
    """One network packet: an update or store to ``addr`` on ``dest`` counted under ``tile``."""
    dest: int
    addr: int
    data: np.ndarray
    op:   WriteKind
    tile: int


def observe_bytes(tracker, tile, nbytes, *, burst_bytes, source):
    """Count a write of ``nbytes`` on ``tracker`` as ``nbytes / burst_bytes`` beats.

    The beats are observed in as few writes as the tracker's ``beats_width`` allows. Returns
    the triggers fired (a list).
    """
    if nbytes % burst_bytes:
        raise ValueError(f"nbytes must be a multiple of burst_bytes={burst_bytes}, not {nbytes!r}")
    beats, most = nbytes // burst_bytes, (1 << tracker.params.beats_width) - 1
    fired = []
    while beats:
        n = min(beats, most)
        trig = tracker.observe(tile, n, source=source)
        beats -= n
        if trig is not None:
            fired.append(trig)
    return fired


class EngineModel:
    """One GPU's engine over a functional DRAM: addrmap -> DRAM/tracker, triggers -> DMA.

    Parameters
    ----------
    device : int
        This GPU's index.
    dram : DramModel
        Its memory (functional: ``size_bytes > 0``).
    params : EngineParams, optional
        The engine's parameters: tracker geometry, DMA burst and address width (default:
        the paper's).
    burst_bytes : int, optional
        DMA burst, network packet and tracker beat size, if not ``params.burst_bytes``
        (``params`` with this burst).
    dtype : numpy dtype
        Element type carried by stores and updates (FP16).
    """

    def __init__(self, *, device, dram, params=None, burst_bytes=None, dtype=np.float16):
        self.device = _nonneg_int("device", device)
        self.dram = dram
        params = params if params is not None else EngineParams()
        if burst_bytes is not None and burst_bytes != params.burst_bytes:
            params = params.replace(burst_bytes=_nonneg_int("burst_bytes", burst_bytes, 1))
        self.params = params
        self.burst_bytes = params.burst_bytes
        self.dtype = np.dtype(dtype)
        self.addrmap = AddressMap()
        self.tracker = TrackerModel(params)
        self.descriptors = {}
        self.ready = deque()          # triggered DMA command indices
        self.completed = []           # tiles whose trigger carried a completion-only command

    def program(self, cmd, descriptor):
        """Store ``descriptor`` at command index ``cmd``; None: completion only (the trigger
        just records its tile in :attr:`completed`, e.g. the last ring stage)."""
        self.descriptors[_nonneg_int("cmd", cmd)] = descriptor

    def _track(self, tile, nbytes, source):
        for trig in observe_bytes(self.tracker, tile, nbytes, burst_bytes=self.burst_bytes,
                                  source=source):
            if self.descriptors[trig.cmd] is None:
                self.completed.append(trig.tile)
            else:
                self.ready.append(trig.cmd)

    def store(self, addr, data, *, tile, op=WriteKind.UPDATE, cls="gemm_writes"):
        """A producer store of ``data`` at ``addr``; returns the packets it sends (a list)."""
        mode, device, target = self.addrmap.route(addr)
        if mode == "remote":
            return [Packet(device, target, data, WriteKind(op), tile)]
        if WriteKind(op) == WriteKind.UPDATE:
            self.dram.update(target, data, cls=cls)
        else:
            self.dram.write(target, data, cls=cls)
        if mode == "tracked":
            self._track(tile, data.nbytes, WriteSource.COMPUTE)
        return []

    def receive(self, packet, *, cls="rs_writes"):
        """An incoming packet: written or op-and-stored locally, then counted."""
        if packet.op == WriteKind.UPDATE:
            self.dram.update(packet.addr, packet.data, cls=cls)
        else:
            self.dram.write(packet.addr, packet.data, cls=cls)
        mode, _, _ = self.addrmap.route(packet.addr)
        if mode == "tracked":
            self._track(packet.tile, packet.data.nbytes, WriteSource.REMOTE)

    def run_dma(self, *, cls="rs_reads"):
        """Walk every triggered descriptor; return the packets, one per burst, in order."""
        out = []
        while self.ready:
            d = self.descriptors[self.ready.popleft()]
            for b in d.walk(self.params):
                raw = self.dram.read(b.src, b.nbytes, cls=cls)
                out.append(Packet(d.dest_device, b.dest, raw.view(self.dtype), d.op, d.dest_tile))
        return out
