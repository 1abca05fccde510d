# SPDX-License-Identifier: Apache-2.0
"""The board top (:mod:`t3hw.tools.board`): the UART, the bridge, the board core and the build.

* The UART on its own: transmitter into receiver, every byte value, odd and even divisors.
* The bridge and the engine's register block end to end (amaranth.sim): the host's bytes go
  onto the ``rx`` line bit by bit and the replies are decoded from the ``tx`` line; the
  register driver (:class:`t3hw.sw.driver.Driver`) runs over :class:`t3hw.tools.board.SerialBus`,
  and what it reads is compared with the same script on the register-file model
  (:class:`sim_models.csr.ModelBus`). Malformed input sets each sticky error bit.
* The board core at bus level: a one-board ring step through the real trigger path
  (generator stores, tracker, DMA, ring link, DRAM model), checked in the board and engine
  counters and in the DRAM model's lines.
* ``test_build_bitstream_place_and_route`` runs the real Yosys / nextpnr / ecppack flow
  (about 2 minutes with the parameters used here; see ``docs/fpga.md``). Skip it with
  ``T3HW_SKIP_PNR=1``.
"""

import asyncio
import os
import time
from collections import deque

import pytest
from amaranth.sim import Simulator

from sim_models.csr import ModelBus
from t3hw.tools.board import (BOARD_MAGIC, STATUS_TAG, BoardCore, BoardDriver, BoardMap,
                        BridgeError, Command, DramModel, EngineBoard, SerialBus, UARTBridge,
                        UARTRx, UARTTx, build, uart_divisor)
from t3hw.spec.contract import CSR_READ_LATENCY
from t3hw.sw.driver import Driver
from t3hw.spec.layouts import RegionMode, TrackOp, WriteKind
from t3hw.spec.params import EngineParams
from t3hw.spec.regmap import MAGIC, RegisterMap


#: The engine inside the simulated boards: the paper's parameters.
PARAMS = EngineParams()

#: UART clock cycles per bit in simulation (the smallest allowed: fast).
DIVISOR = 4

#: The parameters of the build test: the paper's with smaller tables and widths, so that the
#: real flow takes a minute or two here instead of about 10 for the paper's (``make
#: bitstream``; ``docs/fpga.md`` has both).
BUILD_PARAMS = EngineParams(tracker_entries=16, tile_width=8, count_width=8, cmd_width=4,
                            counter_width=16, addr_width=24, pitch_width=16, regions=4,
                            rows_width=8, row_bytes_width=12, device_width=2, load_tag_width=4,
                            starvation_width=12)


# --- the UART on its own --------------------------------------------------------------------

@pytest.mark.parametrize("divisor", [4, 7])
def test_uart_loopback(divisor):
    """Every byte value, back to back, from the transmitter into the receiver."""
    from amaranth import Module
    m = Module()
    m.submodules.tx = tx = UARTTx(divisor)
    m.submodules.rx = rx = UARTRx(divisor)
    m.d.comb += rx.rx.eq(tx.tx)
    sent, got = list(range(256)), []

    async def source(ctx):
        for byte in sent:
            ctx.set(tx.data.valid, 1)
            ctx.set(tx.data.payload, byte)
            await ctx.tick().until(tx.data.ready)
        ctx.set(tx.data.valid, 0)

    async def sink(ctx):
        ctx.set(rx.data.ready, 1)
        while len(got) < len(sent):
            await ctx.tick().until(rx.data.valid | rx.framing | rx.overrun)
            assert not ctx.get(rx.framing) and not ctx.get(rx.overrun)
            got.append(ctx.get(rx.data.payload))

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.run()
    assert got == sent


def test_uart_divisor():
    assert uart_divisor(25e6, 115200) == 217
    assert uart_divisor(25e6, 1_000_000) == 25
    with pytest.raises(ValueError, match=r"baud must be in \[\d+, 6250000\].*not 10000000"):
        uart_divisor(25e6, 10_000_000)
    with pytest.raises(ValueError, match="within 2%"):
        uart_divisor(25e6, 2_900_000)            # divisor 9: 2.78 MBd, 4 % off
    with pytest.raises(ValueError, match="divisor must be an integer in"):
        UARTRx(3)
    with pytest.raises(ValueError, match=r"addr_width must be an integer in \[3, 32\]"):
        UARTBridge(33, divisor=4)
    with pytest.raises(ValueError, match=r"timeout must be an integer in \[16, "):
        UARTBridge(11, divisor=4, timeout=8)
    with pytest.raises(ValueError, match=r"lines must be a power of two in \[16, 65536\]"):
        DramModel(PARAMS, lines=1000)
    with pytest.raises(ValueError, match=r"link_depth must be an integer in \[2, 64\]"):
        BoardCore(PARAMS, link_depth=1)


# --- the bridge and the engine over the UART, bit by bit ------------------------------------

class _SimUart:
    """The host's end of the board's UART in amaranth.sim: an async byte stream for
    :class:`SerialBus`. ``write`` drives ``rx`` bit by bit (8N1); a background monitor
    decodes ``tx`` into :attr:`received`, which ``read`` takes from."""

    def __init__(self, board, *, read_limit=200):
        self.ctx, self.board, self.d = None, board, board.divisor   # ctx: the host's
        self.received = deque()
        self.read_limit = read_limit                # bit times a read waits for each byte

    async def write(self, data, *, stop=1):
        for byte in data:
            for bit in [0, *((byte >> i) & 1 for i in range(8)), stop]:
                self.ctx.set(self.board.rx, bit)
                await self.ctx.tick().repeat(self.d)
            self.ctx.set(self.board.rx, 1)

    async def idle(self, bits):
        await self.ctx.tick().repeat(bits * self.d)

    async def read(self, n):
        waited = 0
        while len(self.received) < n and waited < n * self.read_limit:
            await self.ctx.tick().repeat(self.d)
            waited += 1
        return bytes(self.received.popleft() for _ in range(min(n, len(self.received))))

    async def monitor(self, ctx):
        tx, d = self.board.tx, self.d
        while True:
            while ctx.get(tx):              # (not tick().until(): it cannot be closed cleanly
                await ctx.tick()            # when the simulation ends)
            await ctx.tick().repeat(d // 2)
            assert ctx.get(tx) == 0, "a start bit shorter than half a bit"
            byte = 0
            for i in range(8):
                await ctx.tick().repeat(d)
                byte |= ctx.get(tx) << i
            await ctx.tick().repeat(d)
            assert ctx.get(tx) == 1, "a stop bit of 0 from the bridge"
            self.received.append(byte)


def _run_board(body, *, timeout=1000):
    """Simulate an :class:`EngineBoard` (``DIVISOR`` cycles per bit) under
    ``body(uart, board)``."""
    board = EngineBoard(PARAMS, clk_freq=DIVISOR * 250_000, baud=250_000, timeout=timeout)
    assert board.divisor == DIVISOR
    sim = Simulator(board)
    sim.add_clock(1e-8)
    uart = _SimUart(board)

    async def host(ctx):
        uart.ctx = ctx
        await body(uart, board)

    sim.add_testbench(uart.monitor, background=True)
    sim.add_testbench(host)
    sim.run()


async def _register_script(driver):
    """Reads of a driver session: identification, a staging group written and read back,
    the arbiter's reset configuration, the sticky errors."""
    await driver.check()                               # waits for the sweeps; ID and CONFIG
    out = {"ID": await driver.read_group("ID"), "CONFIG": await driver.read_group("CONFIG")}
    await driver.write_group("TRACK", op=TrackOp.DISARM, tile=0xBEEF, threshold=0x123,
                             cmd=0x5A, rearm=1)
    out["TRACK"] = await driver.read_group("TRACK")
    out["ARB"] = await driver.read_group("ARB")
    await driver.write(driver.map.by_name["COMMAND"].addr, 7)     # an unknown command
    out["errors"] = await driver.errors()
    return out


def test_bridge_driver_against_model():
    """The driver over the UART reads what it reads on the register-file model."""
    expect = asyncio.run(_register_script(Driver(ModelBus(PARAMS), PARAMS)))
    assert expect["ID"] == {"magic": MAGIC}
    assert expect["TRACK"]["tile"] == 0xBEEF and expect["errors"]["csr"]["bad_command"] == 1
    got = {}

    async def body(uart, board):
        bus = SerialBus(uart, PARAMS)
        got.update(await _register_script(Driver(bus, PARAMS)))
        boards = BoardDriver(bus, PARAMS)
        await boards.check()
        assert await bus.status() == {"bad_command": 0, "framing": 0, "overrun": 0,
                                      "timeout": 0}
        # The board window: a read-write group written and read back; a read-only one.
        await boards.write_group("DRAM", interval=9, peek=0x1234)
        got["DRAM"] = await boards.read_group("DRAM")
        got["accesses"] = bus.accesses

    _run_board(body)
    assert got.pop("DRAM") == {"interval": 9, "peek": 0x1234}
    assert got.pop("accesses") > 10
    assert got == expect


def test_bridge_sticky_errors():
    """A malformed command byte, a framing error, an overrun and a timeout each set their
    sticky bit, seen in the next status byte and cleared by 'C'; accesses still work."""
    m = BoardMap(PARAMS)
    id_addr = RegisterMap(PARAMS).by_name["ID"].addr.to_bytes(2, "little")
    clean = {"bad_command": 0, "framing": 0, "overrun": 0, "timeout": 0}

    async def body(uart, board):
        bus = SerialBus(uart, PARAMS)
        assert await bus.status() == clean
        assert await bus.read(m.by_name["BOARD_ID"].addr) == BOARD_MAGIC
        # A command byte that is none of the four: ignored (no reply), sticky bad_command.
        await uart.write(b"X")
        assert await bus.status() == {**clean, "bad_command": 1}
        with pytest.raises(BridgeError, match=r"\['bad_command'\]"):
            await bus.read(0)                   # the read was done; strict mode raises
        assert await bus.clear() == clean
        assert await bus.read(0) == MAGIC
        # A byte with a low stop bit: dropped.
        await uart.write(b"S", stop=0)
        await uart.idle(2)
        assert await bus.status() == {**clean, "framing": 1}
        assert await bus.clear() == clean
        # Bytes sent during a reply: the first is held (here a status command, answered
        # after the read), the second is an overrun.
        await uart.write(bytes([Command.READ.value]) + id_addr + b"SS")
        reply = await uart.read(6)
        assert int.from_bytes(reply[:4], "little") == MAGIC and reply[4] == STATUS_TAG
        assert reply[5] == STATUS_TAG | 0b0100
        assert await bus.clear() == clean
        # A command whose arguments stop: discarded after the timeout, no reply.
        await uart.write(b"R" + id_addr[:1])
        await uart.idle(20)
        assert not uart.received
        assert await bus.status() == {**clean, "timeout": 1}
        assert uart.ctx.get(board.leds) >> 7 == 1           # the LED of the bridge errors
        assert await bus.clear() == clean
        assert uart.ctx.get(board.leds) >> 7 == 0
        assert await bus.read(0) == MAGIC

    _run_board(body, timeout=16)


def test_serial_bus_rejects():
    """Host-side checks: the address and value ranges, a short or untagged reply."""

    class Stream:
        def __init__(self, reply):
            self.reply, self.sent = reply, b""

        def write(self, data):
            self.sent += data

        def read(self, n):
            return self.reply[:n]

    bus = SerialBus(Stream(b""), PARAMS)
    with pytest.raises(ValueError, match=r"addr must be an integer in \[0, 0x7fc\], not 2048"):
        asyncio.run(bus.read(2048))
    with pytest.raises(ValueError, match=r"value must be an integer in \[0, 0xffffffff\]"):
        asyncio.run(bus.write(0, -1))
    with pytest.raises(BridgeError, match="0 of 5 reply bytes"):
        asyncio.run(bus.read(0))
    bus = SerialBus(Stream(b"\x01\x02\x03\x04\x55"), PARAMS)
    with pytest.raises(BridgeError, match="status byte 0x55"):
        asyncio.run(bus.read(4))
    assert bus.stream.sent == b"R\x04\x00"
    stream = Stream(b"\xa0")
    asyncio.run(SerialBus(stream, PARAMS).write(0x404, 0xDEADBEEF))
    assert stream.sent == b"W\x04\x04\xef\xbe\xad\xde"


# --- the board core at bus level: one ring step through the trigger path --------------------

class _SimBus:
    """The register bus of a simulated :class:`BoardCore`, for the drivers (one cycle per
    write, ``CSR_READ_LATENCY`` per read: ``r_data`` is read that many clock edges after
    the strobe's)."""

    def __init__(self, ctx, bus):
        self.ctx, self.bus = ctx, bus

    async def write(self, addr, value):
        self.ctx.set(self.bus.addr, addr)
        self.ctx.set(self.bus.w_data, value)
        self.ctx.set(self.bus.w_stb, 1)
        await self.ctx.tick()
        self.ctx.set(self.bus.w_stb, 0)

    async def read(self, addr):
        self.ctx.set(self.bus.addr, addr)
        self.ctx.set(self.bus.r_stb, 1)
        await self.ctx.tick()
        self.ctx.set(self.bus.r_stb, 0)
        for _ in range(CSR_READ_LATENCY - 1):
            await self.ctx.tick()
        return self.ctx.get(self.bus.r_data)


@pytest.mark.parametrize("params", [PARAMS, BUILD_PARAMS], ids=["paper", "small"])
def test_board_ring_step(params):
    """Tile 5 is tracked in window X (threshold 8 beats): 4 local stores to X, then 4 stores
    to window W, a REMOTE region whose update packets go around the ring into X. The 8th
    beat triggers descriptor 5, which copies X's tile to window Z on "device 1": 4 packets
    around the ring, stored in Z. Loads run alongside. With the paper's parameters and with
    the build test's."""
    p, burst = params, params.burst_bytes
    x, w, z = 0x0000, 0x1000, 0x4000
    core = BoardCore(p)
    sim = Simulator(core)
    sim.add_clock(1e-8)
    result = {}

    async def host(ctx):
        bus = _SimBus(ctx, core.bus)
        driver, board = Driver(bus, p), BoardDriver(bus, p)
        await driver.check()
        await board.check()
        await driver.set_device_id(1)       # the loopback: it is its own device 1
        await driver.track_map(x, 0x1000)
        await driver.remote_map(w, 0x1000, device=1, remote_base=x)
        await driver.program_region(2, mode=RegionMode.LOCAL, base=z, size=0x1000)
        await driver.dma_map(5, 8, src=x, rows=1, row_bytes=4 * burst, pitch=4 * burst,
                             device=1, dst=z, op=WriteKind.STORE)
        await board.write_group("DRAM", interval=2, peek=0)
        await board.generate(base=x, count=4, tile=5, loads=3)
        await board.wait()
        result["before"] = (await driver.stats())["tracker"]["triggers"]
        await board.generate(base=w, count=4, tile=5)
        await board.wait()
        for _ in range(200):                             # the DMA's packets, around the ring
            await ctx.tick()
        await board.wait()
        result["board"] = await board.stats()
        result["engine"] = await driver.stats()
        result["errors"] = await driver.errors()
        result["lines"] = {a: await board.line(a) for a in
                           (x, x + 3 * burst, x + 4 * burst, w, z, z + 3 * burst, z + 4 * burst)}
        result["leds"] = ctx.get(core.leds)

    sim.add_testbench(host)
    sim.run()
    assert result["before"] == 0
    assert result["board"] == {"stores": 8, "loads": 3, "load_responses": 3, "dram_reads": 7,
                               "dram_stores": 8, "dram_updates": 4, "ring_packets": 8}
    assert result["engine"]["tracker"]["triggers"] == 1
    assert result["engine"]["dma"]["packets"] == 4
    assert result["engine"]["addrmap"]["tracked"] == 4
    assert result["engine"]["addrmap"]["remote"] == 4
    assert not any(v for bits in result["errors"].values() for v in bits.values())
    # X: stored (1) and updated by the ring (+1); W never reaches memory; Z: the DMA copy.
    assert result["lines"] == {x: 2, x + 3 * burst: 2, x + 4 * burst: 0, w: 0, z: 1,
                               z + 3 * burst: 1, z + 4 * burst: 0}
    assert result["leds"] & 0xF == 8                     # ring packets modulo 16, idle


# --- the real build -------------------------------------------------------------------------

def test_bitstream_command_errors(tmp_path):
    """``t3hw bitstream`` options: a bad value is one ValueError naming it, before any build."""
    import argparse
    from t3hw.tools.board import add_arguments, cmd
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--out", str(tmp_path), "--seed", "0"])
    with pytest.raises(ValueError, match=r"seed must be an integer in \[1, 2147483647\], not 0"):
        cmd(args)
    args = parser.parse_args(["--out", str(tmp_path), "--baud", "7"])
    with pytest.raises(ValueError, match=r"baud must be in"):
        cmd(args)
    assert not any(tmp_path.iterdir())


@pytest.mark.long
@pytest.mark.skipif(bool(os.environ.get("T3HW_SKIP_PNR")), reason="T3HW_SKIP_PNR is set")
def test_build_bitstream_place_and_route(tmp_path):
    """SLOW (real place and route): the ULX3S-85F bitstream is produced and meets 25 MHz."""
    began = time.monotonic()
    result = build(tmp_path / "board", params=BUILD_PARAMS, seed=1)
    print(f"build: {time.monotonic() - began:.0f} s, Fmax {result.fmax_mhz:.1f} MHz, "
          f"{result.utilization}")
    assert result.bitstream.is_file() and result.bitstream.stat().st_size > 0
    assert result.fmax_mhz >= result.target_mhz == 25
    assert result.utilization["DP16KD"][0] >= 1
