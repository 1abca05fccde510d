# SPDX-License-Identifier: Apache-2.0
"""Fast amaranth.sim tests of the arbiter against its reference model, cycle by cycle, and
tests of the model's rules themselves.

The stimulus, the scoreboard and the scenarios are the cocotb testbench's
(:mod:`t3hw.verif.arbiter_env`); only the port access differs.
"""

import random

import pytest

from sim_models.arbiter import ArbiterModel, config_ok, derived_threshold
from t3hw.verif import arbiter_directed as arbiter_model
from t3hw.verif.arbiter_env import ArbiterEnv
from t3hw.verif.amsim import run_env
from t3hw.hw.arbiter import Arbiter
from t3hw.spec.contract import MAX_WINDOW_LOG2, arbiter_reset_config as reset_config
from t3hw.spec.layouts import ArbPolicy
from t3hw.spec.params import EngineParams


SMALL = dict(addr_width=12, pitch_width=12, tile_width=8, burst_bytes=4, occupancy_width=4,
             starvation_width=4, starvation_limit=6, mca_saturation=8, mca_window_log2=3)


def _simulate(params, body, *, seed=1, **env_args):
    return run_env(Arbiter(params), ArbiterEnv(params, random.Random(seed), **env_args), body)


@pytest.mark.parametrize("policy", list(ArbPolicy), ids=lambda p: p.name.lower())
def test_random_against_model(policy, seed):
    """Random traffic under one policy; every output compared every cycle."""
    params = EngineParams(**SMALL, arbiter_policy=policy.value)
    env = _simulate(params, arbiter_model.run, seed=seed, cycles=2500)
    assert all(env.grants.values())
    if policy == ArbPolicy.T3_MCA:
        assert env.forced > 0


def test_switching_policies_paper_params(seed):
    env = _simulate(EngineParams(), arbiter_model.run, seed=seed, cycles=2500,
                    policies=list(ArbPolicy), config_rate=0.01)
    assert all(env.grants.values())


def test_directed():
    async def body(env, cycle):
        await arbiter_model.bound_holds_from_reset(env, cycle)
        for limit in (1, 3):
            await arbiter_model.starvation_is_tight(env, cycle, limit=limit)
            await arbiter_model.hold_costs_one_slot(env, cycle, limit=limit)
        await arbiter_model.hold_skips_tracked_writes(env, cycle)
        await arbiter_model.hold_frees_track(env, cycle)
        await arbiter_model.compute_first_starves(env, cycle, cycles=100)
        await arbiter_model.round_robin_alternates(env, cycle)
        await arbiter_model.mca_rr_alternates_below_threshold(env, cycle)
        await arbiter_model.threshold_gates_comm(env, cycle)
        await arbiter_model.derives_threshold(env, cycle, saturation=11, window_log2=4, duty=3)
        await arbiter_model.derives_threshold(env, cycle, saturation=15, window_log2=0, duty=1)
        await arbiter_model.rejects_bad_config(env, cycle)
        await arbiter_model.drops_bad_response(env, cycle)
    _simulate(EngineParams(**SMALL), body, stall=0)


def test_mca_bound_holds_while_deriving_paper_params():
    """The paper's parameters (window 2**14 cycles, starvation limit 1,024): under continuous
    compute from reset the first DMA read goes in slot 1,024, not after the window (it went
    in cycle 16,387 when T3-MCA was compute-first while deriving)."""
    params = EngineParams()
    assert (params.arbiter_policy, params.mca_threshold) == (ArbPolicy.T3_MCA.value, 0)
    _simulate(params, arbiter_model.bound_holds_from_reset, stall=0)


def test_reset_configuration_matches_parameters():
    p = EngineParams(arbiter_policy=0, mca_threshold=7, mca_saturation=9, mca_window_log2=5,
                     starvation_limit=33)
    assert reset_config(p) == {
        "policy": 0, "threshold": 7, "saturation": 9, "window_log2": 5, "starvation_limit": 33}
    m = ArbiterModel(p)
    assert m.status() == {"policy": 0, "threshold": 7, "measuring": 0}
    assert ArbiterModel(EngineParams()).status()["measuring"] == 1


@pytest.mark.parametrize("bad", [dict(starvation_limit=0),
                                 dict(window_log2=MAX_WINDOW_LOG2 + 1),
                                 dict(threshold=0, saturation=0)])
def test_config_check(bad):
    good = reset_config(EngineParams())
    assert config_ok(good) and not config_ok({**good, **bad})


@pytest.mark.parametrize("sat, log2, grants, expect", [
    (32, 4, 0, 16), (32, 4, 16, 32), (32, 4, 8, 24), (7, 0, 1, 7), (7, 0, 0, 4), (1, 10, 0, 1)])
def test_derived_threshold_closed_form(sat, log2, grants, expect):
    """ceil(q_sat * (1 + rate) / 2): half the saturation for an idle GEMM, all of it for one
    that uses every slot."""
    assert derived_threshold(sat, log2, grants) == expect


@pytest.mark.parametrize("name, value", [("arbiter_policy", 4), ("mca_window_log2", 25),
                                         ("starvation_limit", 0), ("mca_saturation", 0)])
def test_bad_parameters_raise_with_range(name, value):
    with pytest.raises(ValueError, match=rf"{name} must be .*not {value}"):
        EngineParams(**{name: value})


def test_performance_model_arbiter_forces_while_measuring():
    """The performance model's arbiter (:class:`sim_models.engine_model.Arbiter`) follows the
    same rule: while it derives its threshold, compute goes first, but a communication
    request that has waited ``starvation_limit`` slots is forced through, per request and
    in a step of many cycles."""
    from sim_models.engine_model import Arbiter as PerfArbiter
    arb = PerfArbiter(policy="t3_mca", starvation_limit=4, window=1000)
    grants = [arb.grant(compute_ready=True, comm_ready=True, occupancy=99) for _ in range(10)]
    assert arb.measuring and arb.forced == 2
    assert grants == (["compute"] * 4 + ["comm"]) * 2
    arb = PerfArbiter(policy="t3_mca", starvation_limit=10, window=1000)
    gc, gm = arb.split(capacity=100 * 64, cycles=100, compute=1e6, comm=1e6, occupancy=99,
                       burst_bytes=64)
    assert arb.measuring and (gc, gm) == (90 * 64, 10 * 64)


def test_performance_model_rr_turn_variants():
    """The performance model's T3-MCA-RR variants (model only, ``docs/paper.md``): with
    ``rr_fraction`` the round-robin turn needs the occupancy below that share of the
    threshold, T3-MCA's rule between it and the threshold; with ``rr_backlog`` it needs that
    many bytes of triggered DMA work, T3-MCA's rule without them."""
    from sim_models.engine_model import Arbiter as PerfArbiter

    def grants(arb, occupancy, n=6):
        return [arb.grant(compute_ready=True, comm_ready=True, occupancy=occupancy)
                for _ in range(n)]

    alternate = ["compute", "comm"] * 3                     # a fresh arbiter: compute first
    arb = PerfArbiter(policy="t3_mca_rr", threshold=10, rr_fraction=0.5, starvation_limit=99)
    assert grants(arb, 4) == alternate                      # below ceil(10 * 0.5) = 5
    assert grants(arb, 5) == ["compute"] * 6                # gate open, no turn: T3-MCA
    arb = PerfArbiter(policy="t3_mca_rr", threshold=10, rr_backlog=4096, starvation_limit=99)
    arb.backlog = 4095
    assert grants(arb, 0) == ["compute"] * 6
    arb.backlog = 4096
    assert grants(arb, 0) == ["comm", "compute"] * 3        # the last grant was compute's
    assert grants(PerfArbiter(policy="t3_mca_rr", threshold=10, starvation_limit=99), 9) \
        == alternate                                        # the defaults: the RTL's rule


def test_performance_model_rr_without_backlog_splits_as_t3_mca():
    """In a step of many cycles too, T3-MCA-RR short of its ``rr_backlog`` is T3-MCA."""
    from sim_models.engine_model import Arbiter as PerfArbiter
    rng = random.Random(7)
    print("seed 7")
    for _ in range(200):
        kw = dict(capacity=rng.choice([0, 640, 6400]), cycles=100,
                  compute=rng.choice([0.0, 1000.0, 1e6]), comm=rng.choice([0.0, 300.0, 1e6]),
                  occupancy=rng.randrange(0, 40), burst_bytes=64)
        mca = PerfArbiter(policy="t3_mca", threshold=20, starvation_limit=50)
        rr = PerfArbiter(policy="t3_mca_rr", threshold=20, starvation_limit=50, rr_backlog=1)
        mca.wait = rr.wait = rng.randrange(0, 60)
        assert rr.split(**kw) == mca.split(**kw) and rr.wait == mca.wait


@pytest.mark.parametrize("kw, match", [
    ({"rr_fraction": 0}, r"rr_fraction must be in \(0, 1\], not 0"),
    ({"rr_fraction": 1.5}, r"rr_fraction must be in \(0, 1\], not 1.5"),
    ({"rr_backlog": -1}, r"rr_backlog must be an integer in \[0, inf\), not -1")])
def test_performance_model_rr_variants_bad_values(kw, match):
    from sim_models.engine_model import Arbiter as PerfArbiter
    with pytest.raises(ValueError, match=match):
        PerfArbiter(policy="t3_mca_rr", **kw)
