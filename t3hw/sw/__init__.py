# SPDX-License-Identifier: Apache-2.0
"""The software side: the register driver (:mod:`.driver`) and the bus protocol its backends
implement (:mod:`.bus`). Imports only :mod:`t3hw.spec` (and cocotb, inside
:class:`~t3hw.sw.bus.CocotbBus` only)."""
