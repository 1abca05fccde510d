# SPDX-License-Identifier: Apache-2.0
"""Parameters of the HBM2 timing model (:mod:`sim_models.hbm`): organisation, JEDEC timings
in DRAM clock cycles, controller queues, address mapping.

Every default and its public source is listed in ``docs/dram.md``.
"""

from dataclasses import dataclass, fields
from functools import cached_property
from fractions import Fraction


__all__ = ["FIELDS", "HbmParams"]


#: Address-mapping field names: channel, pseudo-channel, bank group, column, bank, row.
FIELDS = ("ch", "pc", "bg", "co", "ba", "ro")


#: (name, low, high) of every integer parameter.
_RANGES = (
    ("channels", 1, 1024), ("pseudo_channels", 1, 2), ("bank_groups", 1, 16),
    ("banks_per_group", 1, 16), ("rows", 1, 1 << 20), ("row_bytes", 32, 1 << 16),
    ("burst_bytes", 8, 1024), ("interleave_bytes", 8, 1 << 16), ("tck_ps", 100, 100000),
    ("tbl", 1, 64), ("tcl", 1, 200), ("tcwl", 1, 200), ("trcd_rd", 1, 200),
    ("trcd_wr", 1, 200), ("trp", 1, 200), ("tras", 1, 500), ("trc", 1, 1000),
    ("tccd_s", 1, 64), ("tccd_l", 1, 64), ("trrd_s", 1, 64), ("trrd_l", 1, 64),
    ("tfaw", 1, 500), ("twtr_s", 1, 200), ("twtr_l", 1, 200), ("trtw", 1, 200),
    ("trtp", 1, 200), ("twr", 1, 200), ("trfc", 1, 10000), ("trefi", 2, 1000000),
    ("talu", 0, 200), ("read_queue", 1, 4096), ("write_queue", 1, 4096),
    ("write_high", 1, 4096), ("write_low", 0, 4096), ("row_hit_cap", 1, 1 << 20),
)


def _pow2(x):
    return x > 0 and not x & (x - 1)


@dataclass(frozen=True)
class HbmParams:
    """Organisation, timings (DRAM clock cycles) and controller of the HBM2 model.

    Defaults: four HBM2 stacks at 2 Gb/s per pin (1.024 TB/s), the timings of Ramulator 2's
    ``HBM2_2000Mbps`` preset and ``HBM2_4Gb`` organisation, Ramulator 2's controller queue
    sizes and write watermarks; each figure's source is in ``docs/dram.md``.

    Attributes
    ----------
    channels, pseudo_channels, bank_groups, banks_per_group, rows : int
        Organisation (32, 2, 4, 4, 32768); all powers of two.
    row_bytes : int
        Row (page) of one pseudo-channel bank, bytes (1024).
    burst_bytes : int
        Bytes of one column burst (32: 64-bit pseudo-channel, BL4).
    interleave_bytes : int
        Granule kept in one bank row, the unit of scheduling (256).
    mapping : tuple of str
        :data:`FIELDS` in order from the least significant address bits above the granule.
    tck_ps : int
        DRAM clock period, ps (1000).
    clock_ghz : float
        The caller's clock (1.4: the GPU's), in which the API counts cycles.
    tbl, tcl, tcwl, trcd_rd, trcd_wr, trp, tras, trc : int
        Burst (data-bus cycles), read and write latency, ACT to RD/WR, PRE to ACT, ACT to
        PRE, ACT to ACT in one bank.
    tccd_s, tccd_l, trrd_s, trrd_l, tfaw : int
        Column to column and ACT to ACT in different (_s) / the same (_l) bank group; the
        window of four ACTs.
    twtr_s, twtr_l, trtw, trtp, twr : int
        Write to read after the write data (different / same bank group); read to write
        command; read to PRE; write recovery (end of write data to PRE).
    trfc, trefi : int
        All-bank refresh cycle and interval.
    talu : int
        Near-bank ALU add latency of an UPDATE (an assumption, ``docs/dram.md``).
    read_queue, write_queue : int
        Accesses each PC's queues hold.
    write_high, write_low : int
        Write-drain watermarks, accesses (``write_low < write_high <= write_queue``).
    row_hit_cap : int
        Row hits served after an activation before an older miss may close the row.
    """

    channels:         int = 32
    pseudo_channels:  int = 2
    bank_groups:      int = 4
    banks_per_group:  int = 4
    rows:             int = 32768
    row_bytes:        int = 1024
    burst_bytes:      int = 32
    interleave_bytes: int = 256
    mapping:          tuple = ("ch", "pc", "bg", "co", "ba", "ro")
    tck_ps:           int = 1000
    clock_ghz:        float = 1.4
    tbl:              int = 2
    tcl:              int = 14
    tcwl:             int = 5
    trcd_rd:          int = 14
    trcd_wr:          int = 12
    trp:              int = 14
    tras:             int = 34
    trc:              int = 48
    tccd_s:           int = 2
    tccd_l:           int = 4
    trrd_s:           int = 4
    trrd_l:           int = 4
    tfaw:             int = 15
    twtr_s:           int = 6
    twtr_l:           int = 8
    trtw:             int = 13
    trtp:             int = 5
    twr:              int = 16
    trfc:             int = 260
    trefi:            int = 3900
    talu:             int = 4
    read_queue:       int = 32
    write_queue:      int = 32
    write_high:       int = 26
    write_low:        int = 6
    row_hit_cap:      int = 16

    def __post_init__(self):
        for name, low, high in _RANGES:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low or v > high:
                raise ValueError(f"{name} must be an integer in [{low}, {high}], not {v!r}")
        for name in ("channels", "pseudo_channels", "bank_groups", "banks_per_group", "rows",
                     "row_bytes", "burst_bytes", "interleave_bytes"):
            if not _pow2(getattr(self, name)):
                raise ValueError(f"{name} must be a power of two, not {getattr(self, name)!r}")
        if not self.burst_bytes <= self.interleave_bytes <= self.row_bytes:
            raise ValueError(f"interleave_bytes must be in [burst_bytes={self.burst_bytes}, "
                             f"row_bytes={self.row_bytes}], not {self.interleave_bytes!r}")
        if not isinstance(self.mapping, tuple) or sorted(self.mapping) != sorted(FIELDS):
            raise ValueError(f"mapping must be a tuple ordering each of {FIELDS} once, "
                             f"not {self.mapping!r}")
        if isinstance(self.clock_ghz, bool) or not isinstance(self.clock_ghz, (int, float)) \
                or not 0.01 <= self.clock_ghz <= 100:
            raise ValueError(f"clock_ghz must be a number in [0.01, 100], not {self.clock_ghz!r}")
        if self.trc < self.tras + self.trp:
            raise ValueError(f"trc must be in [tras + trp = {self.tras + self.trp}, 1000], "
                             f"not {self.trc!r}")
        if self.trefi <= self.trfc:
            raise ValueError(f"trefi must be in [trfc + 1 = {self.trfc + 1}, 1000000], "
                             f"not {self.trefi!r}")
        if self.write_high > self.write_queue:
            raise ValueError(f"write_high must be in [1, write_queue={self.write_queue}], "
                             f"not {self.write_high!r}")
        if self.write_low >= self.write_high:
            raise ValueError(f"write_low must be in [0, write_high - 1 = {self.write_high - 1}]"
                             f", not {self.write_low!r}")

    def replace(self, **changes):
        """A copy with ``changes`` applied (validated)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return HbmParams(**values)

    @property
    def n_pcs(self):
        """Pseudo-channels in all: the controllers."""
        return self.channels * self.pseudo_channels

    @property
    def banks(self):
        """Banks per pseudo-channel."""
        return self.bank_groups * self.banks_per_group

    @property
    def slot(self):
        """Column-command grid, DRAM cycles: ``max(tbl, tccd_s)``."""
        return max(self.tbl, self.tccd_s)

    @property
    def lanes(self):
        """Interleaved column lanes per PC: ``ceil(tccd_l / slot)``."""
        return -(-self.tccd_l // self.slot)

    @property
    def ratio(self):
        """DRAM cycles per caller cycle, exact."""
        return Fraction(1000, self.tck_ps) / Fraction(str(self.clock_ghz))

    @property
    def peak_gbs(self):
        """Pin bandwidth, GB/s: every PC moving one burst per ``slot``."""
        return self.n_pcs * self.burst_bytes / self.slot * 1000 / self.tck_ps

    @property
    def peak_bytes_per_cycle(self):
        """Pin bandwidth in bytes per caller cycle."""
        return self.peak_gbs / self.clock_ghz

    @property
    def refresh_efficiency(self):
        """Fraction of time a PC is not refreshing: ``1 - trfc / trefi``."""
        return 1 - self.trfc / self.trefi

    @cached_property
    def fields_at(self):
        """``{field: (shift, mask)}`` of the address mapping (module :data:`FIELDS`)."""
        sizes = {"ch": self.channels, "pc": self.pseudo_channels, "bg": self.bank_groups,
                 "co": self.row_bytes // self.interleave_bytes, "ba": self.banks_per_group,
                 "ro": self.rows}
        out, shift = {}, (self.interleave_bytes - 1).bit_length()
        for name in self.mapping:
            out[name] = (shift, sizes[name] - 1)
            shift += (sizes[name] - 1).bit_length()
        return out

    def decode(self, addr):
        """``{field: value}`` of byte address ``addr``, plus ``"offset"`` in the granule."""
        out = {name: (addr >> s) & m for name, (s, m) in self.fields_at.items()}
        out["offset"] = addr % self.interleave_bytes
        return out

    def address(self, offset=0, **values):
        """The byte address with the given field values (missing fields 0): the inverse of
        :meth:`decode`."""
        addr = offset
        for name, v in values.items():
            s, m = self.fields_at[name]
            if not 0 <= v <= m:
                raise ValueError(f"{name} must be in [0, {m}], not {v!r}")
            addr |= v << s
        return addr
