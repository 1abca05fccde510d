# SPDX-License-Identifier: Apache-2.0
"""Whole-system co-simulation in the regression: N = 2, 4 and 8 engines of generated Verilog
inside the GPU, NMC-DRAM and network models (:mod:`t3hw.verif.cosim_tb`), at small sizes.

Each scenario must be numerically exact (every GPU's reduced chunk, and for the all-reduce
every GPU's whole result, equals numpy's sum of the partials), leave every error bit clear,
fire exactly the triggers it armed, and finish within :data:`TOLERANCE` of the performance
model's cycles for the same scenario on the same scaled hardware. Fault tests add network
jitter with reordering and DRAM back-pressure; a threshold one too low must be caught by the
numerics check.

The sizes are a narrow layer (``hidden`` 256, so a GPU's output is ``32 N x 256``) on links
of 16 bytes per cycle, so that the whole matrix runs in a few minutes; ``t3hw cosim`` runs
the paper's layer widths.
"""

import functools
import subprocess
import sys

import pytest

from t3hw.tools import cosim
from t3hw.verif.cosim_scenarios import small


#: Allowed relative gap between the RTL's cycles and the performance model's for the fused
#: reduce-scatter at these sizes. The fused all-reduce overlaps its all-gather, which the
#: model runs after the reduce-scatter: it must take no more than the reduce-scatter's
#: allowance over the model's fused phase plus the model's all-gather, less than the same
#: RTL's reduce-scatter plus the model's all-gather, and beat the model by at most
#: ALLREDUCE_LEAD. (It used to be required to beat the model outright; since the
#: model's GPU reads its panels K-slice by K-slice through an LRU L2 and the co-simulation's
#: GPU still holds whole panels, the model's fused phase is shorter on the smallest run, N = 2:
#: 2,408 cycles against 2,704, and that run's RTL is 3 % over the model's all-reduce.)
#: docs/cosim.md gives the measured gaps and where the two differ.
TOLERANCE = 0.20
ALLREDUCE_LEAD = 0.30


# The regression's sizes (small engines, a narrow layer): t3hw.verif.cosim_scenarios.small.


@functools.lru_cache(maxsize=None)
def run_once(cfg):
    """``cosim.run(cfg)``, once per configuration in a test session: the all-reduce check
    compares with the reduce-scatter run of the same configuration, which its own test ran.
    (The tests of one ring size run on one worker, ``GROUPS`` in ``conftest.py``: a ring
    size's builds are made once and shared by its tests, and each size may go to its own
    worker.)"""
    return cosim.run(cfg, mode="exact")


def check(r, cfg):
    assert not r["failure"], r["failure"]
    assert r["numerics_ok"] and r["max_abs_err"] == 0.0
    assert not any(any(e.values()) for e in r["errors"]), r["errors"]
    assert r["triggers_per_gpu"] == r["armed"], (r["triggers_per_gpu"], r["armed"])
    for s in r["stats"]:
        assert s["tracker"]["dropped"] == 0 and s["tracker"]["unprogrammed"] == 0
        assert s["dma"]["packets"] == s["dma"]["reads"]
    # every GPU's GEMM ended (its last tile retired) before the run did
    assert all(0 < g < r["cycles"]["rtl"] for g in r["gemm_cycles"]), r["gemm_cycles"]
    assert r["cycles"]["gemm"] == max(r["gemm_cycles"])


def check_fast(cfg, exact):
    """The fast mode (simulation-only HDL models, Python at tile events) runs ``cfg`` to the
    same result as the exact mode did: cycles, triggers, packets, store waits, DRAM bytes
    per class, when each GPU's GEMM ended, every error bit and every engine counter, and
    numerics."""
    f = cosim.run(cfg, model=False, mode="fast")
    print(cosim.result_line(f))
    assert f["mode"] == "fast" and exact["mode"] == "exact"
    assert not f["failure"], f["failure"]
    assert cosim.differences(f, exact) == [], \
        {k: (f.get(k), exact.get(k)) for k in cosim.differences(f, exact)}


@pytest.mark.parametrize("policy", ["round_robin", "compute_first", "t3_mca"])
@pytest.mark.parametrize("collective", ["rs", "allreduce"])
# N = 8 (its builds take most of its time) is one of `make test-long`'s runs.
@pytest.mark.parametrize("gpus", [2, 4, pytest.param(8, marks=pytest.mark.long)])
def test_scenario(gpus, collective, policy, seed):
    """Exact numerics, clear error bits, every armed trigger fired, cycles within the
    allowance of the model's; and the fast mode's result the same as the exact mode's."""
    cfg = small(gpus, collective=collective, policy=policy, seed=seed % 1000)
    r = run_once(cfg)
    print(cosim.result_line(r))
    check(r, cfg)
    check_fast(cfg, r)
    c = r["cycles"]
    if collective == "rs":
        assert abs(c["gap"]) <= TOLERANCE, c
    else:
        # the model runs the all-gather after the reduce-scatter; the RTL overlaps them, so
        # it takes at most the reduce-scatter's allowance over the model's fused phase plus
        # the model's all-gather, and no more than ALLREDUCE_LEAD less than the model
        ph = r["model"]["phases"]["t3"]
        assert c["rtl"] <= (1 + TOLERANCE) * ph["gemm_rs"] + ph["ag"], (c, ph)
        assert -ALLREDUCE_LEAD <= c["gap"], c
        # and the overlap gains something: less than the same RTL's reduce-scatter followed
        # by the model's all-gather
        rs = run_once(small(gpus, collective="rs", policy=policy, seed=seed % 1000))
        assert c["rtl"] < rs["cycles"]["rtl"] + ph["ag"], (c["rtl"], rs["cycles"]["rtl"], ph)
    assert c["sequential"] > 0


@pytest.mark.parametrize("collective", ["rs", "allreduce"])
def test_scenario_mca_rr(collective, seed):
    """This kit's policy, T3-MCA with round robin below the threshold, on the 4-GPU
    scenarios: exact numerics, every trigger, and the same allowances against the model as
    the paper's policies."""
    test_scenario(4, collective, "t3_mca_rr", seed)


@pytest.mark.parametrize("fault", ["jitter_reorder", "dram_backpressure"])
def test_faults_keep_numerics_exact(fault, seed):
    kw = dict(net_jitter=300, reorder=True) if fault == "jitter_reorder" else \
        dict(dram_stall=0.05)
    cfg = small(4, collective="allreduce", policy="t3_mca", seed=seed % 1000, **kw)
    r = cosim.run(cfg, model=False, mode="exact")
    print(cosim.result_line(r))
    check(r, cfg)


def test_hbm_memory_policies_differ(seed):
    """On the HBM2 DRAM (``memory="hbm"``: banks, rows, FR-FCFS, refresh, updates that use
    their bank twice) the DRAM is the bottleneck and the GEMM's loads and stores compete
    with the DMA's reads and the received updates: the arbiter's policy matters. Each
    policy's run is numerically exact with every trigger fired, and T3-MCA is faster than
    round robin and no slower than compute-first, the paper's claim. That holds at each of
    17 variants of this scenario's link latency, link width and compute rate on the current
    RTL; the order of the others and T3-MCA-RR's place do not (T3-MCA-RR moves by 10 % when
    the link latency moves by one cycle), so they are printed, not asserted (docs/cosim.md,
    "How robust the regression's order is"). The fixed-latency DRAM gives the paper's three
    the same cycles here (docs/cosim.md)."""
    cycles = {}
    for policy in ("round_robin", "compute_first", "t3_mca", "t3_mca_rr"):
        cfg = small(4, policy=policy, memory="hbm", seed=seed % 1000)
        r = cosim.run(cfg, model=False, mode="exact")
        print(cosim.result_line(r))
        check(r, cfg)
        assert r["memory"] == "hbm" and r["config"]["memory"] == "hbm"
        assert all(h["accesses"] > 0 for h in r["hbm"]), r["hbm"]
        check_fast(cfg, r)                   # the HBM2 model as simulation-only HDL
        cycles[policy] = r["cycles"]["rtl"]
    print(cycles)
    assert cycles["t3_mca"] < cycles["round_robin"], cycles
    assert cycles["t3_mca"] <= cycles["compute_first"], cycles


@pytest.mark.parametrize("memory", ["fixed", "hbm"])
def test_threshold_one_too_low_is_caught(seed, memory):
    """Every threshold one below the unit's writes: each trigger fires one write early, and
    its DMA sends the unit before the last contribution has landed, which the numerics
    check must see. On an in-order network the DMA, which walks a unit in the order its
    writes arrive, mostly reads each burst after that write anyway (the race is benign);
    network jitter makes the last write late, as a real network would. The HBM2 DRAM keeps
    the same data order (requests applied as it accepts them), so it must be caught there
    too."""
    cfg = small(4, collective="allreduce", policy="t3_mca", seed=seed % 1000,
                threshold_error=-1, net_jitter=300, reorder=True, memory=memory)
    r = cosim.run(cfg, model=False, mode="exact")
    print(cosim.result_line(r))
    assert not r["numerics_ok"] and r["max_abs_err"] > 0
    # each late write then finds its entry disarmed: the tracker flags it as well
    assert all("unprogrammed" in e["tracker"] for e in r["errors"])


def test_cli_bad_tokens_one_line():
    p = subprocess.run([sys.executable, "-m", "t3hw.cli", "cosim", "--gpus", "4", "--tokens",
                        "100", "--json", "/dev/null"], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "tokens must be a multiple of" in p.stderr


def test_cli_pgo_with_the_exact_mode_one_line():
    p = subprocess.run([sys.executable, "-m", "t3hw.cli", "cosim", "--gpus", "4", "--exact",
                        "--pgo", "--json", "/dev/null"], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "--pgo: it builds the fast mode's top" in p.stderr
    with pytest.raises(ValueError, match="pgo builds the fast mode's top"):
        cosim.run(small(4), mode="exact", pgo=True)


def test_fast_mode_runs_only_what_it_models():
    """The fast mode models both DRAMs and a deterministic ring: ``auto`` runs anything else
    (and waves) exactly, and ``fast`` refuses it with the setting to change."""
    assert cosim.choose_mode(small(4)) == "fast"
    assert cosim.choose_mode(small(4, memory="hbm")) == "fast"
    assert cosim.choose_mode(small(4), waves=True) == "exact"
    assert cosim.choose_mode(small(4), "exact") == "exact"
    for kw, name in ((dict(net_jitter=5), "net_jitter must be 0"),
                     (dict(reorder=True), "reorder must be False"),
                     (dict(dram_stall=0.1), "dram_stall must be 0")):
        assert cosim.choose_mode(small(4, **kw)) == "exact"
        with pytest.raises(ValueError, match=name):
            cosim.run(small(4, **kw), mode="fast")
    with pytest.raises(ValueError, match=r"mode must be one of \('auto', 'fast', 'exact'\)"):
        cosim.choose_mode(small(4), "quick")


@pytest.mark.parametrize("gpus,parts,collective", [
    (4, 2, "rs"),
    pytest.param(4, 4, "allreduce", marks=pytest.mark.long),
    pytest.param(8, 2, "allreduce", marks=pytest.mark.long),
    pytest.param(8, 4, "rs", marks=pytest.mark.long)])
def test_split_over_processes_gives_the_same_result(gpus, parts, collective, seed):
    """The fast mode split over ``parts`` processes (``docs/cosim.md``, "Split over
    processes") gives the one process's result: cycles (the run's end too), triggers,
    packets, store waits, DRAM bytes, when each GEMM ended, every error bit and engine
    counter, numerics; each part stopped done, no packet handed to a part late."""
    cfg = small(gpus, collective=collective, policy="t3_mca", seed=seed % 1000)
    one = cosim.run(cfg, model=False, mode="fast")
    split = cosim.run(cfg, model=False, mode="fast", parts=parts)
    print(cosim.result_line(one))
    print(cosim.result_line(split))
    assert not one["failure"] and not split["failure"], (one["failure"], split["failure"])
    assert split["numerics_ok"] and not split["stuck"]
    assert cosim.differences(split, one) == [], \
        {k: (split.get(k), one.get(k)) for k in cosim.differences(split, one)}
    for k in ("run", "programming"):
        assert split["cycles"][k] == one["cycles"][k], (k, split["cycles"], one["cycles"])
    assert [p["part"] for p in split["parts"]] == list(range(parts))
    assert all(p["done"] and not p["late"] and not p["others_failed"] for p in split["parts"])
    assert split["model_error"] == one["model_error"]

@pytest.mark.parametrize("gpus,collective,policy", [
    (4, "rs", "t3_mca"),
    pytest.param(4, "allreduce", "round_robin", marks=pytest.mark.long),
    pytest.param(8, "rs", "compute_first", marks=pytest.mark.long),
    pytest.param(8, "allreduce", "t3_mca_rr", marks=pytest.mark.long)])
def test_one_gpu_of_a_symmetric_ring_gives_the_rings_result(gpus, collective, policy, seed):
    """GPU 0 run alone, its neighbour's packets its own rotated by one GPU (``symmetric``,
    :func:`t3hw.tools.cosim_split.run_parts`; ``docs/cosim.md``), gives the whole ring's
    cycles and the run's end; the ring's GPUs all show GPU 0's figures, and the one GPU shows
    the same: triggers, armed entries, packets, store waits, the GEMM's end, tiles, results
    written, every error bit and engine counter; a ring's N-th of the DRAM bytes; numerics
    exact (its chunk 0 the sum of its own N chunks)."""
    cfg = small(gpus, collective=collective, policy=policy, seed=seed % 1000)
    ring = cosim.run(cfg, model=False, mode="fast")
    one = cosim.run(cfg, model=False, mode="fast", symmetric=True)
    print(cosim.result_line(ring))
    print(cosim.result_line(one))
    assert not ring["failure"] and not one["failure"], (ring["failure"], one["failure"])
    assert one["symmetric"] and one["numerics_ok"] and one["max_abs_err"] == 0
    assert not one["stuck"] and not one["model_error"]["any"]
    assert one["cycles"]["rtl"] == ring["cycles"]["rtl"]
    assert one["cycles"]["run"] == ring["cycles"]["run"]
    for k in ("triggers_per_gpu", "armed", "packets", "store_wait_cycles", "gemm_cycles",
              "tiles_done", "r_writes", "errors", "stats"):
        assert all(x == ring[k][0] for x in ring[k]), (k, ring[k])     # the ring is symmetric
        assert one[k] == ring[k][:1], (k, one[k], ring[k][:1])
    assert one["dram_bytes"] == {c: b // gpus for c, b in ring["dram_bytes"].items()}


def test_symmetric_runs_refuse_what_is_not_symmetric():
    for args, want in ((["--memory", "hbm"], "--symmetric: a run of one GPU of a symmetric "
                                             "ring needs memory 'fixed'"),
                       (["--parts", "2"], "--symmetric runs one process"),
                       (["--exact"], "--symmetric runs one GPU of the fast mode's ring")):
        p = subprocess.run([sys.executable, "-m", "t3hw.cli", "cosim", "--gpus", "4",
                            "--symmetric", *args, "--json", "/dev/null"], capture_output=True,
                           text=True)
        assert p.returncode == 2, p.stderr
        assert p.stderr.count("\n") == 1 and want in p.stderr, p.stderr
    with pytest.raises(ValueError, match="needs memory 'fixed'"):
        cosim.run(small(4, memory="hbm"), mode="fast", symmetric=True)
    with pytest.raises(ValueError, match="symmetric runs one GPU of the fast mode's ring"):
        cosim.run(small(4), mode="exact", symmetric=True)
    from t3hw.tools import cosim_fast
    with pytest.raises(ValueError, match="parts must be 1, not 2"):
        cosim_fast.run(small(4), parts=2, symmetric=True)


# Long (about a minute each: two compiles and a training run): `make test` stays under 20
# minutes on 2 cores; `make bench` also fails if a profile-guided run differs.
@pytest.mark.long
@pytest.mark.parametrize("gpus,parts", [(2, 1), (4, 2)])
def test_profile_guided_build_gives_the_same_result(gpus, parts, seed):
    """The profile-guided build of the fast top (``--pgo``, :mod:`t3hw.tools.pgo`) simulates
    the same hardware: the plain build's result in every field, its training run another
    scenario (round-robin, all-reduce) of the same hardware, its profile on disk."""
    import json
    from t3hw.tools import cosim_fast, pgo
    from t3hw.verif.simhdl.top import hardware_key
    cfg = small(gpus, policy="t3_mca", seed=seed % 1000)
    plain = cosim.run(cfg, model=False, mode="fast", parts=parts)
    guided = cosim.run(cfg, model=False, mode="fast", parts=parts, pgo=True)
    print(cosim.result_line(plain))
    print(cosim.result_line(guided))
    assert guided["pgo"] and not plain["pgo"]
    assert not guided["failure"] and guided["numerics_ok"] and not guided["stuck"]
    assert cosim.differences(guided, plain) == [], \
        {k: (guided.get(k), plain.get(k)) for k in cosim.differences(guided, plain)}
    for k in ("run", "programming", "events"):
        assert guided["cycles"][k] == plain["cycles"][k], (k, guided["cycles"], plain["cycles"])
    bdir = cosim_fast.build_dir(cfg, parts=parts, pgo=True)
    assert bdir != cosim_fast.build_dir(cfg, parts=parts)
    info = json.loads((bdir / pgo.MARKER).read_text())
    assert info["counts"] and all((bdir / c).is_file() for c in info["counts"])
    train = type(cfg).from_dict(info["training"])
    assert hardware_key(train, parts) == hardware_key(cfg, parts)
    assert (train.policy, train.collective) == ("round_robin", "allreduce")
