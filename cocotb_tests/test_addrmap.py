# SPDX-License-Identifier: Apache-2.0
"""Build the generated address map Verilog and run ``tb_addrmap`` on it, in each simulator
of :data:`t3hw.simulate.SIMULATORS` (Verilator and Icarus: same seed, same checks).

Three parameter sets (2 regions on an 8-bit address space, where random regions collide
often; 4 regions; the paper's defaults), each with ``STORES`` random stores
(``T3HW_ADDRMAP_STORES`` overrides) in both simulators, scored cycle by cycle, plus the
directed boundary, region-write error and refusal tests.
"""

import os
from pathlib import Path

import pytest

from t3hw.tools import simulate, toolchain
from t3hw.spec.params import EngineParams


PARAMS = {
    "pair":  EngineParams(addr_width=8, pitch_width=8, regions=2, device_width=1,
                          burst_bytes=2),
    "small": EngineParams(addr_width=12, pitch_width=12, regions=4, device_width=2,
                          burst_bytes=4),
    "paper": EngineParams(),
}

#: Random stores per parameter set.
STORES = 20000

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("name", list(PARAMS))
@pytest.mark.parametrize("sim", simulate.SIMULATORS)
def test_addrmap(sim, name, seed):
    params = PARAMS[name]
    runner, module, bdir = simulate.build("addrmap", params, sim=sim)
    env = {
        "T3HW_ADDRMAP_STORES": os.environ.get("T3HW_ADDRMAP_STORES", str(STORES)),
    }
    # The "pair" set has 2 regions; the boundary scenario needs 4.
    testcase = ["test_random", "test_every_error_bit", "test_every_refusal"] \
        if params.regions < 4 else None
    simulate.run(runner, module, bdir, "tb_addrmap", params=params, seed=seed, test_dir=HERE,
                extra_env=env, testcase=testcase)


def test_lint_clean(tmp_path):
    """The generated Verilog passes ``verilator --lint-only -Wall`` with the project waivers."""
    for name, params in PARAMS.items():
        _, source = simulate.generate_for("addrmap", params, tmp_path / name)
        rc, out = toolchain.lint([source])
        assert rc == 0, out
