# SPDX-License-Identifier: Apache-2.0
"""``t3hw paper --rtl`` (:mod:`t3hw.tools.paper_rtl`): the paper's table co-simulated on
generated RTL beside the model. Two of its sub-layers on the co-simulation regression's small
2-engine hardware, on a local two-worker Dask cluster; the table's arithmetic checked against
the points it is made of, and each point against a co-simulation of its configuration here."""

import json
import math
import subprocess
import sys

import pytest

from t3hw.tools import cosim
from t3hw.tools.paper_rtl import (FULL_PARAMS, assemble, configs, markdown, run_paper_rtl,
                                  workloads)
from t3hw.verif.cosim_scenarios import small

# the regression's 2-engine hardware (its system top is the one the regression builds)
SMALL = dict(base=small(2), gpus=2, tokens=64)


def test_configs_are_the_papers_sublayers_times_the_policies():
    ws = workloads()
    assert len(ws) == 16 and {w.tp for w in ws} == {8, 16}
    assert {w.model for w in ws} == {"Mega-GPT-2", "T-NLG"}
    cfgs = configs()
    assert len(cfgs) == 32
    assert [(c.model, c.tp, c.sublayer) for c in cfgs[::2]] == \
        [(w.model, w.tp, w.sublayer) for w in ws]
    assert [c.policy for c in cfgs[:2]] == ["round_robin", "t3_mca"]
    assert all(c.gpus == c.tp and c.tokens == 512 and c.memory == "fixed" for c in cfgs)
    assert all(c.hidden is None for c in cfgs)            # the paper's H, not a narrower one
    picked = configs(only=[3, 1], policies=("t3_mca_rr",), memory="hbm", **SMALL)
    assert [(c.tp, c.sublayer, c.gpus, c.hidden, c.memory, c.policy) for c in picked] == \
        [(8, "FC-2", 2, 256, "hbm", "t3_mca_rr"), (8, "IP", 2, 256, "hbm", "t3_mca_rr")]
    for kw, msg in ((dict(policies=("fifo",)), "policies must be some of"),
                    (dict(policies=()), "policies must be some of"),
                    (dict(only=[16]), r"only must list sub-layers in \[0, 15\]"),
                    (dict(tokens=100), "tokens must be a multiple of gpus"),
                    (dict(tokens=8192), "tokens must be a multiple of gpus")):
        with pytest.raises(ValueError, match=msg):
            configs(**kw)


def test_full_configs_are_the_papers_token_counts_on_larger_tables():
    """``full``: every sub-layer at its paper token count (8192), on engines of 1024 tracker
    entries and descriptors, which hold it (the default engines do not)."""
    cfgs = configs(full=True)
    assert len(cfgs) == 32
    assert [(c.model, c.tp, c.sublayer, c.tokens) for c in cfgs[::2]] == \
        [(w.model, w.tp, w.sublayer, w.tokens) for w in workloads()]
    assert {c.tokens for c in cfgs} == {8192}
    assert all(c.params == FULL_PARAMS and c.tokens <= c.max_tokens() for c in cfgs)
    assert (FULL_PARAMS.tracker_entries, FULL_PARAMS.dma_descriptors) == (1024, 1024)
    assert any(c.tokens > configs(only=[i])[0].max_tokens() for i, c in enumerate(cfgs[::2]))
    with pytest.raises(ValueError, match="tokens is the paper's own with full, not 512"):
        configs(full=True, tokens=512)


def _geomean_speedup(entries, cycles, key):
    logs = [math.log(e["cycles"]["sequential"] / e[cycles][key]) for e in entries]
    return math.exp(sum(logs) / len(logs)) - 1


def test_table_on_a_local_two_worker_cluster(tmp_path):
    """Three sub-layers under T3 and T3-MCA: every point co-simulated (fast mode) with exact
    numerics, FC-1's as FC-2's (one GEMM shape: one run each); each sub-layer's cycles are
    its points' and the same as a co-simulation of its configuration in this process; the
    summaries are the geomeans of the entries."""
    out = tmp_path / "rtl.json"
    r = run_paper_rtl(out, tmp_path / "img", workers=2, only=[0, 5, 6], **SMALL)
    assert json.loads(out.read_text()) == json.loads(json.dumps(r))
    assert (tmp_path / "img" / "paper_rtl_speedup.png").stat().st_size > 10_000
    assert (r["sweep"]["points"], r["sweep"]["configs"], r["sweep"]["workers"]) == (4, 6, 2)
    assert [(e["model"], e["tp"], e["sublayer"]) for e in r["configs"]] == \
        [("Mega-GPT-2", 8, "OP"), ("Mega-GPT-2", 16, "FC-2"), ("Mega-GPT-2", 16, "FC-1")]
    fc2, fc1 = r["configs"][1:]
    assert "same_run_as" not in fc2 and fc1["same_run_as"] == "FC-2"
    assert fc1["sim_wall_s"] == {"t3": 0.0, "t3_mca": 0.0} and min(fc2["sim_wall_s"].values())
    for k in ("cycles", "model_cycles", "dram_bytes_per_gpu", "gap"):
        assert fc1[k] == fc2[k], k
    assert r["summary"]["numerics_ok"]
    for e in r["configs"]:
        print(e["model"], e["tp"], e["sublayer"], e["cycles"], e["model_cycles"])
        assert e["numerics_ok"] and e["mode"] == {"t3": "fast", "t3_mca": "fast"}
        assert list(e["cycles"]) == ["sequential", "t3", "t3_mca", "ideal"]
        assert e["cycles"]["ideal"] == e["model_cycles"]["ideal"] < e["cycles"]["sequential"]
        for p in ("t3", "t3_mca"):
            assert e["gap"][p] == pytest.approx(e["cycles"][p] / e["model_cycles"][p] - 1)
            assert 0 < e["dram_bytes_per_gpu"][p] < e["dram_bytes_per_gpu"]["sequential"]
    cfg = configs(only=[6], policies=("t3_mca",), **SMALL)[0]        # FC-1, run as itself
    here = cosim.run(cfg, model=False)
    assert here["cycles"]["rtl"] == fc1["cycles"]["t3_mca"]
    assert sum(here["dram_bytes"].values()) / cfg.gpus == fc1["dram_bytes_per_gpu"]["t3_mca"]
    for side, cycles in (("rtl", "cycles"), ("model", "model_cycles")):
        s = r["summary"][side]
        for key in ("t3", "t3_mca", "ideal"):
            assert s["speedup_geomean"][key] == pytest.approx(
                _geomean_speedup(r["configs"], cycles, key))
            assert s["speedup_max"][key] == pytest.approx(max(
                e["cycles"]["sequential"] / e[cycles][key] - 1 for e in r["configs"]))
    worst = max((abs(g), g) for e in r["configs"] for g in e["gap"].values())[1]
    assert r["summary"]["gap_max"]["gap"] == worst


def test_assemble_keeps_failures_visible():
    """A point whose checks failed makes its sub-layer's and the table's numerics_ok false."""
    point = {"config": dict(model="T-NLG", tp=8, sublayer="OP", tokens=64, gpus=2, hidden=256,
                            memory="fixed", policy="round_robin"),
             "cycles": {"rtl": 900, "model": 1000, "sequential": 1500, "gap": -0.1},
             "model": {"phases": {"sequential": {"gemm": 700, "rs": 800}},
                       "sequential_dram_bytes": 400, "t3_dram_bytes": 200},
             "dram_bytes": {"gemm_read": 300, "rs_update": 100}, "numerics_ok": True,
             "failure": "a trigger fired twice", "sim_wall_s": 1.0, "mode": "fast"}
    r = assemble([point])
    e = r["configs"][0]
    assert not e["numerics_ok"] and not r["summary"]["numerics_ok"]
    assert e["cycles"] == {"sequential": 1500, "t3": 900, "ideal": 800}
    assert e["dram_bytes_per_gpu"] == {"sequential": 400, "t3": 200.0}
    assert r["summary"]["rtl"]["speedup_geomean"]["t3"] == pytest.approx(1500 / 900 - 1)
    assert r["summary"]["model"]["dram_reduction_geomean"]["t3"] == pytest.approx(0.5)
    assert r["summary"]["gap_max"] == {"gap": -0.1, "policy": "t3", "config": "T-NLG TP8 OP"}
    table = markdown(r).splitlines()
    assert table[0].startswith("| model | TP | sub-layer | GPUs | Sequential (cycles) | t3 RTL")
    assert table[2] == "| T-NLG | 8 | OP | 2 | 1,500 | 66.7% / 50.0% (-10.0%) | 87.5% |"
    assert table[3] == "| **geomean** | | | | | **66.7% / 50.0%** | **87.5%** |"
    # beside it, the model on the paper's own hardware (a `t3hw paper` result)
    paper = {"configs": [{"model": "T-NLG", "tp": 8, "sublayer": "OP",
                          "cycles": {"sequential": 1200, "t3": 1000, "ideal": 960}}],
             "summary": {"speedup_geomean": {"t3": 0.2, "ideal": 0.25}}}
    table = markdown(r, paper).splitlines()
    assert table[0].endswith("| Ideal | t3 / Ideal, paper's hardware (model) |")
    assert table[2].endswith("| 87.5% | 20.0% / 25.0% |")
    assert table[3].endswith("| **87.5%** | **20.0% / 25.0%** |")
    # a symmetric point's DRAM bytes are its one GPU's
    one = dict(point, symmetric=True, failure=None)
    assert assemble([one])["configs"][0]["dram_bytes_per_gpu"]["t3"] == 400.0
    assert assemble([one])["configs"][0]["symmetric"]


def test_cli_defaults_are_the_full_table():
    """``t3hw paper --rtl --json F`` with no other option: the 16 sub-layers under T3 and
    T3-MCA at the default tokens, each on its TP ring, the fixed-latency DRAM."""
    from t3hw.cli import _parser as build_parser
    from t3hw.tools.paper_rtl import DEFAULT_TOKENS, options
    args = build_parser().parse_args(["paper", "--rtl", "--json", "x.json"])
    kw = options(args)
    assert kw == dict(policies=["round_robin", "t3_mca"], tokens=DEFAULT_TOKENS, gpus=None,
                      memory="fixed", full=False)
    assert len(configs(**kw)) == 32
    args = build_parser().parse_args(["paper", "--rtl", "--json", "x.json", "--memory", "hbm",
                                      "--policies", "t3_mca_rr", "--gpus", "4"])
    assert options(args) == dict(policies=["t3_mca_rr"], tokens=DEFAULT_TOKENS, gpus=4,
                                 memory="hbm", full=False)
    args = build_parser().parse_args(["paper", "--rtl", "--full", "--json", "x.json"])
    assert options(args) == dict(policies=["round_robin", "t3_mca"], tokens=None, gpus=None,
                                 memory="fixed", full=True)


@pytest.mark.parametrize("args, want", [
    (["--rtl", "--policies", "fifo"], "--policies"),
    (["--rtl", "--tokens", "100"], "--tokens"),
    (["--rtl", "--gpus", "1"], "--gpus"),
    (["--rtl", "--workers", "0"], "--workers"),
    (["--rtl", "--sweep"], "--sweep"),
    (["--tokens", "512"], "add --rtl"),
    (["--pgo"], "--pgo is an option of the co-simulated table: add --rtl"),
    (["--full"], "--full is an option of the co-simulated table: add --rtl"),
    (["--rtl", "--full", "--tokens", "512"], "--full runs the paper's own token counts"),
    (["--rtl", "--full", "--memory", "hbm"], "leave out --memory hbm"),
    (["--symmetric"], "--symmetric is an option of the co-simulated table: add --rtl"),
    (["--rtl", "--symmetric", "--memory", "hbm"], "--symmetric runs one GPU of each ring"),
])
def test_cli_errors_are_one_line(tmp_path, args, want):
    p = subprocess.run([sys.executable, "-m", "t3hw", "paper", *args, "--json",
                        str(tmp_path / "p.json")], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and want in p.stderr, p.stderr
