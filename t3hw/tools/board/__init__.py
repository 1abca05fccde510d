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

One module per part; every public name is also here (``from t3hw.tools import board``):

* :mod:`.uart`: :class:`UARTRx`, :class:`UARTTx`, 8N1 serial receiver and transmitter,
  ``divisor`` clock cycles per bit (:func:`uart_divisor`).
* :mod:`.bridge`: :class:`UARTBridge`, a byte protocol from a host to a register bus (the
  protocol is in that module's docstring), and :class:`BoardMap`, the address space behind
  it: the engine's registers, then the board's (:data:`BOARD_GROUPS`).
* :mod:`.memory`: :class:`DramModel`, the memory behind the engine's ``dram`` port, a queue
  in front of a block RAM of per-burst counters.
* :mod:`.top`: :class:`BoardCore`, the engine with its surroundings (generator, DRAM model,
  ring link, board registers, LEDs); :class:`EngineBoard`, the core behind the UART bridge
  (the board top, simulatable); :class:`~.top.ULX3STop`, that top on the ULX3S pins.
* :mod:`.bitstream`: :func:`build` places the board on the ULX3S-85F with amaranth-boards
  (:class:`BuildResult`); :func:`add_arguments` and :func:`cmd` are ``t3hw bitstream``.
* :mod:`.host`: :class:`SerialBus`, the host side of the protocol, a
  :class:`~t3hw.sw.bus.Bus` for :class:`t3hw.sw.driver.Driver`; :class:`BoardDriver` runs the
  board registers (generator, DRAM model, counters); :exc:`BridgeError`.
* :mod:`.checks`: the argument checks the modules share.
"""

from .bitstream import BuildResult, add_arguments, build, cmd
from .bridge import (BOARD_GROUPS, BOARD_MAGIC, STATUS_TAG, TIMEOUT_RANGE, BoardMap, Command,
                     UARTBridge, bridge_errors_layout)
from .host import BoardDriver, BridgeError, SerialBus
from .memory import DramModel
from .top import BoardCore, EngineBoard
from .uart import BAUD_TOLERANCE, DIVISOR_RANGE, UARTRx, UARTTx, uart_divisor


__all__ = ["Command", "STATUS_TAG", "BOARD_MAGIC", "bridge_errors_layout",
           "uart_divisor", "UARTRx", "UARTTx", "UARTBridge", "BoardMap", "DramModel", "BoardCore",
           "EngineBoard", "BuildResult", "build", "BridgeError", "SerialBus", "BoardDriver",
           "add_arguments", "cmd"]
