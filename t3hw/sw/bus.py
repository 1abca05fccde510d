# SPDX-License-Identifier: Apache-2.0
"""The register-bus protocol every backend of :class:`~t3hw.sw.driver.Driver` implements.

A *bus* moves 32-bit words to and from the byte addresses of one engine's register block
(:class:`~t3hw.spec.regmap.RegisterMap`). It has two coroutines and nothing else:
``await bus.write(addr, value)`` and ``await bus.read(addr) -> int``. The driver awaits each
access before the next, so a backend need not queue.

The backends:

* :class:`CocotbBus` (here): the ``bus__*`` ports of a simulated ``t3hw_csr``, ``t3hw_engine``
  or one engine of ``t3hw_system``, from a cocotb testbench;
* :class:`sim_models.csr.ModelBus`: no RTL; the register-file model clocked over the
  reference models of the address map, DMA, tracker and the arbiter's configuration;
* :class:`t3hw.tools.board.host.SerialBus`: a ULX3S board running the engine, over the UART
  bridge of ``make bitstream``.

``tests/test_driver.py`` checks that each of them is a :class:`Bus`.
"""

from typing import Protocol, runtime_checkable

from t3hw.spec.contract import CSR_READ_LATENCY


__all__ = ["Bus", "CocotbBus"]


@runtime_checkable
class Bus(Protocol):
    """One engine's register bus: byte addresses, 32-bit data, one access at a time."""

    async def write(self, addr: int, value: int) -> None:
        """Write ``value`` to the register at byte address ``addr``."""

    async def read(self, addr: int) -> int:
        """The value of the register at byte address ``addr``."""


class CocotbBus:
    """A bus over the ``bus__*`` ports of a ``t3hw_csr`` design simulated by cocotb.

    Parameters
    ----------
    dut : cocotb handle
        The design (``bus__addr``, ``bus__w_data``, ``bus__w_stb``, ``bus__r_stb``,
        ``bus__r_data``), clocked by ``clk``, which must be running.
    prefix : str
        Prepended to the port names: ``"e2__"`` is engine 2's bus in the system top.

    A write takes one cycle. A read takes ``CSR_READ_LATENCY + 1`` (4): the strobe, then
    cycles with the bus idle, in the last of which ``r_data`` is sampled (the block's fixed
    read latency, :data:`~t3hw.spec.contract.CSR_READ_LATENCY`, is three cycles). Every access
    starts right after a clock edge, so a monitor that samples the bus in the read-only phase
    of each cycle sees every access.
    """

    def __init__(self, dut, prefix=""):
        self.dut = dut
        self.clk = dut.clk
        self.addr, self.w_data, self.w_stb, self.r_stb, self.r_data = (
            getattr(dut, f"{prefix}bus__{name}")
            for name in ("addr", "w_data", "w_stb", "r_stb", "r_data"))
        self.accesses = 0

    async def write(self, addr, value):
        from cocotb.triggers import RisingEdge
        self.addr.value = addr
        self.w_data.value = value
        self.w_stb.value = 1
        await RisingEdge(self.clk)
        self.w_stb.value = 0
        self.accesses += 1

    async def read(self, addr):
        from cocotb.triggers import ReadOnly, RisingEdge
        self.addr.value = addr
        self.r_stb.value = 1
        await RisingEdge(self.clk)
        self.r_stb.value = 0
        for _ in range(CSR_READ_LATENCY - 1):
            await RisingEdge(self.clk)
        await ReadOnly()
        value = self.r_data.value.to_unsigned()
        await RisingEdge(self.clk)
        self.accesses += 1
        return value
