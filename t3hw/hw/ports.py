# SPDX-License-Identifier: Apache-2.0
"""The ports of a block's Verilog module, named from its signature.

:func:`module_ports` is the one rule: :func:`t3hw.tools.generate.convert` gives a
component's module these ports, and :class:`t3hw.verif.simhdl.top.FastSystem` binds the
instances of such a module by the same names.
"""

from amaranth.hdl import Const, ValueCastable
from amaranth.lib import wiring


__all__ = ["module_ports"]


def module_ports(component):
    """``{name: (direction, value)}`` of ``component``'s module: one port per member of its
    signature, named by the member's path joined with ``"__"``, ``"i"`` for an input and
    ``"o"`` for an output, bound to the component's own member. Constant members (the
    ``ready`` of an ``always_ready`` stream) are not ports."""
    ports = {}
    for path, member, value in component.signature.flatten(component):
        if isinstance(value, ValueCastable):
            value = value.as_value()
        if isinstance(value, Const):
            continue
        ports["__".join(map(str, path))] = ("i" if member.flow == wiring.In else "o", value)
    return ports
