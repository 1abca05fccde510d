# SPDX-License-Identifier: Apache-2.0
"""Layouts and the command enumeration of the register block (:mod:`t3hw.hw.csr`), whose
register map is :mod:`t3hw.spec.regmap`. Part of :mod:`t3hw.spec.layouts`, which re-exports
every name: import them from there.
"""

from amaranth.lib import data, enum

from .params import EngineParams


__all__ = [
    "CsrCommand", "csr_id_layout", "csr_config_layout", "csr_status_layout",
    "csr_command_layout", "csr_errors_layout", "csr_device_id_layout",
]


class CsrCommand(enum.Enum, shape=3):
    """A command written to the register block's ``COMMAND`` register. Other codes (0, 7)
    are rejected with the ``bad_command`` error."""
    #: Send the staged region (the ``REGION_*`` registers) to the address map.
    REGION_WRITE = 1
    #: Load region ``index`` (staged) from the read-back table into the ``REGION_*`` registers.
    REGION_READ  = 2
    #: Send the staged descriptor (the ``DESC_*`` registers) to the DMA descriptor table.
    DESC_WRITE   = 3
    #: Load descriptor ``index`` (staged) from the read-back table into the ``DESC_*`` registers.
    DESC_READ    = 4
    #: Send the staged tracker request (the ``TRACK_*`` registers: ARM, DISARM or READ); the
    #: tracker's answer goes into the ``TRACK_RESULT_*`` registers.
    TRACK_WRITE  = 5
    #: Send the staged arbiter configuration (the ``ARB_*`` registers) to the arbiter, which
    #: applies it or rejects it (``ARBITER_ERRORS.bad_config``; the old one stays).
    ARB_WRITE    = 6


def csr_id_layout(p: EngineParams):
    """The ``ID`` register: a constant that identifies the register block."""
    return data.StructLayout({"magic": 32})


def csr_config_layout(p: EngineParams):
    """The ``CONFIG`` register: the parameters a driver must agree with, each field as wide
    as the largest value :data:`~t3hw.spec.params.PARAM_RANGES` allows."""
    from .params import PARAM_RANGES

    def log2_width(name):
        return (PARAM_RANGES[name][1] - 1).bit_length().bit_length()

    def width(name):
        return PARAM_RANGES[name][1].bit_length()

    return data.StructLayout({
        "index_width":        log2_width("tracker_entries"),   # log2(tracker_entries)
        "region_index_width": log2_width("regions"),           # log2(regions)
        "cmd_width":          width("cmd_width"),              # log2(DMA descriptors)
        "tile_width":         width("tile_width"),
        "count_width":        width("count_width"),
        "addr_width":         width("addr_width"),
    })


def csr_status_layout(p: EngineParams):
    """The ``STATUS`` register."""
    return data.StructLayout({
        #: The tracker clears its table after reset (TRACK_WRITE is refused).
        "tracker_busy":   1,
        #: The DMA invalidates its descriptor table after reset (DESC_WRITE is refused).
        "dma_busy":       1,
        #: The DMA has no trigger, descriptor, read or packet in progress.
        "dma_idle":       1,
        #: The register block clears its read-back tables after reset (every command but
        #: TRACK_WRITE and ARB_WRITE is refused).
        "sweep":          1,
        #: A REGION_WRITE is in progress (the ``REGION_*`` registers are locked).
        "region_pending": 1,
        #: A DESC_WRITE is in progress (the ``DESC_*`` registers are locked).
        "desc_pending":   1,
        #: A TRACK_WRITE waits for the tracker to take it or to answer it (the ``TRACK_*``
        #: registers are locked).
        "track_pending":  1,
        #: An ARB_WRITE is in progress (the ``ARB_*`` registers are locked).
        "arb_pending":    1,
        #: The ``irq`` output: a sticky error bit whose ``*_IRQ_ENABLE`` bit is set is high.
        "irq":            1,
    })


def csr_command_layout(p: EngineParams):
    """The ``COMMAND`` register."""
    return data.StructLayout({"command": CsrCommand})


def csr_device_id_layout(p: EngineParams):
    """The ``DEVICE_ID`` register: this engine's device number (received packets for another
    device are refused by the address map)."""
    return data.StructLayout({"device": p.device_width})


def csr_errors_layout(p: EngineParams):
    """Sticky error bits of the register block itself (bit order = register bit order)."""
    return data.StructLayout({
        #: A read or write of an address with no register (or not a multiple of 4).
        "unmapped":    1,
        #: A write to a read-only register (ignored).
        "read_only":   1,
        #: A COMMAND write with an unknown command code (ignored).
        "bad_command": 1,
        #: A command whose target was busy or still held the previous command, or a write to
        #: staging registers locked by a pending command (ignored).
        "busy":        1,
    })
