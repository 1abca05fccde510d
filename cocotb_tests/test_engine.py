# SPDX-License-Identifier: Apache-2.0
"""Build the generated engine with Verilator and run the loop scenario (``tb_engine``) under
each arbitration policy on a small parameter set, and under T3-MCA on the paper's."""

from pathlib import Path

import pytest

from t3hw.tools import simulate, toolchain
from t3hw.spec.params import EngineParams


SMALL = EngineParams(tracker_entries=32, tile_width=8, count_width=8, cmd_width=5,
                     addr_width=20, pitch_width=16, burst_bytes=16, rows_width=6,
                     row_bytes_width=10, counter_width=32, occupancy_width=6,
                     mca_saturation=8, mca_window_log2=6, starvation_width=8,
                     starvation_limit=32)

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("policy", ["round_robin", "compute_first", "t3_mca", "t3_mca_rr"])
def test_engine_loop(policy, seed):
    runner, module, bdir = simulate.build("engine", SMALL)
    simulate.run(runner, module, bdir, "tb_engine", params=SMALL, seed=seed, test_dir=HERE,
                 testcase="test_loop",
                 extra_env={"T3HW_ENGINE_POLICY": policy, "T3HW_ENGINE_SHAPE": "8,4,2"})


def test_engine_loop_paper_params(seed):
    params = EngineParams()
    runner, module, bdir = simulate.build("engine", params)
    simulate.run(runner, module, bdir, "tb_engine", params=params, seed=seed, test_dir=HERE,
                 testcase="test_loop",
                 extra_env={"T3HW_ENGINE_POLICY": "t3_mca", "T3HW_ENGINE_SHAPE": "32,8,10"})


@pytest.mark.parametrize("scenario", ["link", "dram", "rewave", "reset"])
def test_back_pressure(scenario, seed):
    """Paper parameters, 128 one-burst tiles completing while the link (``link``; or the
    DRAM, then the link: ``dram``) is held for 6,000 cycles: every tile sent exactly once,
    with its data. ``rewave``: a second wave of 128 tiles mapped onto the same entries and
    descriptors while the first wave's triggers wait (refused ARMs and descriptor writes,
    retried; half the entries re-arm). ``reset``: a reset while the triggers wait, then a
    clean state and an exact second run."""
    params = EngineParams()
    runner, module, bdir = simulate.build("engine", params)
    simulate.run(runner, module, bdir, "tb_engine", params=params, seed=seed, test_dir=HERE,
                 testcase=f"test_back_pressure_{scenario}",
                 extra_env={"T3HW_ENGINE_SHAPE": "64,1,1", "T3HW_ENGINE_HOLD": "6000"})


@pytest.mark.parametrize("kind", ["rx", "store", "descriptor", "read_error", "bad_response"])
def test_bad_input(kind, seed):
    """The loop scenario with inputs the engine must refuse: received packets (misrouted, into
    its own REMOTE window, unmapped, crossing a region's end), a store crossing its region's
    end, descriptors with overlapping rows or a wrapping range, a DMA read answered with the
    DRAM's error bit or with a wrong tag (its descriptor aborted). Each leaves its sticky
    bit, its counter and the first one's capture; the rest of the scenario stays exact."""
    runner, module, bdir = simulate.build("engine", SMALL)
    simulate.run(runner, module, bdir, "tb_engine", params=SMALL, seed=seed, test_dir=HERE,
                 testcase="test_bad_input", extra_env={"T3HW_ENGINE_BAD": kind})


@pytest.mark.parametrize("block", ["engine", "system"])
def test_lint_clean(block, tmp_path):
    """The generated engine and 4-engine system pass ``verilator --lint-only -Wall``."""
    _, source = simulate.generate_for(block, EngineParams(), tmp_path)
    rc, out = toolchain.lint([source])
    assert rc == 0, out
