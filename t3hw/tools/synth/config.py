# SPDX-License-Identifier: Apache-2.0
"""What ``t3hw synth`` measures and with what: the blocks, the parameter sets, the ECP5 and
iCE40 targets, the defaults of a run, the script templates (package data in
``t3hw/tools/synth_scripts/``), and the tracker's storage figures."""

import hashlib
import string

from .. import toolchain
from t3hw.spec.layouts import LUTRAM_ATTR, RD_COLLISION_ATTR
from t3hw.spec.params import DEFAULT, EngineParams


#: Blocks measured: ``name`` of :data:`t3hw.tools.generate.BLOCKS` (``dma`` is the DMA queue and
#: engine; ``engine`` the whole engine, register block included).
BLOCKS = ("tracker", "dma", "addrmap", "arbiter", "engine")

#: Parameter sets measured.
#:
#: ``small``
#:     the engine regression's small set (``cocotb_tests/test_engine.py``): 32 tracker
#:     entries, 32 DMA descriptors, 20-bit addresses, 16-byte bursts.
#: ``default``
#:     :data:`t3hw.spec.params.DEFAULT`, the paper's (256 tracker entries, 256 descriptors,
#:     48-bit addresses, 64-byte bursts); ``rtl/`` is generated with it.
#: ``large``
#:     a big deployment: 1024 tracker entries with 20-bit tile ids and 16-bit counts (the
#:     tracker regression's large set), 1024 DMA descriptors, 64-bit addresses, 32 regions,
#:     32 outstanding reads, 64-deep trigger and ready queues, 10-bit DRAM occupancy.
PARAM_SETS = {
    "small": EngineParams(tracker_entries=32, tile_width=8, count_width=8, cmd_width=5,
                          addr_width=20, pitch_width=16, burst_bytes=16, rows_width=6,
                          row_bytes_width=10, counter_width=32, occupancy_width=6,
                          mca_saturation=8, mca_window_log2=6, starvation_width=8,
                          starvation_limit=32),
    "default": DEFAULT,
    "large": EngineParams(tracker_entries=1024, tile_width=20, count_width=16, beats_width=6,
                          cmd_width=10, addr_width=64, device_width=8,
                          dma_ready_depth=64, max_outstanding=32, rows_width=16,
                          row_bytes_width=24, pitch_width=32, regions=32, load_tag_width=10,
                          occupancy_width=10, mca_saturation=128),
}

#: The ECP5 target of place and route: the part of the ULX3S-85F board, at its speed grade.
ECP5 = {"device": "LFE5U-85F", "package": "CABGA381", "speed": 6,
        "nextpnr_args": ["--85k", "--package", "CABGA381", "--speed", "6"]}

#: The iCE40 target: ``synth_ice40`` (which does not depend on the part), then
#: ``nextpnr-ice40 --pack-only`` for the logic-cell count, on the largest iCE40 (HX8K, whose
#: capacity the table compares with). No placement: the bare block's ports exceed the pins.
ICE40 = {"device": "iCE40HX8K", "package": "ct256", "lc": 7680, "bram": 32,
         "nextpnr_args": ["--hx8k", "--package", "ct256"]}

#: nextpnr seeds; the reported Fmax is their median.
DEFAULT_SEEDS = (1, 2, 3)

#: Target frequency of timing-driven placement and routing, MHz.
DEFAULT_FREQ_MHZ = 150.0

#: The script templates (``t3hw/tools/synth_scripts/``, package data).
SCRIPTS = toolchain.PACKAGE / "tools" / "synth_scripts"

#: Yosys commands, run before ``synth_ecp5``, that collect the memories, declare the
#: read/write collisions of those marked ``t3hw_rd_collision`` don't-care and map those
#: marked ``t3hw_lutram`` to LUT RAM (``t3hw/tools/synth_scripts/ecp5.ys``).
ECP5_COLLISIONS = ("proc; memory -nomap; "
                   f"setparam -set RD_COLLISION_X_MASK 1'b1 t:$mem_v2 a:{RD_COLLISION_ATTR} %i; "
                   f"setattr -set ram_style \"distributed\" t:$mem_v2 a:{LUTRAM_ATTR} %i")

#: Default tool processes at a time.
DEFAULT_JOBS = 2

#: Largest ``jobs``.
MAX_JOBS = 16

#: Seconds a synthesis run may take before it is an error.
DEFAULT_TIMEOUT_S = 2 * 3600

#: Seconds a place-and-route run may take before its seed is recorded as not finished.
DEFAULT_PNR_TIMEOUT_S = 3 * 3600


# --- parameters and storage ------------------------------------------------------------------

def tracker_storage_bits(params: EngineParams = DEFAULT):
    """Bits of the tracker table: ``tracker_entries`` entries of
    :func:`t3hw.spec.layouts.entry_layout` (valid, re-arm, tag, threshold, count, DMA command,
    pending firings).

    The trigger and ack queues (``tracker_entries`` deep each) are not included;
    :func:`tracker_storage` has all three.
    """
    from t3hw.spec.layouts import entry_layout
    return entry_layout(params).size * params.tracker_entries


def tracker_storage(params: EngineParams = DEFAULT):
    """The tracker's storage, field by field: ``{"entry_bits", "entries", "table_bits",
    "fields", "trigger_queue_bits", "ack_queue_bits", "held_bits", "held_nonzero_bits"}``
    (``held_bits``: the per-descriptor counts of entries with a firing pending,
    ``range(tracker_entries + 1)`` each; ``held_nonzero_bits``: their 1-bit copy, "not 0",
    which ``desc_query`` reads)."""
    from t3hw.spec.layouts import entry_layout, trigger_layout
    layout = entry_layout(params)
    return {"entries": params.tracker_entries, "entry_bits": layout.size,
            "fields": {name: field.width for name, field in layout},
            "table_bits": tracker_storage_bits(params),
            "trigger_queue_bits": params.tracker_entries * trigger_layout(params).size,
            "ack_queue_bits": params.tracker_entries * params.tile_width,
            "held_bits": params.dma_descriptors * params.tracker_entries.bit_length(),
            "held_nonzero_bits": params.dma_descriptors}


def choose(values, allowed, what, plural=None):
    """``values`` (None: all of ``allowed``), checked against ``allowed``, in ``allowed``
    order, without repeats; ``plural`` of ``what`` defaults to ``what + "s"``."""
    if values is None:
        return list(allowed)
    values = list(values)
    plural = plural or f"{what}s"
    for value in values:
        if value not in allowed:
            raise ValueError(f"unknown {what} {value!r}; {plural} are {', '.join(allowed)}")
    if not values:
        raise ValueError(f"no {what} given; {plural} are {', '.join(allowed)}")
    return [a for a in allowed if a in values]


def entry_name(block, param_set):
    """The results key of ``block`` at ``param_set``: ``block`` for ``default``, else
    ``block@param_set``."""
    return block if param_set == "default" else f"{block}@{param_set}"


def script_template(name):
    """The script template ``name`` of :data:`SCRIPTS`, as a :class:`string.Template`."""
    return string.Template((SCRIPTS / name).read_text())


def wrapper_sha256():
    """The sha256 of the timing wrapper's template (``wrapper.v``): a stored measurement
    made inside another wrapper is not reused."""
    return hashlib.sha256((SCRIPTS / "wrapper.v").read_bytes()).hexdigest()
