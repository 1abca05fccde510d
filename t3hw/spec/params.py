# SPDX-License-Identifier: Apache-2.0
"""Elaboration parameters of the T3 engine.

One frozen, validated object, :class:`EngineParams`, carries every parameter of every block.
The generator, the reference models, the testbenches and the manifest in ``rtl/`` all read
it, so a parameter is defined exactly once. Defaults are the paper's (a 256-entry tracker).
"""

import dataclasses
from dataclasses import dataclass


__all__ = ["EngineParams", "DEFAULT", "PARAM_RANGES", "check_params"]


#: Allowed range of every integer parameter, inclusive: ``name: (low, high)``.
PARAM_RANGES = {
    "tracker_entries": (2, 65536),
    "tile_width":      (1, 32),
    "count_width":     (1, 24),
    "beats_width":     (1, 8),
    "cmd_width":       (1, 16),
    "pending_width":   (1, 16),
    "counter_width":   (8, 64),
    "addr_width":      (8, 64),
    "device_width":    (1, 16),
    "dma_ready_depth": (1, 4096),
    "burst_bytes":     (1, 4096),
    "max_outstanding": (1, 256),
    "rows_width":      (1, 24),
    "row_bytes_width": (1, 32),
    "pitch_width":     (1, 64),
    "regions":         (2, 64),
    "load_tag_width":  (1, 16),
    "occupancy_width": (1, 16),
    "arbiter_policy":  (0, 3),
    "mca_threshold":   (0, 65535),
    "mca_saturation":  (1, 65535),
    "mca_window_log2": (0, 24),
    "starvation_width": (1, 24),
    "starvation_limit": (1, (1 << 24) - 1),
}

#: Parameters that must also be a power of two (direct-mapped tables).
_POW2 = ("tracker_entries", "burst_bytes", "regions")


@dataclass(frozen=True)
class EngineParams:
    """Parameters of one T3 engine.

    Every field is validated on construction; a bad value raises :exc:`ValueError` naming the
    value and the allowed range. Instances are hashable and comparable, so they key build
    directories and caches.

    Attributes
    ----------
    tracker_entries : int
        Entries in the tracker table, a power of two (paper: 256). Entry ``i`` tracks the
        tile ids ``t`` with ``t % tracker_entries == i`` (direct-mapped, see
        :mod:`t3hw.hw.tracker`).
    tile_width : int
        Width of the tile (workgroup) id carried by every write. At least
        ``log2(tracker_entries)``; the bits above the index are stored as a tag.
    count_width : int
        Width of an entry's threshold and count, in beats. A threshold is at most
        ``2**count_width - 1``.
    beats_width : int
        Width of the beat count of one observed write (1 .. ``2**beats_width - 1`` beats).
    cmd_width : int
        Width of the DMA command index that a trigger carries. It is also the index width of
        the DMA descriptor table, which has ``dma_descriptors = 2**cmd_width`` entries, so
        every trigger names a descriptor.
    pending_width : int
        Width of a tracker entry's count of firings the DMA has not taken yet. A one-shot
        entry has at most one; a re-arm entry up to ``2**pending_width - 1``.
    counter_width : int
        Width of the statistics counters (they wrap).
    addr_width : int
        Width of a byte address (producer stores, DMA source and destination, remote memory).
    device_width : int
        Width of a destination device (GPU) number on the network.
    dma_ready_depth : int
        Depth of the DMA ready queue of triggered descriptor indices. When it is full the DMA
        deasserts ``trigger.ready``; a trigger is never dropped.
    burst_bytes : int
        Bytes of one memory request / network packet, a power of two (64 for exactness,
        larger for simulation speed). Requests carry ``1 .. burst_bytes`` bytes.
    max_outstanding : int
        Comm-stream reads the DMA engine may have issued and not yet seen return.
    rows_width : int
        Width of a DMA descriptor's row count (1 .. ``2**rows_width - 1`` rows).
    row_bytes_width : int
        Width of a DMA descriptor's bytes per row (1 .. ``2**row_bytes_width - 1``).
    pitch_width : int
        Width of a DMA descriptor's row pitch in bytes, at most ``addr_width``.
    regions : int
        Regions in the address map, a power of two.
    load_tag_width : int
        Width of the tag of a compute (GEMM) read, returned with its response.
    occupancy_width : int
        Width of the DRAM queue occupancy input of the arbiter, and of the T3-MCA threshold
        and saturation occupancy (requests).
    arbiter_policy : int
        Arbitration policy after reset, an :class:`~t3hw.spec.layouts.ArbPolicy` value
        (0 round-robin, 1 compute-first, 2 T3-MCA, 3 T3-MCA with round robin below the
        threshold); software may change it at run time.
    mca_threshold : int
        T3-MCA occupancy threshold after reset; 0 derives it in hardware from the compute
        request rate (see :mod:`t3hw.hw.arbiter`). Below ``2**occupancy_width``.
    mca_saturation : int
        Occupancy at which the DRAM saturates (its bandwidth-delay product, in requests),
        after reset; the derivation's upper end. Below ``2**occupancy_width``.
    mca_window_log2 : int
        log2 of the window, in cycles, over which the compute request rate is measured.
    starvation_width : int
        Width of the starvation limit and of the arbiter's wait counter.
    starvation_limit : int
        T3-MCA: issue slots a pending communication request may wait before one is forced,
        after reset. Below ``2**starvation_width``.
    """

    tracker_entries: int = 256
    tile_width:      int = 16
    count_width:     int = 12
    beats_width:     int = 4
    cmd_width:       int = 8
    pending_width:   int = 4
    counter_width:   int = 32
    addr_width:      int = 48
    device_width:    int = 5
    dma_ready_depth: int = 16
    burst_bytes:     int = 64
    max_outstanding: int = 8
    rows_width:      int = 12
    row_bytes_width: int = 16
    pitch_width:     int = 24
    regions:         int = 8
    load_tag_width:  int = 8
    occupancy_width: int = 8
    arbiter_policy:  int = 2
    mca_threshold:   int = 0
    mca_saturation:  int = 32
    mca_window_log2: int = 14
    starvation_width: int = 16
    starvation_limit: int = 1024

    def __post_init__(self):
        for name, (low, high) in PARAM_RANGES.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(f"{name} must be an integer in [{low}, {high}], not {value!r}")
        for name in _POW2:
            value = getattr(self, name)
            if value & (value - 1):
                raise ValueError(f"{name} must be a power of two in "
                                 f"[{PARAM_RANGES[name][0]}, {PARAM_RANGES[name][1]}], not {value!r}")
        if self.tile_width < self.index_width:
            raise ValueError(f"tile_width must be in [{self.index_width}, "
                             f"{PARAM_RANGES['tile_width'][1]}] for tracker_entries="
                             f"{self.tracker_entries}, not {self.tile_width!r}")
        if self.beats_width > self.count_width:
            raise ValueError(f"beats_width must be in [1, {self.count_width}] (count_width), "
                             f"not {self.beats_width!r}")
        for name, width in (("mca_threshold", "occupancy_width"),
                            ("mca_saturation", "occupancy_width"),
                            ("starvation_limit", "starvation_width")):
            value, top = getattr(self, name), (1 << getattr(self, width)) - 1
            if value > top:
                raise ValueError(f"{name} must be in [{PARAM_RANGES[name][0]}, {top}] "
                                 f"({width}={getattr(self, width)}), not {value!r}")
        if self.pitch_width > self.addr_width:
            raise ValueError(f"pitch_width must be in [1, {self.addr_width}] (addr_width), "
                             f"not {self.pitch_width!r}")

    @property
    def index_width(self):
        """Width of a tracker table index, ``log2(tracker_entries)``."""
        return (self.tracker_entries - 1).bit_length()

    @property
    def tag_width(self):
        """Width of the tag stored in each tracker entry (tile id bits above the index)."""
        return self.tile_width - self.index_width

    @property
    def max_threshold(self):
        """Largest programmable threshold, in beats."""
        return (1 << self.count_width) - 1

    @property
    def dma_descriptors(self):
        """Entries in the DMA descriptor table, ``2**cmd_width`` (one per trigger command)."""
        return 1 << self.cmd_width

    @property
    def sweep_cycles(self):
        """Cycles of the tracker's reset sweep: its table and its per-descriptor ``held``
        counters, ``max(tracker_entries, 2**cmd_width)``."""
        return max(self.tracker_entries, self.dma_descriptors)

    @property
    def burst_width(self):
        """Width of a request's byte count, which holds ``1 .. burst_bytes``."""
        return self.burst_bytes.bit_length()

    @property
    def read_tag_width(self):
        """Width of a comm-stream read tag: ``max_outstanding`` tags in flight are distinct."""
        return max(1, (self.max_outstanding - 1).bit_length())

    @property
    def mem_tag_width(self):
        """Width of a DRAM request's tag: a compute read's or a comm-stream read's."""
        return max(self.load_tag_width, self.read_tag_width)

    @property
    def region_index_width(self):
        """Width of an address-map region index, ``log2(regions)``."""
        return (self.regions - 1).bit_length()

    def to_dict(self):
        """The parameters as a plain ``{name: value}`` dict, in declaration order."""
        return dataclasses.asdict(self)

    def replace(self, **changes):
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def fields(cls):
        """Names of the parameters, in declaration order."""
        return [f.name for f in dataclasses.fields(cls)]


#: The paper's parameter set, used for ``rtl/``.
DEFAULT = EngineParams()


def check_params(params, owner=None):
    """Return ``params`` if it is an :class:`EngineParams`, else raise :exc:`TypeError`.

    ``owner`` is the object being constructed; an Amaranth elaboratable that fails here is
    marked so that Amaranth does not also warn that it was created and never used.
    """
    if not isinstance(params, EngineParams):
        if owner is not None:
            owner._MustUse__silence = True
        raise TypeError(f"params must be an EngineParams, not {params!r}")
    return params
