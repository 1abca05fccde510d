# SPDX-License-Identifier: Apache-2.0
"""Build the generated DMA Verilog and run ``tb_dma`` on it, in each simulator of
:data:`t3hw.simulate.SIMULATORS` (Verilator and Icarus: same seed, same checks).

Three parameter sets (tiny: one outstanding read and a one-deep ready queue; mid; the paper's
defaults), each running ``JOBS`` random descriptors (``T3HW_DMA_JOBS`` overrides) in both
simulators with every read and packet scored against the reference model, plus the directed
error, full-queue and back-to-back tests.
"""

import os
from pathlib import Path

import pytest

from t3hw.tools import simulate, toolchain
from t3hw.spec.params import EngineParams


PARAMS = {
    "tiny":  EngineParams(tracker_entries=4, tile_width=4, cmd_width=2, addr_width=16,
                          device_width=2, dma_ready_depth=1, burst_bytes=8, max_outstanding=1,
                          rows_width=2, row_bytes_width=6, pitch_width=8),
    "mid":   EngineParams(cmd_width=4, addr_width=32, dma_ready_depth=4, burst_bytes=16,
                          max_outstanding=4, rows_width=4, row_bytes_width=8, pitch_width=12),
    "paper": EngineParams(),
}

#: Random descriptors per parameter set (20,000 or more over the three).
JOBS = 7000

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("name", list(PARAMS))
@pytest.mark.parametrize("sim", simulate.SIMULATORS)
def test_dma(sim, name, seed):
    params = PARAMS[name]
    runner, module, bdir = simulate.build("dma", params, sim=sim)
    env = {
        "T3HW_DMA_JOBS": os.environ.get("T3HW_DMA_JOBS", str(JOBS)),
    }
    simulate.run(runner, module, bdir, "tb_dma", params=params, seed=seed, test_dir=HERE,
                extra_env=env)


def test_lint_clean(tmp_path):
    """The generated Verilog passes ``verilator --lint-only -Wall`` with the project waivers."""
    for name, params in PARAMS.items():
        _, source = simulate.generate_for("dma", params, tmp_path / name)
        rc, out = toolchain.lint([source])
        assert rc == 0, out
