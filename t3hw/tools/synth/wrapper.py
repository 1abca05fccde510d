# SPDX-License-Identifier: Apache-2.0
"""The timing wrapper: the ports of a block's generated Verilog (:func:`verilog_ports`) and
the wrapper around it (:func:`wrapper_verilog`, from ``t3hw/tools/synth_scripts/wrapper.v``),
which puts a register on every input and output bit and ends on three pins."""

import re

from .config import script_template


#: Name of the wrapper's top module.
WRAPPER_TOP = "t3hw_synth_wrapper"

#: Instance name of the block inside the wrapper (``wrapper.v``): the first name of every
#: flattened cell of the block's own.
DUT = "dut"


_PORT_RE = re.compile(r"^\s*(input|output|inout)\s+(?:\[(\d+):(\d+)\]\s+)?"
                      r"([A-Za-z_][\w$]*|\\[^\s;]+)\s*;",
                      re.M)


def verilog_ports(text, module):
    """Ports of ``module`` in generated Verilog ``text``, in header order.

    Returns
    -------
    list of (str, str, int)
        ``(direction, name, width)``; ``direction`` is ``"input"`` or ``"output"``.

    Raises
    ------
    ValueError
        When ``module`` is not in ``text``, has an ``inout`` port, or a header port has no
        declaration.
    """
    mo = re.search(rf"^module {re.escape(module)}\((.*?)\);\n(.*?)^endmodule", text, re.S | re.M)
    if mo is None:
        raise ValueError(f"module {module!r} not found in the Verilog text")
    header = [name.strip() for name in mo.group(1).split(",") if name.strip()]
    declared = {}
    for direction, msb, lsb, name in _PORT_RE.findall(mo.group(2)):
        if direction == "inout":
            raise ValueError(f"module {module!r}: inout port {name!r} cannot be wrapped")
        width = int(msb) - int(lsb) + 1 if msb else 1
        declared[name] = (direction, width)
    missing = [name for name in header if name not in declared]
    if missing:
        raise ValueError(f"module {module!r}: ports {missing!r} have no declaration")
    return [(declared[name][0], name, declared[name][1]) for name in header]


def _shift(reg, msb, new):
    """Verilog of ``reg`` shifted up by one bit with ``new`` coming in at bit 0."""
    return new if msb == 0 else f"{{{reg}[{msb - 1}:0], {new}}}"


def wrapper_verilog(module, ports, *, clock="clk"):
    """The timing wrapper (``t3hw/tools/synth_scripts/wrapper.v``) around ``module``.

    Parameters
    ----------
    module : str
        The block's module name.
    ports : list of (str, str, int)
        Its ports, from :func:`verilog_ports`. ``clock`` is connected to the wrapper's
        clock; every other input (``rst`` included) to the input shift register; every
        output to the output registers.

    Returns
    -------
    (str, int, int)
        The Verilog text, the input bits and the output bits behind the registers.
    """
    conns, in_bits, out_bits = [], 0, 0
    for direction, name, width in ports:
        if direction == "input" and name == clock:
            conns.append(f"    .{name}(clk)")
        elif direction == "input":
            conns.append(f"    .{name}(in_sr[{in_bits + width - 1}:{in_bits}])")
            in_bits += width
        else:
            conns.append(f"    .{name}(out[{out_bits + width - 1}:{out_bits}])")
            out_bits += width
    if not out_bits:
        raise ValueError(f"module {module!r} has no output: nothing to measure")
    in_msb = max(in_bits, 1) - 1
    text = script_template("wrapper.v").substitute(
        module=module, dut=DUT, in_msb=in_msb, out_msb=out_bits - 1,
        in_next=_shift("in_sr", in_msb, "si"),
        out_next="out_r" if out_bits == 1 else
                 "out_r ^ " + _shift("out_sr", out_bits - 1, "1'b0"),
        connections=",\n".join(conns))
    return text, in_bits, out_bits
