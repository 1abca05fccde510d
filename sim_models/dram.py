# SPDX-License-Identifier: Apache-2.0
"""Near-memory-compute (NMC) DRAM models: real tensors, byte counters, two timings.

Two models of one GPU's DRAM, one store of data:

* :class:`DramModel`: the functional memory and the byte counters, with a *fluid* timing:
  a bandwidth account stepped in chunks of many cycles. The performance model
  (:mod:`sim_models.perf`) uses its timing and counters, the functional ring check
  (:mod:`sim_models.functional`, through :class:`~sim_models.engine_model.EngineModel`) its
  data.
* :class:`NmcDram`: a *cycle-level* request queue (one request per cycle, in order, a fixed
  latency, refusal bursts) in front of a :class:`DramModel` that holds its data and counts
  its bytes: the co-simulation's DRAM (:class:`sim_models.cosim.SystemEnv`, at the RTL's
  ``dram`` port).

:class:`DramModel` has two faces:

* **Functional.** A flat, byte-addressed ``numpy.uint8`` memory holding real FP16/FP32
  tensors. :meth:`DramModel.read` and :meth:`DramModel.write` move bytes;
  :meth:`DramModel.update` is the near-memory op-and-store: the bank's ALU adds the burst to
  what is stored (one rounding, in the tensor's dtype), so no read crosses the channel.
* **Timing.** A fluid, bandwidth-limited request queue in front of the banks, stepped in
  chunks of cycles by the performance model (:meth:`DramModel.step`). Compute-stream requests
  enter the controller queue as soon as the CUs issue them (waiting requests plus those in
  service are the queue *occupancy*); communication requests wait at the arbiter
  (:class:`~sim_models.engine_model.Arbiter`) and enter the queue only when granted. Each step the DRAM serves at most
  ``bytes_per_cycle * cycles`` bytes, split between the two streams by the arbiter.

Every byte that crosses the DRAM interface is counted in one traffic class
(:data:`TRAFFIC_CLASSES`). An update counts its bytes once, as a write: the near-bank read of
an op-and-store never crosses the channel, and this model charges it no bandwidth beyond the
write (a documented choice: the in-bank read is hidden by bank-level parallelism).
"""

import math
from collections import deque

import numpy as np

from t3hw.spec.layouts import MemOp, WriteSource


__all__ = ["TRAFFIC_CLASSES", "DramModel", "NmcDram"]

# the enums' values, read once (an enum member's .value is a descriptor call)
_READ, _STORE = MemOp.READ.value, MemOp.STORE.value
_COMPUTE, _DMA = WriteSource.COMPUTE.value, WriteSource.DMA.value


#: The traffic classes, in report order.
TRAFFIC_CLASSES = ("gemm_reads", "gemm_writes", "rs_reads", "rs_writes", "ag_reads", "ag_writes")

_DTYPES = (np.float16, np.float32)


def _positive(name, value, *, integer=False):
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
        what = "positive integer" if integer else "positive number"
        raise ValueError(f"{name} must be a {what} in (0, inf), not {value!r}")
    return value


class DramModel:
    """The DRAM of one GPU, with near-memory update and per-class byte counters.

    Parameters
    ----------
    size_bytes : int
        Capacity of the functional memory in bytes (0: timing and counters only).
    bandwidth_gbs : float
        Peak bandwidth in GB/s (10**9 bytes/s); paper: 1000 (1 TB/s HBM2).
    freq_ghz : float
        Clock of the memory controller in GHz; one cycle of this model is one of its cycles.
    latency_cycles : int
        Unloaded access latency in cycles (default 350, about 250 ns at 1.4 GHz, an HBM2-class
        figure). Used for read-to-data delays and by Little's law in the arbiter.
    burst_bytes : int
        Size of one request (the tracker's counting unit).

    Attributes
    ----------
    traffic : dict of str to int
        Bytes moved so far, per traffic class.
    backlog : dict of str to float
        Bytes requested but not yet served, per stream (``"compute"``, ``"comm"``).
    served : dict of str to float
        Bytes per cycle served per stream in the last step.
    waiting : float
        Compute-stream bytes the last step left unserved (waiting in the queue).
    busy_cycles : float
        Cycles' worth of bandwidth used so far (served bytes / ``bytes_per_cycle``).
    """

    def __init__(self, *, size_bytes=0, bandwidth_gbs=1000.0, freq_ghz=1.4, latency_cycles=350,
                 burst_bytes=64):
        if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes < 0:
            raise ValueError(f"size_bytes must be an integer in [0, inf), not {size_bytes!r}")
        _positive("bandwidth_gbs", bandwidth_gbs)
        _positive("freq_ghz", freq_ghz)
        _positive("latency_cycles", latency_cycles, integer=True)
        _positive("burst_bytes", burst_bytes, integer=True)
        self.size_bytes = size_bytes
        self.bandwidth_gbs = float(bandwidth_gbs)
        self.freq_ghz = float(freq_ghz)
        self.latency_cycles = latency_cycles
        self.burst_bytes = burst_bytes
        self.mem = np.zeros(size_bytes, dtype=np.uint8)
        self.tensors = {}
        self._next = 0
        self.traffic = {cls: 0 for cls in TRAFFIC_CLASSES}
        self.backlog = {"compute": 0.0, "comm": 0.0}
        self.served = {"compute": 0.0, "comm": 0.0}
        self.waiting = 0.0
        self.busy_cycles = 0.0

    @property
    def bytes_per_cycle(self):
        """Peak bytes per memory-controller cycle."""
        return self.bandwidth_gbs / self.freq_ghz

    # -- functional ----------------------------------------------------------------------
    def alloc(self, name, shape, dtype=np.float16):
        """Allocate a zeroed tensor; return its base address (aligned to ``burst_bytes``)."""
        if name in self.tensors:
            raise ValueError(f"tensor name must be unused, not {name!r}")
        dtype = np.dtype(dtype)
        if dtype.type not in _DTYPES:
            raise ValueError(f"dtype must be float16 or float32, not {dtype!r}")
        nbytes = int(np.prod(shape)) * dtype.itemsize
        base = -(-self._next // self.burst_bytes) * self.burst_bytes
        if base + nbytes > self.size_bytes:
            raise ValueError(f"tensor {name!r} needs bytes [{base}, {base + nbytes}), "
                             f"beyond size_bytes={self.size_bytes}")
        self._next = base + nbytes
        self.tensors[name] = (base, tuple(shape), dtype)
        return base

    def tensor(self, name):
        """A live numpy view of tensor ``name`` (writes to it bypass the counters)."""
        base, shape, dtype = self.tensors[name]
        nbytes = int(np.prod(shape)) * dtype.itemsize
        return self.mem[base:base + nbytes].view(dtype).reshape(shape)

    def _span(self, addr, nbytes):
        if not (0 <= addr and 0 < nbytes and addr + nbytes <= self.size_bytes):
            raise ValueError(f"access [{addr}, {addr + nbytes}) must lie in "
                             f"[0, {self.size_bytes}) and be non-empty")
        return slice(addr, addr + nbytes)

    def count(self, cls, nbytes):
        """Add ``nbytes`` to traffic class ``cls``."""
        if cls not in self.traffic:
            raise ValueError(f"cls must be one of {TRAFFIC_CLASSES}, not {cls!r}")
        self.traffic[cls] += int(nbytes)

    def read(self, addr, nbytes, *, cls):
        """Read ``nbytes`` at ``addr``; returns a copy as ``uint8``."""
        span = self._span(addr, nbytes)
        self.count(cls, nbytes)
        return self.mem[span].copy()

    def write(self, addr, data, *, cls):
        """Plain store of ``data`` (any numpy array, taken as raw bytes) at ``addr``."""
        raw = np.ascontiguousarray(data).view(np.uint8).ravel()
        self.mem[self._span(addr, raw.size)] = raw
        self.count(cls, raw.size)

    def update(self, addr, data, *, cls):
        """Near-memory op-and-store: ``mem[addr] += data`` in ``data``'s dtype (FP16/FP32)."""
        data = np.ascontiguousarray(data)
        if data.dtype.type not in _DTYPES:
            raise ValueError(f"update dtype must be float16 or float32, not {data.dtype!r}")
        span = self._span(addr, data.nbytes)
        view = self.mem[span].view(data.dtype)
        view += data.ravel()
        self.count(cls, data.nbytes)

    # -- timing --------------------------------------------------------------------------
    def _in_flight(self, stream=None):
        served = sum(self.served.values()) if stream is None else self.served[stream]
        return served * self.latency_cycles / self.burst_bytes

    @property
    def occupancy(self):
        """Requests at the controller as the last step left them: compute requests still
        waiting plus all requests in service.

        Communication requests wait at the arbiter, not in the queue, until granted. Requests
        in service are estimated by Little's law from the last step: served bytes per cycle
        x ``latency_cycles`` / ``burst_bytes``.
        """
        return math.ceil(self.waiting / self.burst_bytes + self._in_flight() - 1e-9)

    @property
    def read_delay(self):
        """Cycles from a read's bytes being served to its data being usable: this fluid
        model serves bandwidth, so the whole :attr:`latency_cycles`."""
        return self.latency_cycles

    @property
    def compute_occupancy(self):
        """The compute stream's share of :attr:`occupancy` (what T3-MCA measures)."""
        return self.waiting / self.burst_bytes + self._in_flight("compute")

    @property
    def saturation(self):
        """Occupancy at which the DRAM saturates: the bandwidth-delay product in requests."""
        return self.bytes_per_cycle * self.latency_cycles / self.burst_bytes

    def request(self, stream, nbytes, cls, *, op=None, region=None, cus=None):
        """Issue ``nbytes`` of requests on ``stream`` (``"compute"`` or ``"comm"``).

        ``op``, ``region`` and ``cus`` (what the requests do, where, and for which compute
        units' tiles) matter to the HBM2 memory (:class:`sim_models.memsys.HbmMemory`);
        this fluid model moves bytes only.
        """
        if stream not in self.backlog:
            raise ValueError(f"stream must be 'compute' or 'comm', not {stream!r}")
        if nbytes < 0:
            raise ValueError(f"nbytes must be in [0, inf), not {nbytes!r}")
        self.backlog[stream] += nbytes
        self.count(cls, nbytes)

    def step(self, cycles, arbiter):
        """Serve the backlogs for ``cycles`` cycles; return ``(compute_bytes, comm_bytes)``.

        ``arbiter`` splits the step's capacity (see
        :meth:`sim_models.engine_model.Arbiter.split`); served bytes leave the backlogs.
        """
        capacity = self.bytes_per_cycle * cycles
        compute, comm = arbiter.split(capacity=capacity, cycles=cycles,
                                      compute=self.backlog["compute"], comm=self.backlog["comm"],
                                      occupancy=self.occupancy, burst_bytes=self.burst_bytes,
                                      latency=self.latency_cycles)
        self.backlog["compute"] = max(0.0, self.backlog["compute"] - compute)
        self.backlog["comm"] = max(0.0, self.backlog["comm"] - comm)
        self.waiting = self.backlog["compute"]
        self.served = {"compute": compute / cycles, "comm": comm / cycles}
        self.busy_cycles += (compute + comm) / self.bytes_per_cycle
        return compute, comm


class NmcDram:
    """One GPU's DRAM with near-memory update, cycle by cycle: the co-simulation's.

    Takes at most one request per cycle (one RTL clock is one memory-controller cycle) and
    serves them in order, one per cycle, a request taken at cycle ``t`` at ``t + latency``
    or later. Requests are the fields of the RTL's ``dram`` port (``op``, ``source``,
    ``addr``, ``bytes``, ``tag``). Reads answer on :attr:`responses` and are timing only,
    except DMA reads, whose data (a snapshot at service time) is queued on :attr:`dma_data`
    for the packet they become; stores and updates (with their data) write the memory, an
    update adding in place. :attr:`occupancy` is the queue length (the ``occupancy`` port).

    The bytes ``[base, base + size_bytes)`` live in a functional :class:`DramModel`
    (:attr:`memory`), which also counts the traffic: compute reads ``gemm_reads``, compute
    writes ``gemm_writes``, DMA reads ``rs_reads`` (``ag_reads`` at or above
    ``result_base``: a reduced unit copied onwards), received updates ``rs_writes`` and
    received stores ``ag_writes``. Writes at or above ``result_base`` count into
    :attr:`r_writes`, the collective's completion.

    Parameters
    ----------
    rng : random.Random
        Source of the refusal bursts.
    base, size_bytes, result_base : int
        The memory held, and where the results start.
    latency : int
        Cycles from taking a request to serving it, at least.
    stall : float
        Probability per cycle that the DRAM starts refusing requests for 1 .. 16 cycles.
    dtype : numpy dtype
        Element type of the data (FP16).
    """

    def __init__(self, rng, *, base, size_bytes, result_base, latency, stall,
                 dtype=np.float16):
        self.rng = rng
        self.base, self.result_base = base, result_base
        self.latency, self.stall = latency, stall
        self.dtype = np.dtype(dtype)
        self.memory = DramModel(size_bytes=size_bytes)
        self.queue = deque()                 # (due, request, data)
        self.responses = deque()
        self.dma_data = deque()
        self.stall_left = 0
        self.r_writes = 0                    # bytes written at or above result_base
        self.last_write = 0

    @property
    def traffic(self):
        """Bytes per traffic class (the memory's counters)."""
        return self.memory.traffic

    def view(self, addr, nbytes):
        """A live view of ``nbytes`` at ``addr`` as :attr:`dtype` elements."""
        off = addr - self.base
        return self.memory.mem[off:off + nbytes].view(self.dtype)

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
        raw = self.access(req, data)
        if req["op"] == _READ:
            self.respond(req, raw)
        else:
            self.written(cycle, req)
        return True

    def access(self, req, data):
        """Apply request ``req`` (with the ``data`` of a write) to :attr:`memory` now and
        count its bytes; returns a DMA read's data (a snapshot), else None."""
        mem, nbytes = self.memory, req["bytes"]
        in_r = req["addr"] >= self.result_base
        if req["op"] == _READ:
            if req["source"] == _DMA:
                raw = mem.read(req["addr"] - self.base, nbytes,
                               cls="ag_reads" if in_r else "rs_reads")
                return raw.view(self.dtype)
            mem.count("gemm_reads", nbytes)
            return None
        if req["source"] == _COMPUTE:
            cls = "gemm_writes"
        else:
            cls = "ag_writes" if req["op"] == _STORE else "rs_writes"
        if req["op"] == _STORE:
            mem.write(req["addr"] - self.base, data, cls=cls)
        else:
            mem.update(req["addr"] - self.base, data, cls=cls)
        return None

    def respond(self, req, raw):
        """Answer read ``req`` on :attr:`responses` (its data ``raw``, if any, on
        :attr:`dma_data`)."""
        if raw is not None:
            self.dma_data.append(raw)
        self.responses.append({"source": req["source"], "tag": req["tag"]})

    def written(self, cycle, req):
        """Write ``req`` is done at ``cycle``: count it into :attr:`r_writes` if it lands in
        the results."""
        if req["addr"] >= self.result_base:
            self.r_writes += req["bytes"]
            self.last_write = cycle

    def pending(self):
        """Requests taken and not yet served (0: the DRAM is idle)."""
        return len(self.queue)

    @property
    def occupancy(self):
        return len(self.queue)

    def next_due(self):
        return self.queue[0][0] if self.queue else None
