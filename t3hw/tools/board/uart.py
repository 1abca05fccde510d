# SPDX-License-Identifier: Apache-2.0
"""The board's UART: :class:`UARTRx` and :class:`UARTTx`, 8N1 serial receiver and
transmitter at ``divisor`` clock cycles per bit, and :func:`uart_divisor`, the divisor of a
baud rate at a clock frequency."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from .checks import check_int


__all__ = ["DIVISOR_RANGE", "BAUD_TOLERANCE", "uart_divisor", "UARTRx", "UARTTx"]


#: Allowed clock cycles per bit of the UART, inclusive.
DIVISOR_RANGE = (4, 1 << 20)

#: Most baud-rate error :func:`uart_divisor` accepts (8N1 tolerates about 4 % in total).
BAUD_TOLERANCE = 0.02


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
        self._divisor = check_int("divisor", divisor, *DIVISOR_RANGE, owner=self)
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
        self._divisor = check_int("divisor", divisor, *DIVISOR_RANGE, owner=self)
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
