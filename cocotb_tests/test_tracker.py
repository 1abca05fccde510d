# SPDX-License-Identifier: Apache-2.0
"""Build the generated tracker Verilog and run ``tb_tracker`` on it, in each simulator of
:data:`t3hw.simulate.SIMULATORS` (Verilator and Icarus: same seed, same checks).

Three parameter sets (tiny tables, the paper's, large), each with 100,000 random writes
(``T3HW_EVENTS`` overrides) in both simulators, scored cycle by cycle against the reference
model. With ``--waves`` (or ``WAVES=1``) every run also writes a dump (Verilator: VCD,
Icarus: FST) and a ``.gtkw``.
"""

import os
from pathlib import Path

import pytest

from t3hw.tools import simulate
from t3hw.tools import waves as waves_mod
from t3hw.spec.params import EngineParams


PARAMS = {
    # Degenerate: no tag bits, 1-bit counts and beats, one-entry queue (directed tests only).
    "minimal": EngineParams(tracker_entries=2, tile_width=1, count_width=1, beats_width=1,
                            cmd_width=1, counter_width=8),
    "tiny":  EngineParams(tracker_entries=4, tile_width=4, count_width=4, beats_width=2,
                          cmd_width=2, counter_width=16),
    "paper": EngineParams(),
    "large": EngineParams(tracker_entries=1024, tile_width=20, count_width=16, beats_width=6,
                          cmd_width=10, counter_width=32),
}

HERE = Path(__file__).resolve().parent


def _run(params, seed, *, waves, events, testcase=None, sim="verilator"):
    runner, module, bdir = simulate.build("tracker", params, waves=waves, sim=sim)
    trace = gtkw = None
    if waves:
        trace, gtkw = bdir / f"tracker{simulate.WAVE_SUFFIX[sim]}", bdir / "tracker.gtkw"
        waves_mod.write_tracker_gtkw(trace, module, params, gtkw)
        print(f"waves: {trace} (open with: gtkwave {gtkw})")
    simulate.run(runner, module, bdir, "tb_tracker", params=params, seed=seed, test_dir=HERE,
                extra_env={"T3HW_EVENTS": str(events)}, trace_file=trace, testcase=testcase)
    return trace, gtkw


@pytest.mark.parametrize("name", [n for n in PARAMS if n != "minimal"])
@pytest.mark.parametrize("sim", simulate.SIMULATORS)
def test_tracker(sim, name, seed, waves):
    _run(PARAMS[name], seed, waves=waves, events=int(os.environ.get("T3HW_EVENTS", "100000")),
         sim=sim)


@pytest.mark.parametrize("sim", simulate.SIMULATORS)
def test_tracker_minimal(sim, seed, waves):
    """The degenerate set: a short random run and every directed test."""
    _run(PARAMS["minimal"], seed, waves=waves, events=5000, sim=sim)


@pytest.mark.parametrize("sim", simulate.SIMULATORS)
def test_waves_open_on_the_trigger_path(sim, seed):
    """A waves run writes a dump (VCD, or FST under Icarus), and every signal its .gtkw
    traces is in that dump."""
    trace, gtkw = _run(PARAMS["tiny"], seed, waves=True, events=200, testcase="test_directed",
                       sim=sim)
    traced = waves_mod.gtkw_traces(gtkw)
    in_dump = waves_mod.dump_names(trace)
    assert {"t3hw_tracker.trigger__valid", "t3hw_tracker.hit"} <= set(traced)
    assert [t for t in traced if t not in in_dump] == []
