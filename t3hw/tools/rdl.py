# SPDX-License-Identifier: Apache-2.0
"""The register map in the ecosystem's formats: SystemRDL, and documents made from it.

:func:`systemrdl` writes :class:`t3hw.spec.regmap.RegisterMap` as one SystemRDL 2.0
``addrmap`` (``rtl/t3hw_regs.rdl``, written by ``t3hw generate``): every register at its
address, its fields with their bit ranges, software access (``sw = r`` for ``ro``,
``sw = rw`` for ``rw``, ``sw = rw; onwrite = woclr`` for the ``w1c`` sticky errors,
``sw = w`` for ``wo``), reset values (the constants ``ID`` and ``CONFIG``, the staging
registers' reset of :meth:`~t3hw.spec.regmap.RegisterMap.reset`, 0 for the sticky errors
and the counters; ``STATUS`` and ``COMMAND`` have none), descriptions, and the
enumerations as SystemRDL enums (``encode``). A user-defined property ``t3hw_group`` names
each register's group.

:func:`compile_rdl` compiles that text with ``systemrdl-compiler``; :func:`markdown` walks
the compiled model into ``docs/registers.md``, so the document comes from the exported map.
:func:`payloads` is ``rtl/payloads.md``: the bit layout of every stream payload port of the
generated tops, from :mod:`t3hw.spec.layouts`.
"""

import tempfile
from pathlib import Path

from amaranth.lib import data
from amaranth.lib import enum as am_enum

from t3hw.spec.regmap import MAGIC, Access, RegisterMap, WORD_BITS


__all__ = ["RDL", "TOP", "systemrdl", "compile_rdl", "markdown", "payloads"]

#: The SystemRDL file ``t3hw generate`` writes into ``rtl/``.
RDL = "t3hw_regs.rdl"

#: The name of the ``addrmap``.
TOP = "t3hw_csr"

#: SystemRDL properties of each access: ``(sw, hw, onwrite or None)``.
_PROPS = {
    Access.RO:  ("r", "w", None),
    Access.RW:  ("rw", "r", None),
    Access.W1C: ("rw", "w", "woclr"),
    Access.WO:  ("w", "r", None),
}

#: What a field of each access is, for its description.
_ROLE = {
    Access.RO:  "read only",
    Access.RW:  "read and write",
    Access.W1C: "sticky error, set by the hardware, write 1 to clear",
    Access.WO:  "write only, reads 0",
}

#: Access words of the document, from the compiled ``(sw, onwrite)``.
_DOC_ACCESS = {
    ("r", None): "ro",
    ("rw", None): "rw",
    ("rw", "woclr"): "w1c",
    ("w", None): "wo",
}

_ACCESS_LEGEND = ("`ro` read only (`sw = r`; a write sets `CSR_ERRORS.read_only`); "
                  "`rw` read and write (`sw = rw`); `w1c` read, write 1 to clear (`sw = rw; "
                  "onwrite = woclr`: sticky error bits); `wo` write only, reads 0 (`sw = w`)")


def _str(text):
    """A SystemRDL string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _params_line(rm):
    return ", ".join(f"{k}={v}" for k, v in rm.params.to_dict().items())


def _top_desc(rm):
    return (f"Parameters: {_params_line(rm)}. Bus byte address width: {rm.addr_width} bits. "
            f"ID.magic: {MAGIC:#010x}.")


def systemrdl(params, *, first_line):
    """The SystemRDL text of the register map for ``params``."""
    rm = RegisterMap(params)
    out = [first_line,
           f"// Register map of {TOP} for: {_params_line(rm)}.\n",
           "// Compiled by tests/test_rdl.py with systemrdl-compiler; docs/registers.md is made\n"
           "// from the compiled model (t3hw/tools/rdl.py).\n\n",
           "property t3hw_group { type = string; component = reg; };\n"]
    for ename, etype in rm.enums().items():
        width = am_enum.EnumMeta.as_shape(etype).width
        out.append(f"\nenum {ename} {{\n")
        for m in etype:
            out.append(f"    {m.name} = {width}'d{m.value};\n")
        out.append("};\n")
    out.append(f"\naddrmap {TOP} {{\n"
               f"    name = {_str('t3hw register block')};\n"
               f"    desc = {_str(_top_desc(rm))};\n"
               "    default regwidth = 32;\n    default accesswidth = 32;\n")
    for g in rm.groups.values():
        sw, hw, onwrite = _PROPS[g.access]
        value = rm.reset_value(g.name)
        for r in g.registers:
            word = None if value is None else r.extract(value)
            out.append(f"\n    reg {{\n        name = {_str(r.name)};\n"
                       f"        desc = {_str(g.doc)};\n"
                       f"        t3hw_group = {_str(g.name)};\n")
            for f in r.fields:
                member = g.layout[f.name]
                hw_f = "na" if g.name in ("ID", "CONFIG") else hw
                props = [f"sw = {sw}", f"hw = {hw_f}"]
                if onwrite:
                    props.append(f"onwrite = {onwrite}")
                if isinstance(member.shape, am_enum.EnumType):
                    props.append(f"encode = {member.shape.__name__}")
                part = (f"bits {f.lsb + f.width - 1}:{f.lsb} of the {member.width}-bit "
                        if member.width != f.width else "")
                kind = (f", one of {member.shape.__name__}"
                        if isinstance(member.shape, am_enum.EnumType) else "")
                props.append(f"desc = {_str(f'{part}{f.name} of {g.name}{kind}: {_ROLE[g.access]}')}")
                reset = ("" if word is None
                         else f" = {f.width}'h{(word >> f.offset) & ((1 << f.width) - 1):x}")
                out.append(f"        field {{ {'; '.join(props)}; }} "
                           f"{f.name}[{f.offset + f.width - 1}:{f.offset}]{reset};\n")
            out.append(f"    }} {r.name} @ {r.addr:#05x};\n")
    out.append("};\n")
    return "".join(out)


def compile_rdl(path_or_text):
    """The elaborated root of ``systemrdl-compiler`` for a SystemRDL file or text."""
    from systemrdl import RDLCompiler
    rdlc = RDLCompiler()
    if isinstance(path_or_text, Path) or "\n" not in str(path_or_text):
        rdlc.compile_file(str(path_or_text))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / RDL
            path.write_text(path_or_text)
            rdlc.compile_file(str(path))
    return rdlc.elaborate(top_def_name=TOP)


def field_access(field):
    """``ro``, ``rw``, ``w1c`` or ``wo`` of a compiled field node."""
    sw = field.get_property("sw").name
    onwrite = field.get_property("onwrite")
    return _DOC_ACCESS[(sw, onwrite.name if onwrite is not None else None)]


def markdown(root, *, first_line):
    """``docs/registers.md`` from a compiled model (:func:`compile_rdl`): every register with
    its address, reset value, and per field its bits, access, reset and description."""
    top = root.top
    regs = list(top.registers())
    enums = {}
    for reg in regs:
        for f in reg.fields():
            enc = f.get_property("encode")
            if enc is not None:
                enums.setdefault(enc.type_name, enc)
    out = [first_line, f"\n# Register map of `{top.inst_name}`\n\n",
           f"Made from the SystemRDL export `rtl/{RDL}` as compiled by systemrdl-compiler. "
           f"{top.get_property('desc')} Registers are {WORD_BITS} bits wide. Access: "
           f"{_ACCESS_LEGEND}. Bits outside the fields read 0 and are ignored on write. A reset "
           "of `-` is none (driven by the hardware, or a command). How the block behaves: "
           "[csr.md](csr.md).\n"]
    out.append("\nEnumerations:\n\n")
    for ename, enc in enums.items():
        out.append(f"* `{ename}`: " + ", ".join(f"`{m.name}` = {m.value}" for m in enc)
                   + "\n")
    group = None
    for reg in regs:
        fields = list(reg.fields())
        g = reg.get_property("t3hw_group")
        if g != group:
            group = g
            kinds = sorted({field_access(f) for f in fields})
            out.append(f"\n## {g} ({', '.join(kinds)})\n\n{reg.get_property('desc')}\n\n"
                       "| address | register | reset | bits | field | access | reset | "
                       "description |\n|---|---|---|---|---|---|---|---|\n")
        resets = [f.get_property("reset") for f in fields]
        word = (None if any(v is None for v in resets)
                else sum(v << f.low for v, f in zip(resets, fields)))
        for n, f in enumerate(fields):
            bits = f"{f.high}:{f.low}" if f.width > 1 else f"{f.low}"
            enc = f.get_property("encode")
            kind = f" (`{enc.type_name}`)" if enc is not None else ""
            reset = f.get_property("reset")
            head = (f"`{reg.absolute_address:#05x}` | `{reg.inst_name}` | "
                    + ("-" if word is None else f"`{word:#010x}`")) if n == 0 else " | | "
            out.append(f"| {head} | {bits} | `{f.inst_name}`{kind} | {field_access(f)} | "
                       + ("-" if reset is None else f"{reset:#x}")
                       + f" | {f.get_property('desc')} |\n")
    return "".join(out)


def _flatten(shape, prefix, offset):
    """``[(name, offset, width, shape)]`` of the leaves of a layout, nested names dotted."""
    if isinstance(shape, data.Layout) and not isinstance(shape, data.ArrayLayout):
        rows = []
        for name, member in shape:
            rows += _flatten(member.shape, f"{prefix}.{name}" if prefix else str(name),
                             offset + member.offset)
        return rows
    if isinstance(shape, data.ArrayLayout):
        rows = []
        for i in range(shape.length):
            rows += _flatten(shape.elem_shape, f"{prefix}[{i}]",
                             offset + i * data.Layout.cast(shape.elem_shape).size)
        return rows
    return [(prefix, offset, data.Shape.cast(shape).width if not isinstance(
        shape, am_enum.EnumType) else am_enum.EnumMeta.as_shape(shape).width, shape)]


def payloads(tops, *, first_line):
    """``rtl/payloads.md``: for every ``payload`` port of the generated tops (``{Verilog
    module: component}``), each field's name, bit offset, width and enum values."""
    out = [first_line, "\n# Stream payloads of the generated tops\n\n",
           "Every stream port `<name>__payload` of each module in `rtl/` (with its "
           "`<name>__valid` and `<name>__ready`), field by field: bit offset in the flat "
           "port, width, and the values of enumerated fields. Nested fields are dotted. From "
           "the layouts of `t3hw/spec/layouts.py`. Registers: [docs/registers.md]"
           "(../docs/registers.md).\n"]
    for module, component in tops.items():
        ports = []
        for path, member, _value in component.signature.flatten(component):
            if path[-1] == "payload":
                ports.append(("__".join(map(str, path)), member))
        if not ports:
            continue
        out.append(f"\n## `{module}`\n")
        for name, member in ports:
            shape = member.shape
            width = data.Shape.cast(shape).width if not isinstance(
                shape, data.Layout) else shape.size
            out.append(f"\n### `{name}` ({member.flow.name.lower()}, {width} bits)\n\n"
                       "| field | bits | offset | width | values |\n|---|---|---|---|---|\n")
            rows = (_flatten(shape, "", 0) if isinstance(shape, data.Layout)
                    else [("(whole)", 0, width, shape)])
            for fname, off, w, fshape in rows:
                bits = f"{off + w - 1}:{off}" if w > 1 else f"{off}"
                values = (f"`{fshape.__name__}`: "
                          + ", ".join(f"`{m.name}` = {m.value}" for m in fshape)
                          if isinstance(fshape, am_enum.EnumType) else "")
                out.append(f"| `{fname}` | {bits} | {off} | {w} | {values} |\n")
    return "".join(out)
