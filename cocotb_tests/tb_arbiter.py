# SPDX-License-Identifier: Apache-2.0
"""cocotb testbench of the generated arbiter Verilog, scored cycle by cycle.

The stimulus, the scoreboard and the directed scenarios are :mod:`t3hw.verif.arbiter_env`'s (the
amaranth.sim tests run the same ones): every cycle, the ready of every input, the DRAM
request, the routed responses, the tracker write, the status, the error bits and every
counter are compared with :class:`sim_models.arbiter.ArbiterModel`, and the starvation bound
is checked from the outputs. Run-time settings come from the environment that
``test_arbiter.py`` sets: ``T3HW_PARAMS``, ``T3HW_SEED``, ``T3HW_ARB_CYCLES`` (random cycles
of ``test_random``) and ``T3HW_ARB_POLICIES`` (comma-separated policy codes that random
configuration writes choose from; empty: keep the reset policy).
"""

import os

import cocotb

from t3hw.verif import arbiter_directed as arbiter_model
from t3hw.verif.arbiter_env import ArbiterEnv
from t3hw.spec.layouts import ArbPolicy
from t3hw.verif.cocotb_tb import EnvTB


class ArbiterTB(EnvTB):
    """One arbiter driven through an :class:`ArbiterEnv` (``env_args`` are its options)."""

    def __init__(self, dut, **env_args):
        super().__init__(dut, lambda params, rng: ArbiterEnv(params, rng, **env_args))


@cocotb.test()
async def test_random(dut):
    """Random requests in bursts and lulls on all four inputs, DRAM and response
    back-pressure, a random occupancy trace, random track_hold, random configuration writes
    (a tenth bad), error clears."""
    cycles = int(os.environ.get("T3HW_ARB_CYCLES", "20000"))
    codes = os.environ.get("T3HW_ARB_POLICIES", "")
    policies = [ArbPolicy(int(c)) for c in codes.split(",")] if codes else None
    tb = ArbiterTB(dut, cycles=cycles, policies=policies)
    await tb.hold_reset()
    env = tb.env
    await arbiter_model.run(env, tb.cycle)
    dut._log.info("seed=%d: %d cycles, grants %s, forced %d, longest waits %s, with held "
                  "slots %s, stats %s, errors %s", tb.seed, env.cycle, env.grants, env.forced,
                  env.worst, env.worst_held, env.model.stats,
                  {k for k, v in env.model.errors.items() if v})
    assert all(env.grants.values())


@cocotb.test()
async def test_directed(dut):
    """T3-MCA's bound holds from reset, while deriving; the starvation bound is tight
    (T3-MCA, limits 1 and 3) and a track_hold in the forced slot costs one slot; track_hold
    keeps tracked writes out and frees a cycle of ``track``; compute-first starves; round
    robin alternates; the threshold gates communication; the derived threshold equals its
    closed form; bad configurations and responses are rejected."""
    tb = ArbiterTB(dut, stall=0)
    await tb.hold_reset()
    env, cycle = tb.env, tb.cycle
    await arbiter_model.bound_holds_from_reset(env, cycle)
    for limit in (1, 3):
        await arbiter_model.starvation_is_tight(env, cycle, limit=limit)
        await arbiter_model.hold_costs_one_slot(env, cycle, limit=limit)
    await arbiter_model.hold_skips_tracked_writes(env, cycle)
    await arbiter_model.hold_frees_track(env, cycle)
    await arbiter_model.compute_first_starves(env, cycle)
    await arbiter_model.round_robin_alternates(env, cycle)
    await arbiter_model.mca_rr_alternates_below_threshold(env, cycle)
    await arbiter_model.threshold_gates_comm(env, cycle)
    for saturation, window_log2, duty in ((11, 4, 3), (15, 0, 1), (9, 6, 2)):
        await arbiter_model.derives_threshold(env, cycle, saturation=saturation,
                                              window_log2=window_log2, duty=duty)
    await arbiter_model.rejects_bad_config(env, cycle)
    await arbiter_model.drops_bad_response(env, cycle)
