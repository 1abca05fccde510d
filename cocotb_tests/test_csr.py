# SPDX-License-Identifier: Apache-2.0
"""Build the generated register block Verilog and run ``tb_csr`` on it, in each simulator of
:data:`t3hw.simulate.SIMULATORS` (Verilator and Icarus: same seed, same checks).

Two parameter sets (the paper's; a wide one with 64-bit addresses and counters and 32-bit
tiles, where fields span two registers, and the arbiter configuration spans three), each with
``OPS`` random bus cycles (``T3HW_CSR_OPS`` overrides) in both simulators, scored cycle by
cycle, the directed register, error and read-back tests, the driver programming one GPU of a
4-GPU ring reduce-scatter (the GPU is drawn from the seed) and the driver configuring the
arbiter.
"""

import os
from pathlib import Path

import pytest

from t3hw.tools import simulate, toolchain
from t3hw.spec.params import EngineParams


PARAMS = {
    "paper": EngineParams(),
    "wide":  EngineParams(tracker_entries=64, tile_width=32, count_width=24, cmd_width=6,
                          counter_width=64, addr_width=64, pitch_width=64, regions=16,
                          device_width=16, rows_width=24, row_bytes_width=32,
                          occupancy_width=16, arbiter_policy=1, mca_threshold=1234,
                          mca_saturation=40000, mca_window_log2=24, starvation_width=24,
                          starvation_limit=(1 << 24) - 1),
}

#: Random bus cycles per parameter set.
OPS = 20000

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("name", list(PARAMS))
@pytest.mark.parametrize("sim", simulate.SIMULATORS)
def test_csr(sim, name, seed):
    params = PARAMS[name]
    runner, module, bdir = simulate.build("csr", params, sim=sim)
    env = {
        "T3HW_CSR_OPS": os.environ.get("T3HW_CSR_OPS", str(OPS)),
        "T3HW_CSR_GPU": str(seed % 4),
    }
    simulate.run(runner, module, bdir, "tb_csr", params=params, seed=seed, test_dir=HERE,
                extra_env=env)


def test_lint_clean(tmp_path):
    """The generated Verilog passes ``verilator --lint-only -Wall`` with the project waivers."""
    for name, params in PARAMS.items():
        _, source = simulate.generate_for("csr", params, tmp_path / name)
        rc, out = toolchain.lint([source])
        assert rc == 0, out
