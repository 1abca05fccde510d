# SPDX-License-Identifier: Apache-2.0
"""Small pieces of combinational logic that more than one block builds the same way."""

from amaranth import *

__all__ = ["one_hot_select"]


def one_hot_select(selects, values):
    """The value of ``values`` whose bit of ``selects`` (one 1-bit value per value, at most
    one high) is set: an OR of ANDs, 0 with none set. Each select drives one level of logic
    per bit, with no decode between (the merge's and the arbiter's outputs)."""
    out = C(0, len(Value.cast(values[0])))
    for select, value in zip(selects, values, strict=True):
        out = out | Mux(select, Value.cast(value), 0)
    return out
