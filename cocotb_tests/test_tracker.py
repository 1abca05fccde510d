# SPDX-License-Identifier: Apache-2.0
"""Build the generated tracker Verilog with Verilator and run ``tb_tracker`` on it.

Three parameter sets (tiny tables, the paper's, large), each with 100,000 random writes
(``T3HW_EVENTS`` overrides), scored cycle by cycle against the reference model. With
``--waves`` (or ``WAVES=1``) every run also writes a VCD and a ``.gtkw``.
"""

import os
from pathlib import Path

import pytest

from t3hw import harness, waves as waves_mod
from t3hw.params import EngineParams


PARAMS = {
    # Degenerate: no tag bits, 1-bit counts and beats, one-entry queue (directed tests only).
    "minimal": EngineParams(tracker_entries=2, tile_width=1, count_width=1, beats_width=1,
                            cmd_width=1, trigger_depth=1, counter_width=8),
    "tiny":  EngineParams(tracker_entries=4, tile_width=4, count_width=4, beats_width=2,
                          cmd_width=2, trigger_depth=1, counter_width=16),
    "paper": EngineParams(),
    "large": EngineParams(tracker_entries=1024, tile_width=20, count_width=16, beats_width=6,
                          cmd_width=10, trigger_depth=64, counter_width=32),
}

HERE = Path(__file__).resolve().parent


def _run(params, seed, *, waves, events, testcase=None):
    runner, module, bdir = harness.build("tracker", params, waves=waves)
    trace = gtkw = None
    if waves:
        trace, gtkw = bdir / "tracker.vcd", bdir / "tracker.gtkw"
        waves_mod.write_tracker_gtkw(trace, module, params, gtkw)
        print(f"waves: {trace} (open with: gtkwave {gtkw})")
    harness.run(runner, module, bdir, "tb_tracker", params=params, seed=seed, test_dir=HERE,
                extra_env={"T3HW_EVENTS": str(events)}, trace_file=trace, testcase=testcase)
    return trace, gtkw


@pytest.mark.parametrize("name", [n for n in PARAMS if n != "minimal"])
def test_tracker(name, seed, waves):
    _run(PARAMS[name], seed, waves=waves, events=int(os.environ.get("T3HW_EVENTS", "100000")))


def test_tracker_minimal(seed, waves):
    """The degenerate set: a short random run and every directed test."""
    _run(PARAMS["minimal"], seed, waves=waves, events=5000)


def test_waves_open_on_the_trigger_path(seed):
    """A waves run writes a VCD, and every signal its .gtkw traces is in that VCD."""
    trace, gtkw = _run(PARAMS["tiny"], seed, waves=True, events=200, testcase="test_directed")
    traced = waves_mod.gtkw_traces(gtkw)
    in_dump = waves_mod.dump_names(trace)
    assert {"t3hw_tracker.trigger__valid", "t3hw_tracker.hit"} <= set(traced)
    assert [t for t in traced if t not in in_dump] == []
