# SPDX-License-Identifier: Apache-2.0
"""Build the generated tracker Verilog with Verilator and run ``tb_tracker`` on it.

Three parameter sets (tiny tables, the paper's, large), each with 100,000 random writes
(``T3HW_EVENTS`` overrides), scored cycle by cycle against the reference model.
"""

import json
import os
from pathlib import Path

import pytest

from t3hw import harness, waves as waves_mod
from t3hw.params import EngineParams


PARAMS = {
    "tiny":  EngineParams(tracker_entries=4, tile_width=4, count_width=4, beats_width=2,
                          cmd_width=2, trigger_depth=1, counter_width=16),
    "paper": EngineParams(),
    "large": EngineParams(tracker_entries=1024, tile_width=20, count_width=16, beats_width=6,
                          cmd_width=10, trigger_depth=64, counter_width=32),
}

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("name", list(PARAMS))
def test_tracker(name, seed, waves):
    params = PARAMS[name]
    runner, module, bdir = harness.build("tracker", params, waves=waves)
    env = {
        "T3HW_PARAMS": json.dumps(params.to_dict()),
        "T3HW_SEED": str(seed),
        "T3HW_EVENTS": os.environ.get("T3HW_EVENTS", "100000"),
    }
    trace = None
    if waves:
        trace = bdir / "tracker.fst"
        waves_mod.write_tracker_gtkw(trace, module, params, bdir / "tracker.gtkw")
        print(f"waves: {trace} (open with: gtkwave {bdir / 'tracker.gtkw'})")
    harness.run(runner, module, bdir, "tb_tracker", test_dir=HERE, extra_env=env,
                trace_file=trace, seed=seed)
