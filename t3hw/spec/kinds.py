# SPDX-License-Identifier: Apache-2.0
"""What a memory write does and where it came from: the two enumerations that the tracker's,
the address map's and the arbiter's layouts share. Part of :mod:`t3hw.spec.layouts`, which
re-exports them: import them from there.
"""

from amaranth.lib import enum


__all__ = ["WriteKind", "WriteSource"]


class WriteKind(enum.Enum, shape=1):
    """What a granted memory write does at the DRAM."""
    #: Plain store: the DRAM overwrites the burst.
    STORE  = 0
    #: Update: the near-memory ALU adds the burst to what is stored (op-and-store).
    UPDATE = 1


class WriteSource(enum.Enum, shape=2):
    """Which stream a granted memory write came from."""
    #: The GPU's own compute units (GEMM output stores).
    COMPUTE = 0
    #: The local DMA engine.
    DMA     = 1
    #: An update that arrived from a peer GPU over the network.
    REMOTE  = 2
