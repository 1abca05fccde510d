# SPDX-License-Identifier: Apache-2.0
"""Reading the tools' reports: Yosys ``stat -json`` and ``write_json`` output, nextpnr's
``--report`` JSON (Fmax, critical path, utilisation), the cell names of a mapped netlist
(:func:`signal_of`), and the figures of each flow (:func:`generic_figures`,
:func:`ecp5_figures`, :func:`ice40_figures`)."""

import json
import re
from pathlib import Path

from .config import ICE40
from .wrapper import DUT


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
    if not cell.startswith(DUT + "."):
        return None
    # A Yosys-internal wire (``$signal``, escaped as ``\$signal``) keeps its ``$``.
    body = cell[len(DUT) + 1:].lstrip("\\")
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
