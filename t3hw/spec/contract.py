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


__all__ = ["ADDRMAP_VERDICT_CYCLES", "CSR_VERDICT_DELAY", "CSR_REFUSALS", "CSR_LOAD_CYCLES",
           "ARBITER_FINISH_CYCLES", "MAX_WINDOW_LOG2", "arbiter_reset_config"]


# --- address map ----------------------------------------------------------------------------

#: Cycles from the address map taking a region write to that write's error event on
#: ``errors`` (its three programming stages); the write applies to stores and packets
#: accepted from then on. The register block and the test environment wait this long.
ADDRMAP_VERDICT_CYCLES = 3


# --- register block -------------------------------------------------------------------------

#: Per staging group with a read-back table: cycles from the target taking a write to its
#: error event on the target's ``errors`` port. The address map checks a region write over
#: the two cycles after it takes it (:data:`ADDRMAP_VERDICT_CYCLES`), so its verdict comes two
#: cycles later than the DMA's.
CSR_VERDICT_DELAY = {"REGION": ADDRMAP_VERDICT_CYCLES, "DESC": 1}

#: Per staging group with a read-back table: the target's error bits that refuse a write,
#: each shown :data:`CSR_VERDICT_DELAY` cycles after the target took it. Every name is a bit
#: of the target's errors layout.
CSR_REFUSALS = {"REGION": ("bad_region", "overlap"),
                "DESC":   ("bad_program", "bad_range", "bad_pitch", "desc_busy")}

#: Cycles after a ``REGION_READ`` or ``DESC_READ`` command's cycle in which its group is
#: loading (pending): the table's data goes into a register, then into the staging registers.
CSR_LOAD_CYCLES = 2


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
