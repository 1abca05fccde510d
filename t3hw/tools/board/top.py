# SPDX-License-Identifier: Apache-2.0
"""The board's hardware above the UART: :class:`BoardCore`, the engine with its surroundings
(traffic generator, DRAM model, ring link, board registers, LEDs) behind one register bus;
:class:`EngineBoard`, the core behind the UART bridge (the board top, simulatable); and
:class:`ULX3STop`, an :class:`EngineBoard` on the ULX3S-85F's pins. The wiring diagram is
the package's (:mod:`t3hw.tools.board`).
"""

from amaranth import *
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out, connect

from t3hw.hw.csr import BusSignature, register_word
from t3hw.hw.engine import Engine
from t3hw.spec.contract import CSR_READ_LATENCY
from t3hw.spec.layouts import MemOp, net_packet_layout
from t3hw.spec.params import EngineParams, check_params
from t3hw.spec.regmap import WORD_BITS
from .bridge import BOARD_MAGIC, BoardMap, UARTBridge
from .checks import check_int
from .memory import DramModel
from .uart import uart_divisor


__all__ = ["BoardCore", "EngineBoard", "ULX3STop"]


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
        the board registers (:data:`~t3hw.tools.board.bridge.BOARD_GROUPS`; unmapped ones
        read 0, writes to read-only ones are ignored). Read latency 3, as the engine's
        (``CSR_READ_LATENCY``).
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
        self._link_depth = check_int("link_depth", link_depth, 2, 64, owner=self)
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
        p = self._p
        m = Module()
        m.submodules.engine = engine = Engine(p)
        m.submodules.dram = dram = self._dram
        m.submodules.link = link = fifo.SyncFIFOBuffered(width=net_packet_layout(p).size,
                                                         depth=self._link_depth)

        # --- the ring, the DRAM ------------------------------------------------------------
        connect(m, engine.net_tx, link.w_stream)
        connect(m, link.r_stream, engine.net_rx)
        connect(m, engine.dram, dram.request)
        connect(m, dram.response, engine.dram_response)
        m.d.comb += [engine.occupancy.eq(dram.occupancy), engine.load_response.ready.eq(1)]

        board, board_data = self._decode(m, engine)
        gen, status, stats, start = self._registers(m, dram, board, board_data)
        self._generator(m, engine, gen, status, start)
        self._count(m, engine, dram, status, stats)
        return m

    def _decode(self, m, engine):
        """The bus: the engine below ``base``, the board registers above. Returns ``board``
        (the access is to the board registers) and ``board_data`` (their read data)."""
        bus, bm = self.bus, self._map
        board = bus.addr[bm.engine.addr_width]
        board_data = Signal(WORD_BITS)
        # The engine answers a read CSR_READ_LATENCY cycles after its strobe; the board
        # registers are read into ``board_data`` the cycle after, and reach ``r_data``
        # through CSR_READ_LATENCY - 1 more registers, so both answer with the same latency,
        # back to back.
        last_board = Signal()              # the last read went to the board registers
        late_data, late_board = board_data, last_board
        for i in range(CSR_READ_LATENCY - 1):
            data_q = Signal(WORD_BITS, name=f"board_data_q{i}")
            board_q = Signal(name=f"last_board_q{i}")
            m.d.sync += [data_q.eq(late_data), board_q.eq(late_board)]
            late_data, late_board = data_q, board_q
        m.d.comb += [
            engine.bus.addr.eq(bus.addr[:bm.engine.addr_width]),
            engine.bus.w_data.eq(bus.w_data),
            engine.bus.w_stb.eq(bus.w_stb & ~board),
            engine.bus.r_stb.eq(bus.r_stb & ~board),
            bus.r_data.eq(Mux(late_board, late_data, engine.bus.r_data)),
        ]
        with m.If(bus.r_stb):
            m.d.sync += last_board.eq(board)
        return board, board_data

    def _registers(self, m, dram, board, board_data):
        """The board registers (:data:`~t3hw.tools.board.bridge.BOARD_GROUPS`): writes, reads
        into ``board_data``, the DRAM model's configuration. Returns the ``GEN`` register, the
        ``BOARD_STATUS`` and ``BOARD_STATS`` values and ``start`` (``CONTROL.start`` written
        with 1 this cycle)."""
        bus, bm = self.bus, self._map
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
                        m.d.sync += board_data.eq(register_word(r, value[r.group]))
                with m.Default():
                    m.d.sync += board_data.eq(0)

        m.d.comb += [
            dram.interval.eq(dram_cfg.interval),
            dram.peek.eq(dram_next.peek),
            status.dram_busy.eq(dram.busy),
            status.occupancy.eq(dram.occupancy),
        ]
        return gen, status, stats, start

    def _generator(self, m, engine, gen, status, start):
        """The traffic generator on the engine's ``store`` and ``load``, started by ``start``
        with the fields of ``gen``; drives ``status.running``."""
        # The payloads are registers loaded at ``start`` and advanced at each transfer, so
        # they never change while ``valid`` is high, and ``GEN`` may be rewritten meanwhile.
        p = self._p
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

    def _count(self, m, engine, dram, status, stats):
        """The ``BOARD_STATS`` counters of the engine's transfers, and the LEDs."""
        st, ld = engine.store, engine.load
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


class ULX3STop(Elaboratable):
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

