# SPDX-License-Identifier: Apache-2.0
"""Payload layouts and enumerations, defined once.

Every struct that crosses a port of the engine is an :mod:`amaranth.lib.data` layout built
here from :class:`~t3hw.spec.params.EngineParams`. The Python reference models, the cocotb
testbenches and the documentation derive their field names, offsets and widths from these
objects through :class:`Codec`; no field offset is typed anywhere else.
"""

from amaranth.lib import data, enum

from .params import EngineParams


__all__ = [
    "WriteKind", "WriteSource", "TrackOp", "TrackResult",
    "write_layout", "program_layout", "trigger_layout", "entry_layout",
    "tracker_errors_layout", "tracker_stats_layout", "tracker_result_layout",
    "tracker_capture_layout",
    "Codec",
    "RD_COLLISION_ATTR", "rd_collision_attrs",
]

#: Memory attribute saying that a read whose data is used never meets a write to the same
#: entry in the same cycle; the ECP5 flow (``t3hw.tools.synth.ECP5_COLLISIONS``) then needs no
#: read-before-write bypass after the block RAM. One read and one write port only.
RD_COLLISION_ATTR = "t3hw_rd_collision"


#: Memory attribute: every read of the memory is asynchronous and feeds logic or a register
#: on a short path, so an FPGA flow should map it to LUT RAM, not to block RAM (whose
#: clock-to-output would start the path). The ECP5 flow turns it into ``ram_style``; other
#: flows ignore it (an iCE40 has no LUT RAM).
LUTRAM_ATTR = "t3hw_lutram"


def rd_collision_attrs(reason):
    """``attrs`` for an :class:`amaranth.lib.memory.Memory` whose collisions are never used:
    ``"forwarded"`` (the block forwards the colliding write itself) or ``"excluded"`` (the
    block never lets a used read and a write to the same entry meet)."""
    if reason not in ("forwarded", "excluded"):
        raise ValueError(f"reason must be 'forwarded' or 'excluded', not {reason!r}")
    return {RD_COLLISION_ATTR: reason}


# WriteKind and WriteSource are defined in t3hw/spec/kinds.py (the arbiter's layouts need
# them too), exported from here.
from .kinds import WriteKind, WriteSource  # noqa: E402


class TrackOp(enum.Enum, shape=2):
    """Operation of a tracker programming request. Code 3 is refused (``TrackResult.BAD_OP``)."""
    #: Arm the entry of ``tile``: set its threshold, DMA command and mode, clear its count.
    ARM    = 0
    #: Disarm the entry of ``tile`` if it is armed for that tile; otherwise do nothing.
    DISARM = 1
    #: Read the entry of ``tile`` back (its state goes to the tracker's ``result``).
    READ   = 2


class TrackResult(enum.Enum, shape=3):
    """The tracker's verdict on one programming request (``result.code``)."""
    #: Done as asked.
    OK            = 0
    #: ARM of an entry that is armed, or whose trigger the DMA has not taken yet (refused).
    BUSY          = 1
    #: ARM with a threshold of 0 (refused).
    BAD_THRESHOLD = 2
    #: DISARM of a tile whose entry is not armed for it (nothing done). A READ of such a
    #: tile also answers ``NOT_ARMED`` (with the entry's state).
    NOT_ARMED     = 3
    #: An unknown operation code (refused).
    BAD_OP        = 4


def write_layout(p: EngineParams):
    """A granted memory write, as the tracker observes it.

    ``tile`` is the tile (workgroup) id the write carries as metadata; ``beats`` how many
    counting units it adds (1 .. ``2**beats_width - 1``).
    """
    return data.StructLayout({
        "tile":   p.tile_width,
        "beats":  p.beats_width,
        "kind":   WriteKind,
        "source": WriteSource,
    })


def program_layout(p: EngineParams):
    """A tracker programming request (from the register block)."""
    return data.StructLayout({
        "op":        TrackOp,
        "tile":      p.tile_width,
        "threshold": p.count_width,
        "cmd":       p.cmd_width,
        "rearm":     1,
    })


def trigger_layout(p: EngineParams):
    """A trigger: the DMA command to start, and the tile whose completion fired it."""
    return data.StructLayout({
        "cmd":  p.cmd_width,
        "tile": p.tile_width,
    })


def entry_layout(p: EngineParams):
    """One tracker table entry, as stored in the table memory.

    ``tag`` holds the tile id bits above the table index (absent when ``tile_width`` equals
    ``log2(tracker_entries)``); ``left`` is the number of beats still to come before the
    entry completes (``threshold`` minus the beats counted), in ``[1, threshold]`` while the
    entry is armed; ``pending`` counts the entry's firings whose trigger the DMA has not
    taken yet (while it is not 0 the entry cannot be armed again).
    """
    fields = {"valid": 1, "rearm": 1, "tag": p.tag_width, "threshold": p.count_width,
              "left": p.count_width, "cmd": p.cmd_width, "pending": p.pending_width}
    if not p.tag_width:
        del fields["tag"]       # tile ids index the table directly: no tag (no 0-bit wires)
    return data.StructLayout(fields)


def tracker_errors_layout(p: EngineParams):
    """Sticky error bits of the tracker (bit order = register bit order)."""
    return data.StructLayout({
        #: A write whose tile has no armed entry (or arrived during the reset sweep).
        "unprogrammed":  1,
        #: A write took an entry's count past its threshold (it still triggered).
        "overcount":     1,
        #: ARM of an entry that is armed, or whose trigger the DMA has not taken yet (the
        #: request was rejected: ``TrackResult.BUSY``).
        "reprogram":     1,
        #: ARM with a threshold of 0 (the request was rejected).
        "bad_threshold": 1,
        #: A re-arm entry completed with ``2**pending_width - 1`` firings still pending
        #: (the DMA took none of them): this firing was lost. Impossible for a one-shot entry.
        "overflow":      1,
        #: A programming request with an unknown operation code (refused).
        "bad_op":        1,
    })


def tracker_result_layout(p: EngineParams):
    """The tracker's answer to one programming request, in request order: the request's
    ``op`` and ``tile``, the verdict ``code``, and the entry's state after the request
    (``valid``: armed; ``pending``: firings the DMA has not taken yet; ``count``: beats
    counted; the other fields as armed, and 0 while the entry is not armed; all meaningful
    for a READ)."""
    return data.StructLayout({
        "op":        TrackOp,
        "code":      TrackResult,
        "tile":      p.tile_width,
        "valid":     1,
        "rearm":     1,
        "pending":   p.pending_width,
        "threshold": p.count_width,
        "count":     p.count_width,
        "cmd":       p.cmd_width,
    })


def tracker_capture_layout(p: EngineParams):
    """Details of the tracker's error events, shown by its ``capture`` output in the cycle its
    ``errors`` output shows the events: the tile of the write or programming request, and the
    command of its entry (or request)."""
    return data.StructLayout({
        "tile": p.tile_width,
        "cmd":  p.cmd_width,
    })


def tracker_stats_layout(p: EngineParams):
    """Statistics counters of the tracker (all ``counter_width`` bits, wrapping)."""
    w = p.counter_width
    return data.StructLayout({
        "writes_compute": w,   # observed writes by source
        "writes_dma":     w,
        "writes_remote":  w,
        "unprogrammed":   w,   # writes that hit no armed entry
        "triggers":       w,   # completions that fired (each leaves as one trigger)
        "dropped":        w,   # firings lost to a saturated re-arm entry (errors.overflow)
    })


class Codec:
    """Packs and unpacks integers of a :class:`~amaranth.lib.data.StructLayout` in Python.

    A fast, pure-Python view of a layout for models and testbenches: the field names,
    offsets and widths come from the Amaranth layout itself.

    Parameters
    ----------
    layout : StructLayout
        The layout to encode.
    """

    def __init__(self, layout):
        self.layout = layout
        self.width  = layout.size
        self.fields = [(name, field.offset, field.width) for name, field in layout]
        self.names  = [name for name, _, _ in self.fields]

    def pack(self, **values):
        """Fields (ints or enum members) to an integer; missing fields are 0."""
        unknown = set(values) - set(self.names)
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)!r}; fields are {self.names!r}")
        bits = 0
        for name, offset, width in self.fields:
            value = int(getattr(values.get(name, 0), "value", values.get(name, 0)))
            if not 0 <= value < (1 << width):
                raise ValueError(f"field {name!r} must be in [0, {(1 << width) - 1}], "
                                 f"not {value!r}")
            bits |= value << offset
        return bits

    def unpack(self, bits):
        """An integer to a ``{field: int}`` dict."""
        bits = int(bits)
        return {name: (bits >> offset) & ((1 << width) - 1)
                for name, offset, width in self.fields}

    def unpacker(self, names):
        """A function from an integer to the ``{field: int}`` dict of the fields ``names``
        only, its shifts and masks computed once (for per-cycle loops that read a few
        fields)."""
        unknown = set(names) - set(self.names)
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)!r}; fields are {self.names!r}")
        fields = [(name, offset, (1 << width) - 1) for name, offset, width in self.fields
                  if name in names]
        return lambda bits: {name: bits >> offset & mask for name, offset, mask in fields}


# --- DMA queue and engine (t3hw/hw/dma.py) and address map (t3hw/hw/addrmap.py) -------------------

__all__ += [
    "RegionMode",
    "dma_descriptor_layout", "dma_program_layout", "read_request_layout",
    "read_response_layout", "net_packet_layout", "dma_errors_layout", "dma_stats_layout",
    "store_layout", "mem_store_layout", "region_layout", "region_program_layout",
    "addrmap_errors_layout", "addrmap_stats_layout", "dma_capture_layout",
    "addrmap_capture_layout",
]


class RegionMode(enum.Enum, shape=2):
    """What the address map does with a producer store that falls in a region."""
    #: Local memory, not tracked.
    LOCAL   = 0
    #: A peer GPU: the store leaves on the network as an update, with a translated address.
    REMOTE  = 1
    #: Local memory, and the tracker counts it (the memory port's ``tracked`` flag is set).
    TRACKED = 2


def dma_descriptor_layout(p: EngineParams):
    """One DMA descriptor, as stored in the descriptor table.

    The tile is ``rows`` rows of ``row_bytes`` bytes; row ``r`` starts at ``src + r * pitch``
    and lands at ``dst + r * pitch`` on ``device`` (the destination buffer has the source's
    layout). ``op`` is what the destination memory does with each packet (``STORE`` = copy,
    ``UPDATE`` = near-memory add); ``tile`` is the id the destination's tracker counts.
    ``rows`` and ``row_bytes`` of a valid descriptor are at least 1.
    """
    return data.StructLayout({
        "valid":     1,
        "op":        WriteKind,
        "device":    p.device_width,
        "tile":      p.tile_width,
        "rows":      p.rows_width,
        "row_bytes": p.row_bytes_width,
        "pitch":     p.pitch_width,
        "src":       p.addr_width,
        "dst":       p.addr_width,
    })


def dma_program_layout(p: EngineParams):
    """A descriptor table write (from the register block): the index, then the descriptor's
    fields. ``valid = 0`` invalidates the entry."""
    return data.StructLayout({"index": p.cmd_width, **dma_descriptor_layout(p).members})


def read_request_layout(p: EngineParams):
    """A comm-stream read of one burst: ``bytes`` (1 .. ``burst_bytes``) from ``addr``.

    ``tag`` counts the requests modulo ``2**read_tag_width``; the memory returns it.
    """
    return data.StructLayout({
        "addr":  p.addr_width,
        "bytes": p.burst_width,
        "tag":   p.read_tag_width,
    })


def read_response_layout(p: EngineParams):
    """The return of a comm-stream read, in request order, with the request's tag; ``error``:
    the memory could not read it (an uncorrectable error, poison)."""
    return data.StructLayout({
        "tag":   p.read_tag_width,
        "error": 1,
    })


def net_packet_layout(p: EngineParams):
    """A network packet: ``bytes`` (1 .. ``burst_bytes``) for ``addr`` on ``device``.

    ``kind`` is what the destination memory does with it; ``tile`` is the id its tracker
    counts.
    """
    return data.StructLayout({
        "device": p.device_width,
        "addr":   p.addr_width,
        "kind":   WriteKind,
        "tile":   p.tile_width,
        "bytes":  p.burst_width,
    })


def dma_errors_layout(p: EngineParams):
    """Sticky error bits of the DMA (bit order = register bit order).

    ``bad_program``, ``bad_range``, ``bad_pitch`` and ``desc_busy`` are the four ways a
    descriptor write is refused (the table is unchanged); exactly one of them is set per
    refused write, :func:`~t3hw.spec.contract.csr_verdict_delay` cycles after the write."""
    return data.StructLayout({
        #: A trigger found its descriptor invalid (the trigger is dropped).
        "bad_descriptor": 1,
        #: A descriptor write with ``valid = 1`` and 0 rows or 0 bytes per row (refused).
        "bad_program":    1,
        #: A read response with no read outstanding (dropped) or with a tag other than the
        #: oldest outstanding read's (its descriptor is aborted).
        "bad_response":   1,
        #: A descriptor write whose source or destination range wraps past
        #: ``2**addr_width`` (refused).
        "bad_range":      1,
        #: A descriptor write with more than one row and ``pitch < row_bytes`` (refused).
        "bad_pitch":      1,
        #: A write to a descriptor in use by an accepted trigger that the DMA has not started
        #: yet (refused).
        "desc_busy":      1,
        #: A read response with its ``error`` bit set (its descriptor is aborted).
        "read_error":     1,
    })


def dma_capture_layout(p: EngineParams):
    """Details of the DMA's error events, shown by its ``capture`` output in the cycle its
    ``errors`` output shows the events: the descriptor index concerned, a tile and the address
    concerned. A refused descriptor write: its index, its ``tile`` field and its ``src``. A
    trigger of an invalid descriptor: its ``cmd``, its ``tile``, address 0. A read response
    (``bad_response``, ``read_error``): the descriptor of the oldest outstanding read, that
    descriptor's ``tile`` and the read's address (all 0 when no read was outstanding)."""
    return data.StructLayout({
        "index": p.cmd_width,
        "tile":  p.tile_width,
        "addr":  p.addr_width,
    })


def dma_stats_layout(p: EngineParams):
    """Statistics counters of the DMA (all ``counter_width`` bits, wrapping)."""
    w = p.counter_width
    return data.StructLayout({
        "triggers":    w,   # triggers whose descriptor index entered the ready queue
        "rejected":    w,   # triggers that found the descriptor invalid
        "reads":       w,   # comm-stream read requests transferred
        "packets":     w,   # network packets transferred
        "bad_program": w,   # descriptor writes refused with bad_program
        "bad_range":   w,   # descriptor writes refused with bad_range
        "bad_pitch":   w,   # descriptor writes refused with bad_pitch
        "desc_busy":   w,   # descriptor writes refused with desc_busy
        "aborted":     w,   # descriptors aborted by a bad read response
    })


def store_layout(p: EngineParams):
    """A producer (GPU core) store of ``bytes`` (1 .. ``burst_bytes``) to ``addr``.

    ``tile`` is the tile (workgroup) id it carries; ``kind`` is what local memory does.
    """
    return data.StructLayout({
        "addr":  p.addr_width,
        "tile":  p.tile_width,
        "bytes": p.burst_width,
        "kind":  WriteKind,
    })


def mem_store_layout(p: EngineParams):
    """A store to the local memory controller; ``tracked`` asks the tracker to count it."""
    return data.StructLayout({**store_layout(p).members, "tracked": 1})


def region_layout(p: EngineParams):
    """One address-map region: ``[base, base + size)``; ``REMOTE`` regions send the store
    to ``device`` at ``remote_base + (addr - base)``."""
    return data.StructLayout({
        "valid":       1,
        "mode":        RegionMode,
        "device":      p.device_width,
        "base":        p.addr_width,
        "size":        p.addr_width,
        "remote_base": p.addr_width,
    })


def region_program_layout(p: EngineParams):
    """A region table write (from the register block): the index, then the region's fields.
    ``valid = 0`` removes the region (always accepted)."""
    return data.StructLayout({"index": p.region_index_width, **region_layout(p).members})


def addrmap_errors_layout(p: EngineParams):
    """Sticky error bits of the address map (bit order = register bit order).

    The first two are region writes (rejected, the table unchanged); the others are stores
    and received packets refused: consumed, nothing written or sent, each counted in the
    counter of the same name (:func:`addrmap_stats_layout`). A received packet sets exactly
    one ``rx_*`` bit, the first that applies in the order below."""
    return data.StructLayout({
        #: A region write with size 0, an end past the top of the address space, or an
        #: unknown mode (rejected).
        "bad_region":    1,
        #: A region write overlapping another valid region (rejected).
        "overlap":       1,
        #: A store that starts in a region and ends past it (``addr + bytes > base +
        #: size``), whatever the region's mode (refused). A store in no region is not
        #: checked (it goes to local memory, ``unmapped``).
        "store_crosses": 1,
        #: A received packet for another device (``device != device_id``) (refused).
        "rx_misrouted":  1,
        #: A received packet whose address lies in a ``REMOTE`` region, this GPU's own send
        #: window (refused).
        "rx_remote":     1,
        #: A received packet whose address lies in no ``LOCAL`` or ``TRACKED`` region (and
        #: in no ``REMOTE`` one) (refused).
        "rx_unmapped":   1,
        #: A received packet that starts in a ``LOCAL`` or ``TRACKED`` region and ends past
        #: it (``addr + bytes > base + size``) (refused).
        "rx_crosses":    1,
    })


def addrmap_capture_layout(p: EngineParams):
    """Details of the address map's error events, shown by its ``capture`` output in the
    cycle its ``errors`` output shows the events: the address, device and tile of the store
    or received packet concerned (or of the region write: its base and device).

    A refused store gives its address, its region's ``device`` and its tile; a refused
    packet its address, ``device`` and tile as received; a rejected region write its
    ``base``, its ``device`` and tile 0. When events coincide, a store's wins over a
    packet's, which wins over a region write's."""
    return data.StructLayout({
        "addr":   p.addr_width,
        "device": p.device_width,
        "tile":   p.tile_width,
    })


def addrmap_stats_layout(p: EngineParams):
    """Statistics counters of the address map (all ``counter_width`` bits, wrapping). The
    refusals are counted under the name of their error bit (:func:`addrmap_errors_layout`)."""
    w = p.counter_width
    return data.StructLayout({
        "local":         w,   # stores to LOCAL regions
        "tracked":       w,   # stores to TRACKED regions
        "remote":        w,   # stores to REMOTE regions (sent as update packets)
        "unmapped":      w,   # stores matching no region (sent to local memory, untracked)
        "store_crosses": w,   # stores refused: they cross their region's end
        "rx_misrouted":  w,   # packets refused: for another device
        "rx_remote":     w,   # packets refused: in a REMOTE region
        "rx_unmapped":   w,   # packets refused: in no LOCAL or TRACKED region
        "rx_crosses":    w,   # packets refused: they cross their region's end
    })


# --- register block (t3hw/hw/csr.py; the register map is t3hw/spec/regmap.py) ------------------------
# Defined in t3hw/spec/csr_layouts.py (this module would be too long), exported from here.

from .csr_layouts import (CsrCommand, csr_command_layout, csr_config_layout,  # noqa: E402
                          csr_device_id_layout, csr_errors_layout, csr_id_layout,
                          csr_status_layout)

__all__ += [
    "CsrCommand", "csr_id_layout", "csr_config_layout", "csr_status_layout",
    "csr_command_layout", "csr_errors_layout", "csr_device_id_layout",
]


# --- arbiter (t3hw/hw/arbiter.py) and engine ports (t3hw/hw/engine.py) -----------------------------
# Defined in t3hw/spec/arbiter_layouts.py (this module would be too long), exported from here.

from .arbiter_layouts import (MCA_POLICIES, ArbPolicy, MemOp,  # noqa: E402
                              WINDOW_LOG2_WIDTH,
                              arbiter_config_layout, arbiter_errors_layout,
                              arbiter_stats_layout, arbiter_status_layout, load_layout,
                              load_response_layout, mem_request_layout, mem_response_layout)

__all__ += [
    "ArbPolicy", "MemOp", "load_layout", "load_response_layout", "mem_request_layout",
    "mem_response_layout", "arbiter_config_layout", "arbiter_status_layout",
    "arbiter_errors_layout", "arbiter_stats_layout", "WINDOW_LOG2_WIDTH", "MCA_POLICIES",
]
