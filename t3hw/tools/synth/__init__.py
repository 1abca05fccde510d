# SPDX-License-Identifier: Apache-2.0
"""``t3hw synth``: synthesis area and post-route Fmax of the blocks, for three parameter sets.

For every block of :data:`BLOCKS` and every parameter set of :data:`PARAM_SETS`, :func:`run`
generates the Verilog (:func:`t3hw.tools.simulate.generate_for`, the same text as ``rtl/``)
and runs the YoWASP tools of this environment on it, at most ``jobs`` processes at a time:

* **generic**: Yosys' technology-independent ``synth``, flattened, with memories kept as
  memory cells (``t3hw/tools/synth_scripts/generic.ys``); the cell count, flip-flops, memory
  bits.
* **ECP5**: ``synth_ecp5`` of the block inside the timing wrapper
  (``t3hw/tools/synth_scripts/ecp5.ys``, ``t3hw/tools/synth_scripts/wrapper.v``), then
  ``nextpnr-ecp5`` for the LFE5U-85F, package CABGA381, speed grade 6 (:data:`ECP5`) at a
  target of ``freq`` MHz, once per seed; LUT4, flip-flops, block RAM (DP16KD), DSP
  (MULT18X18D) of the block alone, and the post-route Fmax (the median over the seeds) read
  from nextpnr's ``--report`` JSON.
* **iCE40**: ``synth_ice40`` of the bare block (``t3hw/tools/synth_scripts/ice40.ys``);
  utilisation only.

The timing wrapper
------------------
A block has hundreds of port bits, more than any package has pins, and a port that is a pin
measures pad delays rather than the block. The wrapper
(``t3hw/tools/synth_scripts/wrapper.v``, filled in by :func:`wrapper_verilog`) drives every
input bit of the block from a serial-in shift register and registers every output bit, then
folds the output registers into a shift/XOR chain that ends on one pin: three pins (``clk``,
``si``, ``so``) for any block. Every input is thus a flip-flop of unknown value and every
output reaches a pin, so Yosys can strip nothing, and nextpnr measures the block's paths from
register to register, including its combinational input-to-output paths (input register to
output register). The wrapper's own paths are a flip-flop to a flip-flop through at most one
2-input XOR. The block keeps its own module (``keep_hierarchy``), so the ECP5 statistics are
those of the block alone, optimised exactly as a stand-alone block.

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

The package
-----------
One module per part of the flow; everything is imported from here:

* :mod:`.config`: the blocks, parameter sets, targets and defaults, the script templates, the
  tracker's storage figures;
* :mod:`.wrapper`: the block's ports and the timing wrapper's Verilog;
* :mod:`.reports`: the Yosys and nextpnr report parsers and the figures of each flow;
* :mod:`.netlist`: the pass over the ECP5 netlist that moves block RAM read registers into
  the RAMs;
* :mod:`.flow`: the tool runner, the scheduler, one job per block and parameter set,
  :func:`synth_block` and :func:`run`;
* :mod:`.docs`: the Markdown tables and their update in ``docs/synthesis.md``;
* :mod:`.command`: the ``t3hw synth`` and ``t3hw synth-scale`` options and commands;
* :mod:`.scaling`: ``t3hw synth-scale``, the scaling sweep: its axes, the power-law fits, the
  sweep and its results file;
* :mod:`.scaling_report`: the sweep's Markdown tables, their update in ``docs/synthesis.md``,
  and its plot.
"""

from ..errors import ToolError
from .command import (add_arguments, add_levels_arguments, add_scale_arguments, cmd,
                      levels_cmd, scale_cmd)
from .config import (BLOCKS, DEFAULT_FREQ_MHZ, DEFAULT_JOBS, DEFAULT_PNR_TIMEOUT_S,
                     DEFAULT_SEEDS, DEFAULT_TIMEOUT_S, ECP5, ECP5_COLLISIONS, ICE40, MAX_JOBS,
                     PARAM_SETS, SCRIPTS, entry_name, tracker_storage, tracker_storage_bits)
from .docs import critical_paths_table, markdown_table
from .flow import FLOWS, ToolTimeout, logic_levels, run, synth_block, tool_versions
from .netlist import absorb_mult_output_registers, absorb_ram_output_registers, net_sinks
from .reports import (ecp5_figures, generic_figures, ice40_figures, parse_memories,
                      parse_nextpnr_report, parse_stat, parse_utilization, signal_of,
                      source_lines)
from .wrapper import WRAPPER_TOP, verilog_ports, wrapper_verilog


__all__ = ["BLOCKS", "PARAM_SETS", "ECP5", "ICE40", "DEFAULT_SEEDS", "DEFAULT_FREQ_MHZ",
           "SCRIPTS", "ECP5_COLLISIONS", "ToolError", "ToolTimeout", "tracker_storage_bits",
           "tracker_storage", "entry_name", "verilog_ports", "wrapper_verilog", "parse_stat",
           "parse_memories", "parse_nextpnr_report", "parse_utilization", "signal_of",
           "source_lines", "generic_figures", "ecp5_figures", "net_sinks",
           "absorb_ram_output_registers", "absorb_mult_output_registers", "ice40_figures",
           "tool_versions",
           "synth_block", "run", "markdown_table", "critical_paths_table", "add_arguments", "cmd",
           "FLOWS", "add_scale_arguments", "scale_cmd", "logic_levels", "add_levels_arguments",
           "levels_cmd"]
