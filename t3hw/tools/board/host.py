# SPDX-License-Identifier: Apache-2.0
"""The host side of the board: :class:`SerialBus`, a :class:`~t3hw.sw.bus.Bus` over the UART
bridge's protocol (:mod:`t3hw.tools.board.bridge`), so :class:`t3hw.sw.driver.Driver` programs
the board's engine unchanged; :class:`BoardDriver`, the board registers (generator, DRAM
model, counters) over any bus; :exc:`BridgeError`, a reply that is missing, malformed or
shows the bridge's sticky error bits."""

import inspect

from t3hw.spec.layouts import Codec, WriteKind
from t3hw.spec.params import EngineParams, check_params
from t3hw.spec.regmap import WORD_BITS
from t3hw.sw.bus import Bus
from .bridge import BOARD_MAGIC, STATUS_TAG, BoardMap, Command, bridge_errors_layout
from .checks import check_int


__all__ = ["BridgeError", "SerialBus", "BoardDriver"]


class BridgeError(RuntimeError):
    """The bridge's reply is missing or malformed, or shows sticky error bits."""


async def _call(result):
    return await result if inspect.isawaitable(result) else result


class SerialBus(Bus):
    """A :class:`~t3hw.sw.bus.Bus` over the board's UART bridge, for
    :class:`t3hw.sw.driver.Driver` (the engine's registers) and :class:`BoardDriver` (the
    board's).

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
    the board's follow (:class:`BoardDriver`). Besides the protocol's :meth:`write` and
    :meth:`read`, :meth:`status` and :meth:`clear` reach the bridge itself.
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

    async def write(self, addr: int, value: int) -> None:
        """Write ``value`` to byte address ``addr``."""
        if isinstance(value, bool) or not isinstance(value, int) \
                or not 0 <= value < 1 << WORD_BITS:
            raise ValueError(f"value must be an integer in [0, 0xffffffff], not {value!r}")
        await self._transact(bytes([Command.WRITE.value]) + self._addr(addr)
                             + value.to_bytes(4, "little"), 1)
        self.accesses += 1

    async def read(self, addr: int) -> int:
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
    """The board registers (:data:`~t3hw.tools.board.bridge.BOARD_GROUPS`) from a host, over
    any bus.

    Parameters
    ----------
    bus : Bus
        A :class:`~t3hw.sw.bus.Bus` over the bridge's address space (:class:`SerialBus`, or
        a simulation's).
    params : EngineParams
    poll_limit : int
        Reads of ``BOARD_STATUS`` before :meth:`wait` gives up (RuntimeError).
    """

    def __init__(self, bus, params: EngineParams = EngineParams(), *, poll_limit=10_000):
        check_params(params)
        self.bus, self.params = bus, params
        self.poll_limit = check_int("poll_limit", poll_limit, 1, 1 << 31)
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
        check_int("nbytes", nbytes, 1, self.params.burst_bytes)
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

