# SPDX-License-Identifier: Apache-2.0
"""The contract between the RTL blocks and everything that models, drives or documents them:
the latencies software and models must respect, the values registers take at reset, and the
bounds derived from the parameters.

The blocks (:mod:`t3hw.hw`) implement these figures; the reference models
(:mod:`sim_models`), the register map, the driver and the testbenches read them from here,
never from a block's module, so that a model never imports hardware. A change to a block's
pipeline that moves one of these figures changes it here, once.
"""

from .params import EngineParams


__all__ = ["addrmap_verdict_cycles", "addrmap_search_stages", "addrmap_program_cycles",
           "addrmap_latency",
           "addrmap_queue_depth", "dma_verdict_cycles", "dma_program_cycles",
           "csr_verdict_delay", "CSR_REFUSALS", "CSR_LOAD_CYCLES", "CSR_READ_LATENCY",
           "ARBITER_FINISH_CYCLES", "MAX_WINDOW_LOG2", "arbiter_reset_config"]


# --- address map ----------------------------------------------------------------------------

def addrmap_verdict_cycles(params: EngineParams):
    """Cycles from the address map taking a region write to that write's error event on
    ``errors``: one to register it, ``regions + 3`` for the pass that reads every region,
    compares it with the write and copies it into the new sorted table (three stages deep)
    and completes the overlap check, one to register the verdict, one to insert the write
    and decide. The write applies to stores and packets accepted from
    then on. The register block and the test environments wait this long."""
    return params.regions + 5


def addrmap_search_stages(params: EngineParams):
    """Pipeline stages of the address map's binary search: ``log2(regions)``."""
    return (params.regions - 1).bit_length()


def addrmap_program_cycles(params: EngineParams):
    """Cycles from the address map taking a region write to its ``program.ready`` rising
    again: the verdict, then until every store and packet accepted under the old table has
    read it (the next write rewrites that copy): ``regions`` + the latency."""
    return params.regions + addrmap_latency(params)


def addrmap_latency(params: EngineParams):
    """Cycles from the address map accepting a store (or a packet) to it being valid at
    ``net``/``mem`` (``rx_mem``): a register, two stages per level of the binary search
    (``log2(regions)`` levels: read the pivot, compare), the region's record read, its
    checks and translation, the class and the output queue."""
    return 2 * addrmap_search_stages(params) + 4


def addrmap_queue_depth(params: EngineParams):
    """Stores (packets) the address map holds between accepting them and their output being
    taken (or their refusal): enough for one per cycle while the output is ready."""
    return addrmap_latency(params) + 1


# --- DMA ------------------------------------------------------------------------------------

def dma_verdict_cycles(params: EngineParams):
    """Cycles from the DMA taking a descriptor write to that write's error event on
    ``errors``: five pipeline stages of checks (the multipliers' operands, the
    ``(rows - 1) * pitch`` product, the span and the in-use verdict, the range ends, the
    verdict that writes the tables) and the sticky register. The write applies to triggers
    taken from the cycle of its event on. The same at every parameter set."""
    return 6


def dma_program_cycles(params: EngineParams):
    """Cycles from the DMA taking a descriptor write to its ``program.ready`` rising again
    (one write in its checks at a time); triggers wait as long."""
    return 6


# --- register block -------------------------------------------------------------------------

def csr_verdict_delay(params: EngineParams):
    """Per staging group with a read-back table: cycles from the target taking a write to its
    error event on the target's ``errors`` port. The address map checks a region write
    against every region, one per cycle (:func:`addrmap_verdict_cycles`); the DMA checks a
    descriptor write in a pipeline (:func:`dma_verdict_cycles`)."""
    return {"REGION": addrmap_verdict_cycles(params), "DESC": dma_verdict_cycles(params)}


#: Per staging group with a read-back table: the target's error bits that refuse a write,
#: each shown :func:`csr_verdict_delay` cycles after the target took it. Every name is a bit
#: of the target's errors layout.
CSR_REFUSALS = {"REGION": ("bad_region", "overlap"),
                "DESC":   ("bad_program", "bad_range", "bad_pitch", "desc_busy")}

#: Cycles after a ``REGION_READ`` or ``DESC_READ`` command's cycle in which its group is
#: loading (pending): the table's data goes into a register, then into the staging registers.
CSR_LOAD_CYCLES = 2

#: The register bus's read latency: ``r_data`` holds the register read ``CSR_READ_LATENCY``
#: cycles after the ``r_stb`` cycle. The block registers the bus (address, data, strobes) as
#: it enters and reads from that register through two registered multiplexer stages; a write
#: takes effect at the end of the cycle after its ``w_stb``.
CSR_READ_LATENCY = 3


# --- arbiter --------------------------------------------------------------------------------

#: Cycles after the window until the derived threshold is in effect (``status.measuring``
#: stays high through them): the window's last grant registered, an add, the result taken.
ARBITER_FINISH_CYCLES = 3

#: Largest ``window_log2`` the arbiter accepts (a window of 2**24 cycles).
MAX_WINDOW_LOG2 = 24


def arbiter_reset_config(params: EngineParams):
    """The arbiter's configuration after reset, as a dict of
    :func:`~t3hw.spec.layouts.arbiter_config_layout` fields."""
    return {"policy": params.arbiter_policy, "threshold": params.mca_threshold,
            "saturation": params.mca_saturation, "window_log2": params.mca_window_log2,
            "starvation_limit": params.starvation_limit}
