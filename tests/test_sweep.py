# SPDX-License-Identifier: Apache-2.0
"""``t3hw sweep`` (:mod:`t3hw.tools.sweep`): a small grid of co-simulations on a local
two-worker Dask cluster, and the grid and CLI checks."""

import dataclasses
import json
import subprocess
import sys

import pytest

from t3hw.tools import cosim
from t3hw.verif.cosim_scenarios import REGRESSION_PARAMS, small
from t3hw.tools.sweep import grid, hardware, run_sweep

# The co-simulation regression's 2-engine scenario: its system top is the one that
# regression builds (one build folder, built under its lock by whichever test comes first).
BASE = small(2)


def test_grid_is_the_cross_product_in_order():
    pts = grid(BASE, memory=["fixed", "hbm"], policy=["round_robin", "t3_mca_rr"])
    assert [(c.policy, c.memory) for c in pts] == [   # GRID_FIELDS order: memory fastest
        ("round_robin", "fixed"), ("round_robin", "hbm"), ("t3_mca_rr", "fixed"),
        ("t3_mca_rr", "hbm")]
    with pytest.raises(ValueError, match=r"tokens must be a multiple"):
        grid(BASE, gpus=[4])                  # 64 tokens: not a multiple of 4 x 32
    assert all(c.params == REGRESSION_PARAMS and c.hidden == 256 for c in pts)
    with pytest.raises(ValueError, match=r"policy must be one of .*not 'fifo'"):
        grid(BASE, policy=["fifo"])
    with pytest.raises(ValueError, match=r"cannot be swept"):
        grid(BASE, tx_buffer_bytes=[4096])
    with pytest.raises(ValueError, match=r"link_latency must be an integer in \[1, inf\]"):
        grid(BASE, link_latency=[0])
    # the link's latency is swept like the rest, over BASE's other fields; it is part of the
    # fast top (the network's flight time), so each value builds its own
    pts = grid(BASE, link_latency=[699, 701])
    assert [c.link_latency for c in pts] == [699, 701]
    assert all(dataclasses.replace(c, link_latency=BASE.link_latency) == BASE for c in pts)
    assert len({hardware(c) for c in pts}) == 2


def test_points_share_a_build_exactly_when_their_hardware_is_the_same():
    pts = grid(BASE, memory=["fixed", "hbm"], policy=["round_robin", "t3_mca"], seed=[1, 2])
    keys = [hardware(c) for c in pts]
    assert len(set(keys)) == 2                  # one per memory; policies and seeds share
    assert all((keys[i] == keys[j]) == (pts[i].memory == pts[j].memory)
               for i in range(len(pts)) for j in range(len(pts)))
    assert len({hardware(c) for c in grid(BASE, gpus=[2, 3], tokens=[192])}) == 2
    assert hardware(pts[0], "exact") == hardware(pts[2], "exact") != keys[0]
    # a profile-guided build is a build of its own; the exact mode's top has none
    assert hardware(pts[0], pgo=True) == keys[0] + "-pgo"
    assert hardware(pts[0], "exact", pgo=True) == hardware(pts[0], "exact")
    # a symmetric point runs on the top of one GPU: the part top of a ring of N parts
    from t3hw.tools.cosim_fast import build_dir
    assert hardware(pts[0], symmetric=True) == str(build_dir(pts[0], parts=pts[0].gpus))
    assert hardware(pts[0], symmetric=True) not in keys


def test_sweep_on_a_local_two_worker_cluster(tmp_path):
    """Two co-simulations on two worker processes: both exact, every trigger fired, in grid
    order in one JSON, and each the same run as the co-simulation of its configuration in
    this process (the co-simulation is deterministic)."""
    configs = grid(BASE, policy=["round_robin", "t3_mca"], seed=[7])
    out = run_sweep(configs, workers=2, json_path=tmp_path / "sweep.json", model=False)
    assert out["sweep"]["workers"] == 2 and out["sweep"]["points"] == 2
    assert out["sweep"]["builds"] == 1
    assert json.loads((tmp_path / "sweep.json").read_text())["points"] == \
        json.loads(json.dumps(out["points"]))
    for cfg, r in zip(configs, out["points"]):
        print(cosim.result_line(r), r["sweep_point"])
        assert r["config"]["policy"] == cfg.policy and r["config"]["seed"] == 7
        assert not r["failure"] and r["numerics_ok"] and r["max_abs_err"] == 0.0
        assert r["triggers_per_gpu"] == r["armed"]
        assert r["sweep_point"]["worker"].startswith("tcp://")
    here = cosim.run(configs[1], model=False)
    assert here["cycles"]["rtl"] == out["points"][1]["cycles"]["rtl"]
    assert here["triggers_per_gpu"] == out["points"][1]["triggers_per_gpu"]


def test_cli_errors_are_one_line(tmp_path):
    for args, want in ((["--policy", "fifo"], "--policy"), (["--gpus", "1"], "--gpus"),
                       (["--workers", "0"], "--workers"),
                       (["--exact", "--pgo"], "--pgo builds the fast mode's top"),
                       (["--exact", "--symmetric"], "--symmetric runs one GPU"),
                       (["--memory", "fixed,hbm", "--symmetric"], "needs memory 'fixed'")):
        p = subprocess.run([sys.executable, "-m", "t3hw", "sweep", *args, "--json",
                            str(tmp_path / "s.json")], capture_output=True, text=True)
        assert p.returncode == 2, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and want in p.stderr, p.stderr
