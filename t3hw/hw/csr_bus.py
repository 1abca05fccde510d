# SPDX-License-Identifier: Apache-2.0
"""The register bus of the register block (:mod:`t3hw.hw.csr`): its signature, the bus word of
a register, and the read multiplexer tree. The board top (``t3hw/tools/board/top.py``) builds
its own registers' words with :func:`register_word` too.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from t3hw.spec.regmap import WORD_BITS


__all__ = ["BusSignature", "register_word", "mux_tree", "or_tree"]


class BusSignature(wiring.Signature):
    """The register bus, seen from its initiator (the host).

    Parameters
    ----------
    addr_width : int
        Width of the byte address, in [3, 32].

    Members
    -------
    addr : Out(addr_width)
        Byte address of the access (a multiple of 4; other addresses are unmapped).
    w_data : Out(32)
        Data to write (always the whole register).
    w_stb : Out(1)
        Write ``w_data`` to ``addr`` this cycle.
    r_stb : Out(1)
        Read ``addr`` this cycle.
    r_data : In(32)
        The register read three cycles before (fixed latency 3,
        :data:`~t3hw.spec.contract.CSR_READ_LATENCY`: the target registers the bus as it
        enters and reads through two registered stages), held until the next read's data.

    One access per cycle, no wait states; reads may follow each other back to back (each
    read's data is on ``r_data`` in the third cycle after its strobe). ``r_stb`` and
    ``w_stb`` may be high together: the read returns the register as it was before the
    write.
    """

    def __init__(self, addr_width):
        if not isinstance(addr_width, int) or not 3 <= addr_width <= 32:
            raise ValueError(f"addr_width must be an integer in [3, 32], not {addr_width!r}")
        super().__init__({
            "addr":   Out(addr_width),
            "w_data": Out(WORD_BITS),
            "w_stb":  Out(1),
            "r_stb":  Out(1),
            "r_data": In(WORD_BITS),
        })


def register_word(reg, value):
    """The 32-bit bus word of a register, from its group's bits.

    Parameters
    ----------
    reg : t3hw.spec.regmap.Register
        A register of the :class:`~t3hw.spec.regmap.RegisterMap`.
    value : Value
        The layout bits of its group (a field's ``bit`` indexes them).

    Returns
    -------
    Value
        ``WORD_BITS`` bits: each field's ``value[bit:bit + width]`` at its ``offset``, every
        other bit 0. The register block's read multiplexer and the board top's read-back
        (``t3hw/tools/board/top.py``) both build their words with it.
    """
    parts, pos = [], 0
    for f in reg.fields:
        if f.offset > pos:
            parts.append(Const(0, f.offset - pos))
        parts.append(value[f.bit:f.bit + f.width])
        pos = f.offset + f.width
    if pos < WORD_BITS:
        parts.append(Const(0, WORD_BITS - pos))
    return Cat(*parts)


def mux_tree(words, sel):
    """``words[sel]`` as a binary tree of multiplexers on the bits of ``sel``; ``None`` words,
    and subtrees of them, read 0."""
    if all(w is None for w in words):
        return Const(0, WORD_BITS)
    if len(words) == 1:
        return words[0]
    half = len(words) // 2
    return Mux(sel[-1], mux_tree(words[half:], sel[:-1]), mux_tree(words[:half], sel[:-1]))


def or_tree(words):
    """The OR of ``words`` (0 for none), as a balanced tree."""
    if not words:
        return Const(0, WORD_BITS)
    if len(words) == 1:
        return words[0]
    half = len(words) // 2
    return or_tree(words[:half]) | or_tree(words[half:])
