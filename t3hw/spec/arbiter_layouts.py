# SPDX-License-Identifier: Apache-2.0
"""Layouts and enumerations of the memory-controller arbiter (:mod:`t3hw.hw.arbiter`) and of
the engine's memory ports (:mod:`t3hw.hw.engine`). Part of :mod:`t3hw.spec.layouts`, which
re-exports every name: import them from there.
"""

from amaranth.lib import data, enum

from .params import EngineParams
from .kinds import WriteSource


__all__ = [
    "ArbPolicy", "MemOp", "load_layout", "load_response_layout", "mem_request_layout",
    "mem_response_layout", "arbiter_config_layout", "arbiter_status_layout",
    "arbiter_errors_layout", "arbiter_stats_layout", "WINDOW_LOG2_WIDTH", "MCA_POLICIES",
]

#: Width of the ``window_log2`` field of the arbiter configuration (values 0 .. 24).
WINDOW_LOG2_WIDTH = 5


class ArbPolicy(enum.Enum, shape=2):
    """How the arbiter shares the DRAM between the compute and the communication streams."""
    #: Alternate between the two streams when both request (plain T3).
    ROUND_ROBIN   = 0
    #: Compute always first (strict priority); communication only in idle compute slots.
    COMPUTE_FIRST = 1
    #: T3-MCA: compute first; communication only below an occupancy threshold, and forced
    #: after a bounded wait (see :mod:`t3hw.hw.arbiter`).
    T3_MCA        = 2
    #: T3-MCA with round robin below the threshold: T3-MCA, except that while the gate is
    #: open (the occupancy below the threshold, the threshold derived) the two streams
    #: alternate when both request, as under ``ROUND_ROBIN`` (see :mod:`t3hw.hw.arbiter`).
    T3_MCA_RR     = 3


#: The policies with T3-MCA's occupancy gate, forcing and threshold derivation (codes 2 and
#: 3: the high bit of the code).
MCA_POLICIES = frozenset({ArbPolicy.T3_MCA, ArbPolicy.T3_MCA_RR})


class MemOp(enum.Enum, shape=2):
    """What a DRAM request does. Code 3 is never issued."""
    #: Read ``bytes`` at ``addr``; the DRAM returns a response with the request's tag.
    READ   = 0
    #: Store: overwrite the burst.
    STORE  = 1
    #: Update: the near-memory ALU adds the burst to what is stored.
    UPDATE = 2


def load_layout(p: EngineParams):
    """A compute (GEMM) read of ``bytes`` (1 .. ``burst_bytes``) at ``addr``; ``tag`` comes
    back with its response."""
    return data.StructLayout({
        "addr":  p.addr_width,
        "bytes": p.burst_width,
        "tag":   p.load_tag_width,
    })


def load_response_layout(p: EngineParams):
    """The return of a compute read, with its tag (in the order the DRAM answers)."""
    return data.StructLayout({"tag": p.load_tag_width})


def mem_request_layout(p: EngineParams):
    """One request from the arbiter to the DRAM.

    ``source`` is the stream it came from (compute: loads and producer stores; DMA: comm
    reads; remote: incoming network updates); a ``READ``'s response carries ``source`` and
    ``tag`` back. ``tile`` is the tile id of a write (0 for reads).
    """
    return data.StructLayout({
        "op":     MemOp,
        "source": WriteSource,
        "addr":   p.addr_width,
        "bytes":  p.burst_width,
        "tile":   p.tile_width,
        "tag":    p.mem_tag_width,
    })


def mem_response_layout(p: EngineParams):
    """The DRAM's answer to a ``READ``: the request's ``source`` and ``tag``; ``error``: the
    data could not be read (uncorrectable error, poison). Responses of DMA reads must come
    back in request order."""
    return data.StructLayout({
        "source": WriteSource,
        "tag":    p.mem_tag_width,
        "error":  1,
    })


def arbiter_config_layout(p: EngineParams):
    """The arbiter's run-time configuration (register group ``ARB``)."""
    return data.StructLayout({
        "policy":           ArbPolicy,
        #: T3-MCA: communication issues only while the DRAM occupancy is below this;
        #: 0 derives it from the compute request rate.
        "threshold":        p.occupancy_width,
        #: Occupancy at which the DRAM saturates (requests): the derivation's upper end.
        "saturation":       p.occupancy_width,
        #: The derivation window is ``2**window_log2`` cycles (0 .. 24).
        "window_log2":      WINDOW_LOG2_WIDTH,
        #: Issue slots a pending communication request may wait under T3-MCA (>= 1).
        "starvation_limit": p.starvation_width,
    })


def arbiter_status_layout(p: EngineParams):
    """What the arbiter is doing (register ``ARB_STATUS``)."""
    return data.StructLayout({
        "policy":    ArbPolicy,
        #: The T3-MCA threshold in effect: programmed or derived (0 while deriving).
        "threshold": p.occupancy_width,
        #: T3-MCA is deriving its threshold (waiting for the first compute request, or
        #: inside the window); it is compute-first meanwhile, with its starvation limit.
        "measuring": 1,
    })


def arbiter_errors_layout(p: EngineParams):
    """Sticky error bits of the arbiter (bit order = register bit order)."""
    return data.StructLayout({
        #: A configuration with a starvation limit of 0, a window above
        #: 2**24 cycles, or threshold and saturation both 0 (rejected; the old one stays).
        "bad_config":   1,
        #: A DRAM response whose source issues no reads (``REMOTE``; dropped).
        "bad_response": 1,
    })


def arbiter_stats_layout(p: EngineParams):
    """Statistics counters of the arbiter (all ``counter_width`` bits, wrapping)."""
    w = p.counter_width
    return data.StructLayout({
        "grants_load":   w,   # requests granted, per input stream
        "grants_store":  w,
        "grants_dma":    w,
        "grants_remote": w,
        "stalls_load":   w,   # cycles an input held a request that was not granted
        "stalls_store":  w,
        "stalls_dma":    w,
        "stalls_remote": w,
        "starved":       w,   # communication grants forced by the starvation limit
    })
