# SPDX-License-Identifier: Apache-2.0
"""The policy-comparison scenario (:mod:`t3hw.verif.arbiter_scenario`) on the arbiter's RTL
in amaranth.sim: the mechanisms its plot (``t3hw arbiter-plot``) illustrates.

Every run is also scored cycle by cycle against the reference model by the
:class:`~t3hw.verif.arbiter_env.ArbiterEnv` scoreboard it inherits.
"""

import json
import subprocess
import sys
from pathlib import Path
from dataclasses import replace

import pytest

from t3hw.verif import arbiter_scenario as scenario
from sim_models.arbiter import derived_threshold
from t3hw import cli
from t3hw.spec.contract import ARBITER_FINISH_CYCLES as FINISH_CYCLES
from t3hw.spec.layouts import ArbPolicy

ROOT = Path(__file__).resolve().parent.parent

#: A short run: 6 GEMM tiles, a burst of 128 communication requests from cycle 280.
CYCLES = 1600


@pytest.fixture(scope="module")
def runs():
    traffic = scenario.Traffic.for_cycles(CYCLES)
    return traffic, {key: env for key, (_, env) in scenario.run_scenario(CYCLES, traffic).items()}


def _forced(env):
    """Cycles with a forced grant, from the RTL's ``starved`` counter (which counts a cycle's
    grant in the cycle after, so it shows it two cycles later)."""
    s = env.starved_log
    return {c for c in range(len(s) - 2) if s[c + 2] != s[c + 1]}


def _comm_over_threshold(env, threshold=None):
    """Cycles with a communication grant while the gate was closed: the occupancy of the
    cycle before, plus one for a request issued since, at or above the threshold of that
    cycle (the one in effect, from ``status``, or ``threshold``), outside the derivation."""
    return [c for c, g in enumerate(env.granted)
            if c > 0 and g == "m" and not env.measuring_log[c]
            and env.occupancy_log[c - 1] + 1 >= (env.threshold_log[c - 1]
                                                 if threshold is None else threshold)]


def test_mca_never_grants_comm_at_the_threshold_unforced(runs):
    """The late compare loses nothing: no unforced communication grant finds the queue at
    or above the threshold in its own cycle either."""
    for key in ("t3_mca", "t3_mca_derived"):
        env = runs[1][key]
        at = [c for c, g in enumerate(env.granted)
              if g == "m" and not env.measuring_log[c]
              and env.occupancy_log[c] >= env.threshold_log[c]]
        assert set(at) <= _forced(env), (key, sorted(set(at) - _forced(env)))


def test_every_request_is_granted_and_served(runs):
    traffic, envs = runs
    for key, env in envs.items():
        s = env.summary()
        assert (s["compute_grants"], s["comm_grants"]) == (traffic.compute_requests,
                                                           traffic.comm_requests), key
        assert env.served == {"compute": traffic.compute_requests,
                              "comm": traffic.comm_requests}, key


def test_compute_finishes_earlier_than_under_round_robin(runs):
    """Compute priority shortens the GEMM: compute-first and T3-MCA finish it before round
    robin, which gives communication every other slot during the burst."""
    _, envs = runs
    rr = envs["round_robin"].summary()
    for key in ("compute_first", "t3_mca", "t3_mca_derived"):
        s = envs[key].summary()
        assert s["compute_finish"] < rr["compute_finish"], (key, s, rr)
        assert s["compute_stalls"] < rr["compute_stalls"], (key, s, rr)


def test_mca_threshold_keeps_the_queue_short_for_compute(runs):
    """Compute-first lets the burst fill the DRAM queue to its capacity in the compute
    phases, and the next tile's reads wait behind it; T3-MCA stops communication at its
    threshold, so compute stalls less."""
    traffic, envs = runs
    cf = envs["compute_first"]
    assert max(cf.occupancy_log) == traffic.capacity
    for key in ("t3_mca", "t3_mca_derived"):
        assert envs[key].summary()["compute_stalls"] < cf.summary()["compute_stalls"], key


@pytest.mark.parametrize("key", ["t3_mca", "t3_mca_derived"])
def test_mca_grants_comm_over_the_threshold_only_when_forced(runs, key):
    env = runs[1][key]
    over = _comm_over_threshold(env)
    forced = _forced(env)
    assert over, "the gate was never tested: no communication grant at the threshold"
    assert set(over) <= forced, sorted(set(over) - forced)
    assert len(forced) == env.summary()["forced"] > 0


def test_compute_first_ignores_the_threshold(runs):
    """The same check fails on compute-first: it grants communication in a full queue."""
    cf = runs[1]["compute_first"]
    assert not _forced(cf)
    assert _comm_over_threshold(cf, threshold=scenario.POLICIES[2][3])


def test_bounded_policies_finish_the_burst(runs):
    """Round robin and T3-MCA finish the communication burst; the starvation bound, checked
    every cycle by the scoreboard, is reached exactly under T3-MCA (each forced grant waited
    ``starvation_limit`` issue slots) and is 1 under round robin."""
    _, envs = runs
    for key in ("round_robin", "t3_mca", "t3_mca_derived"):
        assert envs[key].summary()["comm_finish"] is not None, key
    assert envs["round_robin"].worst["comm"] == 1
    for key in ("t3_mca", "t3_mca_derived"):
        assert envs[key].worst["comm"] == scenario.STARVATION_LIMIT, key
    # the trade: communication finishes first under round robin
    rr = envs["round_robin"].summary()["comm_finish"]
    assert all(envs[k].summary()["comm_finish"] > rr for k in ("t3_mca", "t3_mca_derived"))


def test_mca_rr_keeps_the_gate_and_its_bound(runs):
    """T3-MCA-RR's turn looks at the occupancy two cycles late, plus two: no unforced
    communication grant finds the queue at or above the threshold in its own cycle, and the
    starvation bound is T3-MCA's. (On this traffic the GEMM's read bursts hold the queue at
    the threshold whenever both classes request, so its grants are T3-MCA's.)"""
    rr = runs[1]["t3_mca_rr"]
    at = [c for c, g in enumerate(rr.granted)
          if g == "m" and not rr.measuring_log[c] and rr.occupancy_log[c] >= rr.threshold_log[c]]
    assert set(at) <= _forced(rr), sorted(set(at) - _forced(rr))
    assert rr.worst["comm"] <= scenario.STARVATION_LIMIT


def test_mca_rr_shares_an_open_gate():
    """A DRAM that serves a request per cycle and a threshold above its saturation: the
    gate stays open through the GEMM's read bursts. T3-MCA still gives every such slot to
    compute; T3-MCA-RR gives communication every other one, so the GEMM stalls more."""
    traffic = replace(scenario.Traffic.for_cycles(CYCLES), service=1)
    mca = scenario.run_policy(traffic, ArbPolicy.T3_MCA, 30, CYCLES).summary()
    rr = scenario.run_policy(traffic, ArbPolicy.T3_MCA_RR, 30, CYCLES).summary()
    assert rr["compute_stalls"] > mca["compute_stalls"], (rr, mca)
    assert rr["comm_finish"] is not None and rr["forced"] <= mca["forced"], (rr, mca)


def test_derived_threshold_is_the_rule(runs):
    """The derived run: compute-first (measuring) for the 2**window_log2 cycles from the
    first compute grant and the FINISH_CYCLES after them, then ``ceil(q_sat (W + C) / 2W)`` from the grants seen."""
    traffic, envs = runs
    env = envs["t3_mca_derived"]
    w = 1 << scenario.WINDOW_LOG2
    first = env.granted.index("c")
    grants = env.granted[first:first + w].count("c")
    expect = derived_threshold(traffic.saturation, scenario.WINDOW_LOG2, grants)
    end = first + w + FINISH_CYCLES                 # the threshold is computed in between
    assert env.measuring_log[end - 1] == 1 and env.measuring_log[end] == 0
    assert set(env.threshold_log[end:]) == {expect}
    assert expect != scenario.POLICIES[2][3]      # the two T3-MCA runs differ


def test_cli_writes_plot_json_and_table(tmp_path, capsys):
    png, js = tmp_path / "a" / "arb.png", tmp_path / "arb.json"
    assert cli.main(["arbiter-plot", "--out", str(png), "--json", str(js),
                     "--cycles", "1000"]) == 0
    out = capsys.readouterr().out
    for _, label, _, _ in scenario.POLICIES:
        assert label in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(js.read_text())
    assert set(data["runs"]) == {key for key, *_ in scenario.POLICIES}
    assert all(len(r["grants"]) == 1000 for r in data["runs"].values())


@pytest.mark.parametrize("args, message", [
    (["--out", "x.svg"], "--out must name a .png file"),
    (["--out", "x.png", "--cycles", "10"], "--cycles must be in [1000, 100000], not 10"),
    (["--out", "/proc/no/such/x.png"], "cannot write"),
    ([], "the following arguments are required: --out"),
])
def test_cli_errors_are_one_line(args, message):
    proc = subprocess.run([sys.executable, "-m", "t3hw.cli", "arbiter-plot", *args],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
