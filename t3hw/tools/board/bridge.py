# SPDX-License-Identifier: Apache-2.0
"""The UART register bridge and the address space behind it.

* :class:`UARTBridge`: a byte protocol from a host to a register bus
  (:class:`~t3hw.hw.csr.BusSignature`), with sticky error bits the host sees in every reply.
* :class:`BoardMap`: that bus's address space: the engine's registers, then the board's
  register window (:data:`BOARD_GROUPS`).

The protocol (every multi-byte value little-endian; ``A = ceil(addr_width / 8)`` address
bytes, ``addr_width`` = :attr:`BoardMap.addr_width`, 11 for the default parameters):

==========  ===========================  =============================================
command     bytes from the host          reply
==========  ===========================  =============================================
write       ``'W'``, A address, 4 data   status
read        ``'R'``, A address           4 data, status
status      ``'S'``                      status
clear       ``'C'``                      status (after clearing the sticky bits)
==========  ===========================  =============================================

The status byte is ``0xA0 | errors``: the high nibble ``0b1010`` marks a reply, the low
nibble holds the sticky error bits of :func:`bridge_errors_layout` (``bad_command``: a command
byte that is none of the four, ignored; ``framing``: a byte whose stop bit was low, dropped;
``overrun``: a byte that arrived while the bridge was busy, dropped; ``timeout``: a command
whose arguments stopped arriving for ``timeout`` bit times, discarded). They stay set until a
``'C'``. A host sends a command only after the previous reply has arrived in full (the bridge
holds one received byte while it answers); :class:`~t3hw.tools.board.host.SerialBus` does.
"""

from amaranth import *
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out

from t3hw.hw.csr import BusSignature
from t3hw.spec.contract import CSR_READ_LATENCY
from t3hw.spec.layouts import Codec, WriteKind
from t3hw.spec.params import EngineParams, check_params
from t3hw.spec.regmap import Access, Group, RegisterMap, WORD_BITS, place_group
from .checks import check_int
from .uart import DIVISOR_RANGE, UARTRx, UARTTx


__all__ = ["STATUS_TAG", "BOARD_MAGIC", "TIMEOUT_RANGE", "Command", "bridge_errors_layout",
           "UARTBridge", "BOARD_GROUPS", "BoardMap"]


#: The high nibble of every status byte.
STATUS_TAG = 0xA0

#: ``BOARD_ID.magic``: "T3BD" in ASCII.
BOARD_MAGIC = 0x54334244

#: Allowed bridge timeout, in bit times, inclusive.
TIMEOUT_RANGE = (16, 1 << 20)


class Command(enum.Enum, shape=8):
    """A command byte of the bridge protocol (ASCII)."""
    #: ``'W'``, address, data: write a register. Reply: the status byte.
    WRITE  = 0x57
    #: ``'R'``, address: read a register. Reply: 4 data bytes, the status byte.
    READ   = 0x52
    #: ``'S'``: the status byte alone.
    STATUS = 0x53
    #: ``'C'``: clear the sticky error bits. Reply: the status byte after clearing.
    CLEAR  = 0x43


def bridge_errors_layout():
    """Sticky error bits of :class:`UARTBridge` (the low nibble of every status byte)."""
    return data.StructLayout({
        #: A command byte that is not a :class:`Command` (ignored).
        "bad_command": 1,
        #: A byte whose stop bit was low (dropped).
        "framing":     1,
        #: A byte that arrived while the bridge was answering and still held one (dropped).
        "overrun":     1,
        #: A command whose arguments stopped arriving for ``timeout`` bit times (discarded).
        "timeout":     1,
    })


# --- the bridge -----------------------------------------------------------------------------

class UARTBridge(wiring.Component):
    """Host commands over a UART to a register bus (the protocol of the module docstring).

    Parameters
    ----------
    addr_width : int
        The bus's byte address width, in [3, 32]; commands carry ``ceil(addr_width / 8)``
        address bytes, and address bits above ``addr_width`` are ignored.
    divisor : int
        Clock cycles per bit (:func:`~t3hw.tools.board.uart.uart_divisor`), in
        :data:`~t3hw.tools.board.uart.DIVISOR_RANGE`.
    timeout : int
        Bit times a command may wait for its next argument byte before it is discarded (the
        ``timeout`` error), in :data:`TIMEOUT_RANGE`. A host that lost its place waits that
        long and starts again.

    Members
    -------
    rx : In(1)
        Serial line from the host (asynchronous; synchronized inside).
    tx : Out(1)
        Serial line to the host.
    bus : Out(BusSignature(addr_width))
        The register bus, as its initiator: one access per command, ``w_stb`` or ``r_stb``
        for one cycle; a read's ``r_data`` is taken ``CSR_READ_LATENCY`` (3) cycles after.
    errors : Out(bridge_errors_layout())
        The sticky error bits (also in every status byte).

    A command strobes the bus 2 cycles after the middle of its last byte's stop bit, and its
    reply's start bit begins 5 cycles after the strobe. One command at a time: of the bytes
    arriving while a reply is sent, the first is held (it is taken when the reply is done),
    any other is an ``overrun``. The sticky bits reset to 0.
    """

    def __init__(self, addr_width, *, divisor, timeout=1000):
        try:
            self._bus = BusSignature(addr_width)
        except ValueError:
            self._MustUse__silence = True
            raise
        self._divisor = check_int("divisor", divisor, *DIVISOR_RANGE, owner=self)
        self._timeout = check_int("timeout", timeout, *TIMEOUT_RANGE, owner=self)
        self._addr_width = addr_width
        super().__init__({
            "rx":     In(1, init=1),
            "tx":     Out(1, init=1),
            "bus":    Out(self._bus),
            "errors": Out(bridge_errors_layout()),
        })

    @property
    def addr_bytes(self):
        """Address bytes of a command, ``ceil(addr_width / 8)``."""
        return -(-self._addr_width // 8)

    def elaborate(self, platform):
        # One FSM: IDLE takes a command byte; ARGS collects the address (and data) bytes into
        # ``args`` by position; ACCESS strobes the bus for one cycle; REPLY loads ``reply``
        # (the read data and/or the status byte, as it is after the access) and SEND shifts
        # it out through the transmitter, low byte first.
        m = Module()
        m.submodules.rx = urx = UARTRx(self._divisor)
        m.submodules.tx = utx = UARTTx(self._divisor)
        m.d.comb += [urx.rx.eq(self.rx), self.tx.eq(utx.tx)]

        a = self.addr_bytes
        args = Signal(8 * (a + 4))
        count = Signal(range(a + 4))
        command = Signal(8)
        reply = Signal(40)
        left = Signal(range(6))
        limit = self._timeout * self._divisor
        waited = Signal(range(limit + 1))
        byte = urx.data.payload
        events = Signal(bridge_errors_layout())
        clear = Signal()
        status = Cat(self.errors.as_value(), Const(STATUS_TAG >> 4, 4))
        is_read = command == Command.READ.value

        m.d.comb += [
            self.bus.addr.eq(args[:self._addr_width]),
            self.bus.w_data.eq(args[8 * a:8 * a + WORD_BITS]),
            events.framing.eq(urx.framing),
            events.overrun.eq(urx.overrun),
            utx.data.payload.eq(reply[:8]),
        ]
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += urx.data.ready.eq(1)
                m.d.sync += [count.eq(0), waited.eq(0)]
                with m.If(urx.data.valid):
                    m.d.sync += command.eq(byte)
                    with m.Switch(byte):
                        with m.Case(Command.WRITE.value, Command.READ.value):
                            m.next = "ARGS"
                        with m.Case(Command.STATUS.value):
                            m.next = "REPLY"
                        with m.Case(Command.CLEAR.value):
                            m.d.comb += clear.eq(1)
                            m.next = "REPLY"
                        with m.Default():
                            m.d.comb += events.bad_command.eq(1)
            with m.State("ARGS"):
                m.d.comb += urx.data.ready.eq(1)
                m.d.sync += waited.eq(waited + 1)
                with m.If(urx.data.valid):
                    m.d.sync += [count.eq(count + 1), waited.eq(0)]
                    with m.Switch(count):
                        for i in range(a + 4):
                            with m.Case(i):
                                m.d.sync += args[8 * i:8 * i + 8].eq(byte)
                    with m.If(count == Mux(is_read, a - 1, a + 3)):
                        m.next = "ACCESS"
                with m.Elif(waited == limit):
                    m.d.comb += events.timeout.eq(1)
                    m.next = "IDLE"
            with m.State("ACCESS"):
                m.d.comb += [self.bus.w_stb.eq(~is_read), self.bus.r_stb.eq(is_read)]
                m.next = "LATENCY0"
            for i in range(CSR_READ_LATENCY - 1):   # r_data is due CSR_READ_LATENCY later
                with m.State(f"LATENCY{i}"):
                    m.next = f"LATENCY{i + 1}" if i < CSR_READ_LATENCY - 2 else "REPLY"
            with m.State("REPLY"):
                with m.If(is_read):
                    m.d.sync += [reply.eq(Cat(self.bus.r_data, status)), left.eq(5)]
                with m.Else():
                    m.d.sync += [reply.eq(status), left.eq(1)]
                m.next = "SEND"
            with m.State("SEND"):
                m.d.comb += utx.data.valid.eq(1)
                with m.If(utx.data.ready):
                    m.d.sync += [reply.eq(reply >> 8), left.eq(left - 1)]
                    with m.If(left == 1):
                        m.next = "IDLE"

        sticky = self.errors.as_value()
        m.d.sync += sticky.eq(Mux(clear, 0, sticky) | events.as_value())
        return m


# --- the board registers --------------------------------------------------------------------

def _board_id_layout(p):
    return data.StructLayout({"magic": WORD_BITS})


def _gen_layout(p):
    return data.StructLayout({
        "base":     p.addr_width,     # address of the first store and the first load
        "tile":     p.tile_width,     # tile id of the first store
        "per_tile": 16,               # stores per tile id (0: the tile id never advances)
        "count":    16,               # stores to issue
        "loads":    16,               # loads to issue (full bursts), interleaved
        "bytes":    p.burst_width,    # bytes of each store, 1 .. burst_bytes
        "kind":     WriteKind,
    })


def _control_layout(p):
    return data.StructLayout({"start": 1})


def _board_status_layout(p):
    return data.StructLayout({"running": 1, "dram_busy": 1, "occupancy": p.occupancy_width})


def _dram_layout(p):
    return data.StructLayout({"interval": 8, "peek": 16})


def _dram_line_layout(p):
    return data.StructLayout({"value": 16})


def _board_stats_layout(p):
    return data.StructLayout({name: WORD_BITS for name in (
        "stores", "loads", "load_responses", "dram_reads", "dram_stores", "dram_updates",
        "ring_packets")})


#: The board's register groups: ``(group, layout factory, access, description)``.
BOARD_GROUPS = (
    ("BOARD_ID",     _board_id_layout,     Access.RO,
     f"Identification: `magic` reads {BOARD_MAGIC:#010x} (\"T3BD\")."),
    ("GEN",          _gen_layout,          Access.RW,
     "Traffic generator: `count` stores of `bytes` to `base`, `base + burst_bytes`, ..., "
     "the tile id starting at `tile` and advancing every `per_tile` stores (never if 0), "
     "and `loads` full-burst loads from `base` onward (tags 0, 1, ...), interleaved."),
    ("CONTROL",      _control_layout,      Access.WO,
     "Write `start` = 1 to start the generator with the `GEN` fields (ignored while it "
     "runs; `GEN` may be rewritten while it runs, for the next start)."),
    ("BOARD_STATUS", _board_status_layout, Access.RO,
     "`running`: the generator has stores or loads left; `dram_busy`: the DRAM model holds "
     "requests; `occupancy`: what the engine's `occupancy` input sees."),
    ("DRAM",         _dram_layout,         Access.RW,
     "DRAM model: it takes one request every `interval` cycles (2 if below 2; reset 4); "
     "`peek` is the line shown in `DRAM_LINE` from the next cycle on (modulo the lines)."),
    ("DRAM_LINE",    _dram_line_layout,    Access.RO,
     "The count of line `DRAM.peek`: a STORE sets it to 1, an UPDATE adds 1 (from 0 after "
     "configuration; reset does not clear it)."),
    ("BOARD_STATS",  _board_stats_layout,  Access.RO,
     "Transfers on the engine's ports (wrapping): generator stores and loads, load "
     "responses, DRAM requests by operation, packets sent around the ring."),
)

#: Fields of the board groups that do not reset to 0.
_BOARD_RESET = {"DRAM": {"interval": 4}}


class BoardMap(RegisterMap):
    """The address space behind the UART bridge: the engine's registers, then the board's.

    The engine's registers keep their addresses (:class:`~t3hw.spec.regmap.RegisterMap`); the
    board's registers (:data:`BOARD_GROUPS`) follow at :attr:`base` =
    ``2**RegisterMap(params).addr_width``, placed by the register map's rule. So the bridge
    bus has one more address bit than the engine's, and :class:`t3hw.sw.driver.Driver` works
    unchanged on it. :meth:`split`, :meth:`join`, :meth:`encode` and :meth:`decode` work on
    the board groups.

    Parameters
    ----------
    params : EngineParams

    Attributes
    ----------
    engine : RegisterMap
        The engine's register map.
    base : int
        Byte address of the board's first register.
    addr_width : int
        Width of the bridge's byte address (the engine's plus one).
    groups, registers, by_name, by_addr
        The board's groups and registers (as in :class:`~t3hw.spec.regmap.RegisterMap`).
    """

    def __init__(self, params: EngineParams = EngineParams()):
        check_params(params)
        self.params = params
        self.engine = RegisterMap(params)
        self.base = 1 << self.engine.addr_width
        self.addr_width = self.engine.addr_width + 1
        self.groups, self.registers = {}, []
        addr = self.base
        for name, factory, access, doc in BOARD_GROUPS:
            layout = factory(params)
            regs = place_group(name, layout, access, addr)
            addr += 4 * len(regs)
            self.groups[name] = Group(name, layout, access, doc, tuple(regs), Codec(layout))
            self.registers.extend(regs)
        if addr > 2 * self.base:
            raise ValueError(f"the board registers must fit in {self.base} bytes, not "
                             f"{addr - self.base}")
        self.by_name = {r.name: r for r in self.registers}
        self.by_addr = {r.addr: r for r in self.registers}

    def constant(self, group):
        """Fields of ``"BOARD_ID"``."""
        if group != "BOARD_ID":
            raise ValueError(f"group must be 'BOARD_ID', not {group!r}")
        return {"magic": BOARD_MAGIC}

    def reset(self, group):
        """Fields of the read-write group ``group`` (``"GEN"`` or ``"DRAM"``) after reset."""
        staging = [name for name, g in self.groups.items() if g.access == Access.RW]
        if group not in staging:
            raise ValueError(f"group must be one of {staging}, not {group!r}")
        fields = _BOARD_RESET.get(group, {})
        return {name: fields.get(name, 0) for name in self.groups[group].codec.names}
