# SPDX-License-Identifier: Apache-2.0
"""Build the generated arbiter Verilog and run ``tb_arbiter`` on it, in each simulator of
:data:`t3hw.simulate.SIMULATORS` (Verilator and Icarus: same seed, same checks).

Per policy, ``CYCLES`` random cycles (``T3HW_ARB_CYCLES`` overrides; 40,000 in both
simulators, ``LONG_CYCLES`` in Verilator under ``make test-long``) on a small parameter set
whose occupancy and starvation counters are 4 bits wide, so that thresholds, forced grants
and derivations happen often (every few hundred cycles: the test's log counts them); then a
quarter of that with the policy switched at run time on the paper's parameters; then the
directed scenarios.
"""

import os
from pathlib import Path

import pytest

from t3hw.tools import simulate, toolchain
from t3hw.spec.layouts import ArbPolicy
from t3hw.spec.params import EngineParams


SMALL = dict(addr_width=12, pitch_width=12, tile_width=8, burst_bytes=4, occupancy_width=4,
             starvation_width=4, starvation_limit=6, mca_saturation=8, mca_window_log2=3)

#: Random cycles per policy, the same in both simulators (Icarus takes about 1.5 times
#: Verilator's wall time here: the Python scoreboard dominates).
CYCLES = 40_000

#: Random cycles per policy of the ``long`` run (``make test-long``).
LONG_CYCLES = 400_000

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("policy", list(ArbPolicy), ids=lambda p: p.name.lower())
@pytest.mark.parametrize("sim", simulate.SIMULATORS)
def test_policy(sim, policy, seed):
    """Cycle-exact agreement with the model over ``CYCLES`` random cycles of one policy."""
    params = EngineParams(**SMALL, arbiter_policy=policy.value)
    runner, module, bdir = simulate.build("arbiter", params, sim=sim)
    env = {"T3HW_ARB_CYCLES": os.environ.get("T3HW_ARB_CYCLES", str(CYCLES)),
           "T3HW_ARB_POLICIES": ""}
    simulate.run(runner, module, bdir, "tb_arbiter", params=params, seed=seed, test_dir=HERE,
                extra_env=env, testcase=["test_random"])


@pytest.mark.long
@pytest.mark.parametrize("policy", list(ArbPolicy), ids=lambda p: p.name.lower())
def test_policy_long(policy, seed):
    """:func:`test_policy` for ``LONG_CYCLES`` cycles, in Verilator."""
    params = EngineParams(**SMALL, arbiter_policy=policy.value)
    runner, module, bdir = simulate.build("arbiter", params, sim="verilator")
    env = {"T3HW_ARB_CYCLES": str(LONG_CYCLES), "T3HW_ARB_POLICIES": ""}
    simulate.run(runner, module, bdir, "tb_arbiter", params=params, seed=seed, test_dir=HERE,
                extra_env=env, testcase=["test_random"])


@pytest.mark.parametrize("sim", simulate.SIMULATORS)
def test_switching_and_directed(sim, seed):
    """Paper parameters: random traffic with the policy switched at run time, then the
    directed scenarios (on the small set, whose 4-bit counters they assume)."""
    params = EngineParams()
    runner, module, bdir = simulate.build("arbiter", params, sim=sim)
    env = {"T3HW_ARB_CYCLES": str(max(1, int(os.environ.get("T3HW_ARB_CYCLES", str(CYCLES)))
                                      // 4)),
           "T3HW_ARB_POLICIES": ",".join(str(p.value) for p in ArbPolicy)}
    simulate.run(runner, module, bdir, "tb_arbiter", params=params, seed=seed, test_dir=HERE,
                extra_env=env, testcase=["test_random"])
    small = EngineParams(**SMALL)
    runner, module, bdir = simulate.build("arbiter", small, sim=sim)
    simulate.run(runner, module, bdir, "tb_arbiter", params=small, seed=seed, test_dir=HERE,
                testcase=["test_directed"])


def test_lint_clean(tmp_path):
    """The generated Verilog passes ``verilator --lint-only -Wall`` with the project waivers."""
    for name, params in (("small", EngineParams(**SMALL)), ("paper", EngineParams())):
        _, source = simulate.generate_for("arbiter", params, tmp_path / name)
        rc, out = toolchain.lint([source])
        assert rc == 0, out
