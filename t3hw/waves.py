# SPDX-License-Identifier: Apache-2.0
"""GTKWave save files that open on the trigger path, and reading dumps back.

Dumps come from Verilator (VCD), whose top scope is the generated module. Amaranth emits one
named wire per struct field (``write__payload__tile``), so the save file traces every field
of a payload under its own name; the widths come from the layouts in :mod:`t3hw.layouts`.
"""

import re

from vcd.gtkw import GTKWSave

from .layouts import (entry_layout, program_layout, trigger_layout, tracker_errors_layout,
                      write_layout)
from .params import EngineParams


__all__ = ["write_tracker_gtkw", "gtkw_traces", "dump_names"]


def _name(scope, name, width):
    return f"{scope}.{name}[{width - 1}:0]" if width > 1 else f"{scope}.{name}"


def _fields(g, scope, port, layout, datafmt="dec"):
    """One trace per (non-empty) field of the struct signal ``port``."""
    for name, field in layout:
        if field.width:
            g.trace(_name(scope, f"{port}__{name}", field.width), datafmt=datafmt)


def write_tracker_gtkw(dump, module, params: EngineParams, path):
    """Write ``path``, a ``.gtkw`` for the tracker ``dump`` grouping its streams.

    Groups: the observed ``write`` stream, ``program``, the S1 pipeline stage (the entry as
    read and forwarded, hit, new count, completion, push), the ``trigger`` stream, the sticky
    errors and the counters.
    """
    s = module
    with open(path, "w") as f:
        g = GTKWSave(f)
        g.dumpfile(str(dump))
        g.treeopen(f"{s}.")
        g.signals_width(300)
        g.zoom_markers(-6.0)
        g.trace(f"{s}.clk")
        g.trace(f"{s}.rst")
        g.trace(f"{s}.busy")
        with g.group("write (observed)"):
            g.trace(f"{s}.write__valid")
            _fields(g, s, "write__payload", write_layout(params))
        with g.group("program"):
            g.trace(f"{s}.program__valid")
            g.trace(f"{s}.program__ready")
            _fields(g, s, "program__payload", program_layout(params))
        with g.group("S1: lookup and count"):
            g.trace(f"{s}.s1_valid")
            g.trace(f"{s}.s1_prog")
            g.trace(f"{s}.fwd_valid")
            _fields(g, s, "cur", entry_layout(params))
            g.trace(f"{s}.hit")
            g.trace(_name(s, "new_count", params.count_width + 1), datafmt="dec")
            g.trace(f"{s}.done")
            g.trace(f"{s}.push")
        with g.group("trigger"):
            g.trace(f"{s}.trigger__valid")
            g.trace(f"{s}.trigger__ready")
            _fields(g, s, "trigger__payload", trigger_layout(params))
        with g.group("errors (sticky)"):
            _fields(g, s, "errors", tracker_errors_layout(params), datafmt="bin")


def gtkw_traces(path):
    """Signal names (without bit ranges) traced by a ``.gtkw`` file."""
    names = []
    for line in open(path):
        line = line.strip()
        if line and not line[0] in "[@-*+":
            names.append(re.sub(r"\[\d+:\d+\]$", "", line))
    return names


def dump_names(path):
    """Full names of every variable in a VCD or FST dump (read with pywellen)."""
    from pywellen import Waveform
    return {v.full_name for v in Waveform(path=str(path)).all_vars()}
