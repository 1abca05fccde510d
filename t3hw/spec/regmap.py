# SPDX-License-Identifier: Apache-2.0
"""The register map of the register block (:mod:`t3hw.hw.csr`), defined once.

:data:`SECTIONS` lists the register groups; everything else is derived from it and from the
layouts of :mod:`t3hw.spec.layouts`: the RTL's decoder (:class:`t3hw.hw.csr.Csr`), the Python driver
(:mod:`t3hw.sw.driver`), the register-file model (:mod:`sim_models.csr`), the C header
``rtl/t3hw_regs.h`` (:meth:`RegisterMap.c_header`) and the SystemRDL export
``rtl/t3hw_regs.rdl`` (:func:`t3hw.tools.rdl.systemrdl`), from whose compiled model
``docs/registers.md`` and ``rtl/t3hw_regs_peakrdl.h`` are made. No bit offset is typed
anywhere.

Rules
-----
* Registers are 32 bits wide, at byte addresses that are multiples of 4.
* Each section starts at a multiple of :data:`SECTION_BYTES` and spans as many windows of
  :data:`SECTION_BYTES` as its groups need with the widest parameters (every parameter at the
  top of :data:`~t3hw.spec.params.PARAM_RANGES`): one, except ``arbiter_stats`` (nine counters,
  18 registers when they are 64 bits wide). So every section has the same base address for
  every parameter set, and a section's registers keep their addresses when the parameters
  change the size of another section.
* A group is one layout. Its fields are placed, in layout order, into consecutive registers:
  a field of at most 32 bits goes into the current register if it fits there, else it starts
  the next one; a wider field takes whole registers of its own (low bits first, the
  registers named ``..._LO`` and ``..._HI``). A group of one register is named after the
  group; otherwise each register is named ``<group>_<its first field>``.
* Bits of a register outside its fields read as 0 and are ignored on write.
* A counter wider than 32 bits is read ``_LO`` first: that read latches its high word, which
  the ``_HI`` register returns (:meth:`RegisterMap.shadowed`), so the pair is one snapshot.
* New groups go after the old ones of their section, new sections after the old sections,
  so no address moves: ``DEVICE_ID`` and ``TRACK_RESULT`` were appended to their sections,
  the interrupt enables (:data:`IRQ_ENABLES`) and the first-error captures
  (:data:`CAPTURES`) are the last sections.
* Staging registers reset to 0, except those of :data:`STAGING_RESET` (``ARB``: the
  arbiter's configuration after reset), which reset to parameters (:meth:`RegisterMap.reset`).
"""

import enum
import functools
import re
from dataclasses import dataclass, field

from amaranth.lib import data
from amaranth.lib import enum as am_enum

from .contract import arbiter_reset_config
from .layouts import (Codec, addrmap_capture_layout, addrmap_errors_layout, addrmap_stats_layout,
                      arbiter_config_layout, arbiter_errors_layout, arbiter_stats_layout,
                      arbiter_status_layout, csr_command_layout, csr_config_layout,
                      csr_device_id_layout, csr_errors_layout, csr_id_layout, csr_status_layout,
                      dma_capture_layout, dma_errors_layout, dma_program_layout, dma_stats_layout,
                      program_layout, region_program_layout, tracker_capture_layout,
                      tracker_errors_layout, tracker_result_layout, tracker_stats_layout)
from .params import PARAM_RANGES, EngineParams, check_params


__all__ = ["Access", "Field", "Register", "Group", "RegisterMap", "SECTIONS", "SECTION_BYTES",
           "STAGING_RESET", "MAGIC", "WORD_BITS", "C_ENUM_PREFIX", "ERRORS", "COUNTERS",
           "CAPTURES", "IRQ_ENABLES", "capture_layout", "place_group"]


#: C prefixes of the enums whose default prefix (the class name in upper snake case) is a
#: register's name: ``TrackOp`` and ``ArbPolicy`` would share ``T3HW_TRACK_OP_*`` and
#: ``T3HW_ARB_POLICY_*`` with the registers whose fields they type, so their values are
#: ``T3HW_TRACKER_OP_ARM``, ``T3HW_ARBITER_POLICY_T3_MCA``, ... (``TrackResult``'s would be
#: the register group ``TRACK_RESULT``'s: ``T3HW_TRACKER_RESULT_BUSY``).
C_ENUM_PREFIX = {"TrackOp": "TRACKER_OP", "TrackResult": "TRACKER_RESULT",
                 "ArbPolicy": "ARBITER_POLICY"}


#: Bits of a register (and of the bus data).
WORD_BITS = 32

#: Bytes of the address window of one section.
SECTION_BYTES = 0x40

#: The value of ``ID.magic``: "T3HW" in ASCII.
MAGIC = 0x54334857


class Access(enum.Enum):
    """How software may access a register."""
    #: Read only. A write is ignored and sets ``CSR_ERRORS.read_only``.
    RO  = "ro"
    #: Read and write (staging registers).
    RW  = "rw"
    #: Read; writing 1 to a bit clears it (sticky error bits). A bit set by an event in the
    #: cycle of its clear stays set.
    W1C = "w1c"
    #: Write only (a command); reads as 0.
    WO  = "wo"


#: The blocks whose sticky errors the register block keeps, and their error groups
#: (``<BLOCK>_ERRORS``); ``CSR`` is the register block itself.
ERRORS = {"csr": "CSR_ERRORS", "tracker": "TRACKER_ERRORS", "dma": "DMA_ERRORS",
          "addrmap": "ADDRMAP_ERRORS", "arbiter": "ARBITER_ERRORS"}

#: The counter groups (wrapping counters of each target), by target.
COUNTERS = {"tracker": "TRACKER", "dma": "DMA", "addrmap": "ADDRMAP", "arbiter": "ARBITER"}

#: The first-error capture groups, by target: the target's capture layout and the events
#: that loaded it (:func:`capture_layout`).
CAPTURES = {"tracker": "TRACKER_CAPTURE", "dma": "DMA_CAPTURE", "addrmap": "ADDRMAP_CAPTURE"}

#: The interrupt enable groups, by error group: the error group's layout, one enable per bit.
IRQ_ENABLES = {g: f"{block.upper()}_IRQ_ENABLE" for block, g in ERRORS.items()}


def capture_layout(capture, errors):
    """The layout factory of a first-error capture group: the fields of the block's capture
    layout (``capture(p)``), then ``events``: its errors layout (``errors(p)``), the error
    events of the capturing cycle."""
    def factory(p):
        return data.StructLayout({**capture(p).members, "events": errors(p)})
    factory.__name__ = f"{capture.__name__}_with_events"
    return factory


#: The register map: ``(section, ((group, layout factory, access, description), ...))``.
SECTIONS = (
    ("control", (
        ("ID",      csr_id_layout,      Access.RO,
         f"Identification: `magic` reads {MAGIC:#010x} (\"T3HW\")."),
        ("CONFIG",  csr_config_layout,  Access.RO,
         "Parameters of the hardware, for the driver to check against its own."),
        ("STATUS",  csr_status_layout,  Access.RO,
         "Busy flags of the blocks and of the commands in progress."),
        ("COMMAND", csr_command_layout, Access.WO,
         "Writing a `CsrCommand` commits or loads a staging group."),
        ("DEVICE_ID", csr_device_id_layout, Access.RW,
         "This engine's device number (`device_id` output): the address map refuses "
         "received packets for another device."),
    )),
    ("errors", (
        ("CSR_ERRORS",     csr_errors_layout,     Access.W1C,
         "Sticky errors of the register block itself."),
        ("TRACKER_ERRORS", tracker_errors_layout, Access.W1C, "Sticky errors of the tracker."),
        ("DMA_ERRORS",     dma_errors_layout,     Access.W1C, "Sticky errors of the DMA."),
        ("ADDRMAP_ERRORS", addrmap_errors_layout, Access.W1C,
         "Sticky errors of the address map."),
        ("ARBITER_ERRORS", arbiter_errors_layout, Access.W1C, "Sticky errors of the arbiter."),
    )),
    ("region", (
        ("REGION", region_program_layout, Access.RW,
         "Staged address-map region write (REGION_WRITE), or region read back (REGION_READ)."),
    )),
    ("desc", (
        ("DESC", dma_program_layout, Access.RW,
         "Staged DMA descriptor write (DESC_WRITE), or descriptor read back (DESC_READ)."),
    )),
    ("track", (
        ("TRACK", program_layout, Access.RW, "Staged tracker request (TRACK_WRITE)."),
        ("TRACK_RESULT", tracker_result_layout, Access.RO,
         "The tracker's answer to the last TRACK_WRITE: its verdict (`TrackResult`) and the "
         "entry's state (a READ's read-back)."),
    )),
    ("tracker_stats", (
        ("TRACKER", tracker_stats_layout, Access.RO, "Tracker counters (wrapping)."),
    )),
    ("dma_stats", (
        ("DMA", dma_stats_layout, Access.RO, "DMA counters (wrapping)."),
    )),
    ("addrmap_stats", (
        ("ADDRMAP", addrmap_stats_layout, Access.RO, "Address-map counters (wrapping)."),
    )),
    ("arbiter", (
        ("ARB",        arbiter_config_layout, Access.RW,
         "Staged arbiter configuration (ARB_WRITE)."),
        ("ARB_STATUS", arbiter_status_layout, Access.RO,
         "What the arbiter uses: its policy and T3-MCA threshold in effect."),
    )),
    ("arbiter_stats", (
        ("ARBITER", arbiter_stats_layout, Access.RO, "Arbiter counters (wrapping)."),
    )),
    ("irq", tuple(
        (IRQ_ENABLES[g], factory, Access.RW,
         f"Interrupt enables of {g}: the `irq` output is high while a bit of {g} whose "
         f"enable is set is high.")
        for g, factory in (("CSR_ERRORS", csr_errors_layout),
                           ("TRACKER_ERRORS", tracker_errors_layout),
                           ("DMA_ERRORS", dma_errors_layout),
                           ("ADDRMAP_ERRORS", addrmap_errors_layout),
                           ("ARBITER_ERRORS", arbiter_errors_layout)))),
    ("capture", tuple(
        (CAPTURES[block], capture_layout(capture, errors), Access.RO,
         f"First error of the {name}: the details of the error events that arrived while "
         f"{block.upper()}_ERRORS was all clear (`events`: those events); held until the "
         f"next such event.")
        for block, name, capture, errors in (
            ("tracker", "tracker", tracker_capture_layout, tracker_errors_layout),
            ("dma", "DMA", dma_capture_layout, dma_errors_layout),
            ("addrmap", "address map", addrmap_capture_layout, addrmap_errors_layout)))),
)

#: Staging groups whose fields reset to parameters instead of 0: ``{group: function of the
#: EngineParams giving the fields}``. ``ARB`` resets to the arbiter's configuration after
#: reset (:func:`t3hw.spec.contract.arbiter_reset_config`), so that it reads the configuration in effect
#: until software changes it.
STAGING_RESET = {"ARB": arbiter_reset_config}


@dataclass(frozen=True)
class Field:
    """Bits ``[offset, offset + width)`` of a register hold bits ``[bit, bit + width)`` of
    its group's layout value, which are bits ``[lsb, lsb + width)`` of layout field ``name``."""
    name:   str
    offset: int
    width:  int
    bit:    int
    lsb:    int

    @property
    def mask(self):
        """The field's bits in the register."""
        return ((1 << self.width) - 1) << self.offset


@dataclass(frozen=True)
class Register:
    """One 32-bit register."""
    name:   str
    addr:   int
    access: Access
    group:  str
    fields: tuple

    @property
    def mask(self):
        """The register's defined bits."""
        return sum(f.mask for f in self.fields)

    def extract(self, value):
        """This register's word, from its group's packed layout value."""
        return sum(((value >> f.bit) & ((1 << f.width) - 1)) << f.offset for f in self.fields)

    def insert(self, value, word):
        """The group's packed layout ``value`` with this register's bits taken from ``word``."""
        for f in self.fields:
            value = (value & ~(((1 << f.width) - 1) << f.bit)) \
                | (((word >> f.offset) & ((1 << f.width) - 1)) << f.bit)
        return value


@dataclass(frozen=True)
class Group:
    """A layout spread over consecutive registers."""
    name:      str
    layout:    object
    access:    Access
    doc:       str
    registers: tuple
    codec:     Codec = field(compare=False)


def place_group(name, layout, access, base):
    """The registers of one group, at ``base`` onward (the placement rule of the module)."""
    words = []                          # [(register name suffix, [Field arguments])]
    used = WORD_BITS                    # bits used in the last word
    for fname, member in layout:
        if member.width > 2 * WORD_BITS:
            raise ValueError(f"field {fname!r} of {name} must be at most {2 * WORD_BITS} bits "
                             f"wide, not {member.width}")
        if member.width > WORD_BITS:
            for half, lsb in (("_LO", 0), ("_HI", WORD_BITS)):
                words.append((fname.upper() + half, [(fname, 0, min(WORD_BITS,
                              member.width - lsb), member.offset + lsb, lsb)]))
            used = WORD_BITS
        else:
            if used + member.width > WORD_BITS:
                words.append((fname.upper(), []))
                used = 0
            words[-1][1].append((fname, used, member.width, member.offset, 0))
            used += member.width
    return [Register(name=name if len(words) == 1 else f"{name}_{suffix}", addr=base + 4 * n,
                     access=access, group=name, fields=tuple(Field(*c) for c in chunks))
            for n, (suffix, chunks) in enumerate(words)]


@functools.cache
def _section_windows():
    """Windows of :data:`SECTION_BYTES` of each section of :data:`SECTIONS`: as many as its
    groups need with every parameter at the top of its range (every layout is widest there)."""
    widest = EngineParams().replace(**{name: high for name, (_, high) in PARAM_RANGES.items()})
    return tuple(-(-sum(4 * len(place_group(name, factory(widest), access, 0))
                        for name, factory, access, _ in groups) // SECTION_BYTES)
                 for _, groups in SECTIONS)


class RegisterMap:
    """The register map for one parameter set.

    Parameters
    ----------
    params : EngineParams

    Attributes
    ----------
    groups : dict of str to Group
        In address order.
    registers : list of Register
        In address order.
    by_name, by_addr : dict
        Registers by name and by byte address.
    addr_width : int
        Width of the bus's byte address.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        check_params(params)
        self.params = params
        self.groups, self.registers = {}, []
        base = 0
        for (section, groups), windows in zip(SECTIONS, _section_windows()):
            addr, end = base, base + windows * SECTION_BYTES
            for name, factory, access, doc in groups:
                layout = factory(params)
                regs = place_group(name, layout, access, addr)
                addr += 4 * len(regs)
                if addr > end:
                    raise ValueError(f"section {section!r} must fit in {end - base} bytes; "
                                     f"{params} needs {addr - base}")
                self.groups[name] = Group(name, layout, access, doc, tuple(regs), Codec(layout))
                self.registers.extend(regs)
            base = end
        self.by_name = {r.name: r for r in self.registers}
        self.by_addr = {r.addr: r for r in self.registers}
        self.addr_width = (base - 1).bit_length()

    # -- values ----------------------------------------------------------------------------
    def constant(self, group):
        """Fields of the constant group ``"ID"`` or ``"CONFIG"`` (whose fields are named after
        :class:`~t3hw.spec.params.EngineParams` attributes)."""
        if group == "ID":
            return {"magic": MAGIC}
        if group == "CONFIG":
            return {name: getattr(self.params, name) for name in self.groups[group].codec.names}
        raise ValueError(f"group must be 'ID' or 'CONFIG', not {group!r}")

    def reset(self, group):
        """Fields of the read-write group ``group`` after reset: 0, or what
        :data:`STAGING_RESET` gives (``ARB``: the arbiter's configuration after reset)."""
        staging = [name for name, g in self.groups.items() if g.access == Access.RW]
        if group not in staging:
            raise ValueError(f"group must be one of {staging}, not {group!r}")
        fields = STAGING_RESET[group](self.params) if group in STAGING_RESET else {}
        return {name: fields.get(name, 0) for name in self.groups[group].codec.names}

    def split(self, group, value):
        """A group's packed layout value to ``[(Register, word)]``, one per register."""
        return [(r, r.extract(value)) for r in self.groups[group].registers]

    def join(self, group, words):
        """``{register name: word}`` of all of a group's registers to its packed value."""
        value = 0
        for r in self.groups[group].registers:
            value = r.insert(value, words[r.name])
        return value

    def encode(self, group, **fields):
        """Field values (ints or enum members, missing = 0) to ``[(Register, word)]``."""
        return self.split(group, self.groups[group].codec.pack(**fields))

    def decode(self, group, words):
        """``{register name: word}`` of a group to ``{field: int}``."""
        return self.groups[group].codec.unpack(self.join(group, words))

    def reset_value(self, group):
        """The group's packed value after reset, or ``None`` where the map defines none:
        the constants of ``ID`` and ``CONFIG``, the reset value of the RW groups, 0 for
        sticky errors (W1C), counters, captures and ``TRACK_RESULT``; ``STATUS``,
        ``ARB_STATUS`` (driven by the hardware) and ``COMMAND`` have none."""
        g = self.groups[group]
        if group in ("ID", "CONFIG"):
            return g.codec.pack(**self.constant(group))
        if g.access == Access.RW:
            return g.codec.pack(**self.reset(group))
        if (g.access == Access.W1C or group in COUNTERS.values() or group in CAPTURES.values()
                or group == "TRACK_RESULT"):
            return 0
        return None

    def shadowed(self):
        """The counters read atomically: ``{_LO register name: _HI register name}`` of every
        counter wider than 32 bits. A read of the ``_LO`` register latches the counter's
        high word into a shadow, which the ``_HI`` register reads."""
        pairs = {}
        for group in COUNTERS.values():
            regs = self.groups[group].registers
            for lo, hi in zip(regs, regs[1:]):
                if lo.name.endswith("_LO") and hi.name == lo.name[:-3] + "_HI":
                    pairs[lo.name] = hi.name
        return pairs

    # -- generated documents ---------------------------------------------------------------
    def enums(self):
        """Enumerations used by the fields of the map, in order of first use:
        ``{name: enum type}`` (the C header and the SystemRDL export list them)."""
        found = {}
        for g in self.groups.values():
            for _, member in g.layout:
                if isinstance(member.shape, am_enum.EnumType):
                    found.setdefault(member.shape.__name__, member.shape)
        return found

    def c_header(self, *, first_line):
        """The C header: addresses, field shifts, widths and masks, enum values."""
        p = self.params

        def macro(name, value):
            return f"#define T3HW_{name:<44} {value}\n"

        out = [first_line, "/* Register map of t3hw_csr for: "
               + ", ".join(f"{k}={v}" for k, v in p.to_dict().items()) + ". */\n",
               "/* 32-bit registers at byte addresses; see docs/registers.md. */\n",
               "#ifndef T3HW_REGS_H\n#define T3HW_REGS_H\n\n"]
        out.append(macro("ADDR_WIDTH", f"{self.addr_width}u"))
        out.append(macro("MAGIC", f"{MAGIC:#010x}u"))
        for name, value in p.to_dict().items():
            out.append(macro(f"PARAM_{name.upper()}", f"{value}u"))
        registers = {r.name for g in self.groups.values() for r in g.registers}
        for ename, enum_type in self.enums().items():
            out.append(f"\n/* enum {ename} */\n")
            prefix = C_ENUM_PREFIX.get(ename, re.sub(r"(?<!^)(?=[A-Z])", "_", ename).upper())
            if prefix in registers:
                raise ValueError(f"the C prefix {prefix!r} of enum {ename} is also a register's "
                                 f"name; give the enum its own in C_ENUM_PREFIX")
            for member in enum_type:
                out.append(macro(f"{prefix}_{member.name}", f"{member.value}u"))
        for g in self.groups.values():
            out.append(f"\n/* {g.name} ({g.access.value}): {g.doc} */\n")
            for r in g.registers:
                out.append(macro(r.name, f"{r.addr:#05x}u"))
                for f in r.fields:
                    stem = f"{r.name}_{f.name.upper()}"
                    out.append(macro(f"{stem}_SHIFT", f"{f.offset}u"))
                    out.append(macro(f"{stem}_WIDTH", f"{f.width}u"))
                    out.append(macro(f"{stem}_MASK", f"{f.mask:#010x}u"))
        out.append("\n#endif /* T3HW_REGS_H */\n")
        names = [line.split()[1] for line in out if line.startswith("#define T3HW_")]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"C header macros defined twice: {', '.join(twice)}")
        return "".join(out)
