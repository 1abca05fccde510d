# SPDX-License-Identifier: Apache-2.0
"""The co-simulation's DRAM on the HBM2 timing model: HBM2 timing, in-order numpy data.

:class:`HbmDram` has the interface of :class:`~sim_models.dram.NmcDram` that
:class:`sim_models.cosim.SystemEnv` uses (``ready``, ``take``, ``serve``, ``responses``,
``dma_data``, ``occupancy``, ``next_due``, ``pending``, ``traffic``, ``r_writes``,
``last_write``, ``memory``, ``view``), so ``CosimConfig(memory="hbm")`` swaps it in for
the fixed-latency DRAM. Timing and data are kept apart:

* **Timing** comes from :class:`~sim_models.hbm.HbmModel`: each request the engine's
  ``dram`` port hands over is submitted to it; a request it refuses (a full read or write
  queue at its pseudo-channel) waits in a one-request input register, and the port is not
  ready until the model has taken it (back-pressure from ``can_accept``, nothing lost).
  A read answers when the model completes it, a write counts as done (:attr:`r_writes`,
  :attr:`last_write`) when its data is in the bank. :attr:`occupancy` is the accesses
  waiting in the model's queues, plus the one in the input register.
* **Data** stays in numpy (:class:`~sim_models.dram.DramModel`, :attr:`memory`) with the
  fixed-latency DRAM's ordering: a request is applied the cycle the model accepts it, in
  acceptance (request) order. A store or update lands then; a DMA read takes its snapshot
  then, so it sees every earlier request and none after, whatever order the banks serve
  them in (a controller that keeps same-address requests in order). A trigger that fires
  one write too early still sends a unit without that write.
* **Responses** leave in request order: completed reads wait in a reorder buffer until
  every older read has answered (the engine's DMA expects its read returns in order).

Clocks: the co-simulation's clock is one memory-controller cycle, so the HBM model runs with
``clock_ghz`` equal to its DRAM clock (1 GHz, ``tck_ps`` 1000): one RTL cycle is one DRAM
clock, no conversion rounds. :data:`COSIM_HBM` scales the paper's 64 pseudo-channels to the
co-simulation's one 64-B request per cycle: 4 pseudo-channels of 16 B per clock are 64 B per
cycle at the pins, before refresh, row misses and updates (which use their bank's column
path twice) take their share.
"""

from collections import deque

import numpy as np

from t3hw.spec.layouts import MemOp

from .dram import NmcDram
from .hbm import HbmModel, HbmParams


__all__ = ["COSIM_HBM", "HbmDram"]

_READ = MemOp.READ.value

#: The co-simulation's HBM2: 2 channels x 2 pseudo-channels at 1 GHz, counted in its own
#: clock (one RTL cycle per DRAM clock), 64-B granules (one engine request, one access)
#: interleaved over the 4 pseudo-channels, then over bank groups; the paper's timings and
#: controller queues otherwise (``docs/dram.md``).
COSIM_HBM = HbmParams(channels=2, pseudo_channels=2, clock_ghz=1.0, interleave_bytes=64)


class HbmDram(NmcDram):
    """One GPU's DRAM for the co-simulation: :class:`HbmModel` timing, numpy data in request
    order, responses in request order (module docstring).

    Parameters
    ----------
    rng : random.Random
        Source of the refusal bursts (``stall``).
    base, size_bytes, result_base : int
        The memory held, and where the results start (as for :class:`NmcDram`).
    stall : float
        Probability per cycle that the port starts refusing requests for 1 .. 16 cycles, on
        top of the HBM model's own back-pressure.
    hbm : HbmParams
        The memory system (default :data:`COSIM_HBM`); its ``clock_ghz`` clock is the
        caller's cycle.
    dtype : numpy dtype
        Element type of the data (FP16).

    Attributes
    ----------
    hbm : HbmModel
        The timing model.
    slot : tuple or None
        ``(request, data)`` taken from the port and refused by the model so far.
    rob : deque
        Reads submitted and not yet answered, oldest first: ``[seq, request, data, done]``.
    writes : dict
        Stores and updates submitted and not yet done, by sequence number.
    late_reads : int
        Reads that completed while an older read was still outstanding (held in the reorder
        buffer).
    """

    def __init__(self, rng, *, base, size_bytes, result_base, stall=0.0, hbm=COSIM_HBM,
                 dtype=np.float16):
        super().__init__(rng, base=base, size_bytes=size_bytes, result_base=result_base,
                         latency=0, stall=stall, dtype=dtype)
        self.hbm = HbmModel(hbm)
        self.slot = None
        self.rob = deque()
        self.reads = {}                      # seq -> rob entry
        self.writes = {}                     # seq -> request
        self.seq = 0
        self.late_reads = 0

    def ready(self):
        """True when the port can take a request this cycle: no refusal burst, and the
        input register is empty."""
        return super().ready() and self.slot is None

    def take(self, cycle, req, data):
        """Take request ``req`` (fields of the ``dram`` port; ``data`` for a write) at
        ``cycle``; the port must have been :meth:`ready`."""
        if self.slot is not None:
            raise AssertionError(f"cycle {cycle}: DRAM request {req} taken while the input "
                                 f"register holds {self.slot[0]}")
        self.slot = (req, data)
        self._submit(cycle)

    def _submit(self, cycle):
        """Offer the input register's request to the model; on acceptance apply it to the
        data (request order) and track it. Returns True if it was accepted."""
        req, data = self.slot
        seq = self.seq + 1
        if not self.hbm.submit(cycle, req["op"], req["addr"], req["bytes"],
                               source=req["source"], tag=seq):
            return False
        self.seq, self.slot = seq, None
        raw = self.access(req, data)
        if req["op"] == _READ:
            entry = [seq, req, raw, False]
            self.rob.append(entry)
            self.reads[seq] = entry
        else:
            self.writes[seq] = req
        return True

    def serve(self, cycle):
        """End of ``cycle``: retry a refused request, collect the model's completions,
        answer the reads that are complete in request order. True if anything moved."""
        moved = self.slot is not None and self._submit(cycle)
        for c in self.hbm.advance(cycle):
            moved = True
            if c.op == _READ:
                entry = self.reads.pop(c.tag)
                entry[3] = True
                if self.rob[0] is not entry:
                    self.late_reads += 1
            else:
                self.written(c.done, self.writes.pop(c.tag))
        while self.rob and self.rob[0][3]:
            _, req, raw, _ = self.rob.popleft()
            self.respond(req, raw)
        return moved

    @property
    def occupancy(self):
        """Requests at the controller not yet issued to the banks: accesses waiting in the
        model's queues (one per request: a 64-B request is one granule), plus a refused one
        in the input register."""
        return self.hbm.occupancy + (self.slot is not None)

    def pending(self):
        """Requests taken and not yet done or answered (0: the DRAM is idle)."""
        return len(self.rob) + len(self.writes) + (self.slot is not None)

    def next_due(self):
        """The next cycle at which this DRAM acts on its own: now while a refused request
        waits, the model's next decision or completion while requests are outstanding,
        else None (refresh alone does not wake the co-simulation)."""
        if self.slot is not None:
            return self.hbm.now
        if not (self.rob or self.writes):
            return None
        return self.hbm.next_event()
