# SPDX-License-Identifier: Apache-2.0
"""GTKWave save files that open on the trigger path.

The dumps come from Verilator (FST). Struct ports are flat vectors in the dump; the save file
shows each field as a separate trace cut out of its vector, with the field name as alias, so
the layout (from :mod:`t3hw.layouts`) is the only source of the bit positions.
"""

from vcd.gtkw import GTKWSave

from .layouts import (program_layout, trigger_layout, tracker_errors_layout, write_layout)
from .params import EngineParams


__all__ = ["write_tracker_gtkw"]


def _vector(scope, name, width):
    return f"{scope}.{name}[{width - 1}:0]" if width > 1 else f"{scope}.{name}"


def _fields(g, scope, port, layout, datafmt="hex"):
    """One trace per field of a struct port, aliased ``port.field``."""
    full = _vector(scope, port, layout.size)
    for name, field in layout:
        lo, hi = field.offset, field.offset + field.width - 1
        if field.width == 0:
            continue
        sel = f"{full}[{hi}:{lo}]" if field.width > 1 else f"{full}[{lo}]"
        g.trace(sel, alias=f"{port}.{name}", datafmt=datafmt)


def write_tracker_gtkw(dump, module, params: EngineParams, path):
    """Write ``path``, a ``.gtkw`` for ``dump`` grouping the tracker's streams.

    Groups: the observed ``write`` stream, ``program``, the pipeline (``s1_*``, the
    forwarded entry, ``hit``/``done``), the ``trigger`` stream, and the sticky errors.
    """
    scope = f"TOP.{module}"
    with open(path, "w") as f:
        g = GTKWSave(f)
        g.dumpfile(str(dump))
        g.treeopen(f"TOP.{module}.")
        g.signals_width(280)
        g.trace(f"{scope}.clk")
        g.trace(f"{scope}.rst")
        g.trace(f"{scope}.busy")
        with g.group("write (observed)"):
            g.trace(f"{scope}.write__valid")
            _fields(g, scope, "write__payload", write_layout(params), datafmt="dec")
        with g.group("program"):
            g.trace(f"{scope}.program__valid")
            g.trace(f"{scope}.program__ready")
            _fields(g, scope, "program__payload", program_layout(params), datafmt="dec")
        with g.group("pipeline"):
            g.trace(f"{scope}.hit")
            g.trace(f"{scope}.done")
            g.trace(_vector(scope, "new_count", params.count_width + 1), datafmt="dec")
            g.trace(f"{scope}.fwd_valid")
            g.trace(f"{scope}.push")
        with g.group("trigger"):
            g.trace(f"{scope}.trigger__valid")
            g.trace(f"{scope}.trigger__ready")
            _fields(g, scope, "trigger__payload", trigger_layout(params), datafmt="dec")
        with g.group("errors (sticky)"):
            _fields(g, scope, "errors", tracker_errors_layout(params), datafmt="bin")
