# SPDX-License-Identifier: Apache-2.0
"""``t3hw paper``: the performance model (:mod:`sim_models.perf`) over the paper's table.

:func:`run_paper` runs every workload of :func:`~sim_models.workloads.paper_workloads`
through :func:`~sim_models.perf.run_workload` and sums them up
(:func:`~sim_models.perf.summarize`); :func:`run_token_sweep` does the same over token
counts. Both show a progress bar, write the result as JSON and, if asked, plot it
(:mod:`.plots`). Every config's ``dram_bytes`` are per traffic class
(:data:`TRAFFIC_CLASSES`).
"""

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from sim_models.dram import TRAFFIC_CLASSES
from sim_models.perf import SystemConfig, dram_by_tp, run_workload, summarize
from sim_models.workloads import paper_workloads, same_gemm, token_sweep
from .errors import CliError
from .plots import plot_results
from .progress import Progress


__all__ = ["TRAFFIC_CLASSES", "run_paper", "run_token_sweep", "add_arguments", "cmd"]


def _run_all(workloads, cfg, progress):
    """:func:`run_workload` of each of ``workloads``; one whose GEMM another has already
    run (FC-1 after FC-2: :func:`~sim_models.workloads.same_gemm`) takes that run's
    figures under its own name."""
    bar = Progress(len(workloads), progress)
    out, ran = [], {}
    for w in workloads:
        key = replace(w, sublayer=same_gemm(w.sublayer))
        if key not in ran:
            ran[key] = run_workload(key, cfg)
            del ran[key]["phases"]
        out.append(dict(ran[key], sublayer=w.sublayer))
        bar.step(f"{w.model} TP{w.tp} {w.sublayer}")
    return out


def _write(result, json_path):
    if json_path:
        os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
        with open(json_path, "w") as f:
            json.dump(result, f, indent=1, sort_keys=False)
            f.write("\n")


def run_paper(json_path=None, plot_dir=None, progress=True, *, cfg=None):
    """The paper's table: every workload of :func:`~sim_models.workloads.paper_workloads`.

    Returns ``{"configs": [...], "summary": {...}, "summary_tp32": {...}, "dram_by_tp":
    {...}}`` (``summary`` over the 16 Mega-GPT-2/T-NLG configs, ``summary_tp32`` over
    GPT-3/PaLM/MT-NLG, ``dram_by_tp`` the traffic by class per TP degree:
    :func:`~sim_models.perf.dram_by_tp`), writes it to ``json_path`` if given and PNG plots
    to ``plot_dir`` if given.
    """
    configs = _run_all(paper_workloads(), cfg or SystemConfig(), progress)
    small = [c for c in configs if c["tp"] != 32]
    large = [c for c in configs if c["tp"] == 32]
    result = {"configs": configs, "summary": summarize(small), "summary_tp32": summarize(large),
              "dram_by_tp": dram_by_tp(configs)}
    _write(result, json_path)
    if plot_dir:
        plot_results(result, plot_dir, prefix="paper")
    return result


def run_token_sweep(json_path=None, plot_dir=None, progress=True, *, model="T-NLG", tp=8,
                    tokens=(2048, 4096, 8192, 16384), cfg=None):
    """Every sub-layer of ``model`` at ``tp`` for each T in ``tokens``; same JSON shape
    as :func:`run_paper` with ``summary`` per token count (``{"T": summary}``)."""
    configs = _run_all(token_sweep(model=model, tp=tp, tokens=tokens), cfg or SystemConfig(),
                       progress)
    result = {"configs": configs,
              "summary": {str(t): summarize([c for c in configs if c["tokens"] == t])
                          for t in tokens}}
    _write(result, json_path)
    if plot_dir:
        plot_results(result, plot_dir, prefix="paper_sweep")
    return result


def cmd(args):
    """``t3hw paper --json FILE [--plot DIR] [--sweep] [--memory fluid|hbm]``: run, print
    the summaries; with ``--rtl``, the co-simulated table (:mod:`.paper_rtl`)."""
    if args.rtl:
        if args.sweep:
            raise CliError("--sweep runs the model only: leave it out with --rtl")
        from .paper_rtl import cmd as rtl_cmd
        return rtl_cmd(args)
    rtl_only = [f"--{n}" for n in ("tokens", "gpus", "workers", "scheduler")
                if getattr(args, n) is not None] + \
        [f"--{n}" for n in ("pgo", "full", "symmetric") if getattr(args, n)]
    if rtl_only:
        raise CliError(f"{rtl_only[0]} is an option of the co-simulated table: add --rtl")
    progress = sys.stderr.isatty()
    cfg = SystemConfig(memory=args.memory)
    result = run_paper(args.json, args.plot, progress=progress, cfg=cfg)
    for name, key in (("Mega-GPT-2 / T-NLG, TP 8 and 16", "summary"),
                      ("GPT-3 / PaLM / MT-NLG, TP 32", "summary_tp32")):
        s = result[key]
        print(f"{name}: speedup over Sequential, geomean (max): "
              + ", ".join(f"{k} {100 * s['speedup_geomean'][k]:.1f}% "
                          f"({100 * s['speedup_max'][k]:.1f}%)" for k in s["speedup_geomean"])
              + f"; DRAM traffic -{100 * s['dram_reduction_geomean']:.1f}% "
                f"(max -{100 * s['dram_reduction_max']:.1f}%)")
    for tp, c in result["dram_by_tp"].items():
        print(f"TP {tp}, DRAM traffic Sequential / T3-MCA: RS reads {c['rs_reads']:.2f}x, "
              f"GEMM reads {c['gemm_reads']:.2f}x, GEMM + RS writes "
              f"-{100 * c['writes_reduction']:.1f}%, all-gather "
              + ("unchanged" if c["ag_unchanged"] else "changed"))
    if args.sweep:
        sweep = Path(args.json).with_name(Path(args.json).stem + "_sweep.json")
        run_token_sweep(sweep, args.plot, progress=progress, cfg=cfg)
        print(f"token sweep: {sweep}")
    print(f"written: {args.json}" + (f", plots in {args.plot}" if args.plot else ""))


def add_arguments(p):
    """The options of ``t3hw paper``."""
    p.add_argument("--json", required=True, metavar="FILE")
    p.add_argument("--plot", metavar="DIR", help="also write PNG bar charts there")
    p.add_argument("--sweep", action="store_true", help="also run the sweep over T")
    p.add_argument("--memory", choices=("fluid", "hbm"), default="fluid",
                   help="DRAM model: the fluid bandwidth account (default, about 20 s) or the "
                        "HBM2 timing model of docs/dram.md (sampled pseudo-channels, a T3 "
                        "arbiter per pseudo-channel, bounded outstanding loads; minutes); "
                        "with --rtl, the co-simulation's fixed-latency DRAM or its HBM2 one")
    from .paper_rtl import DEFAULT_TOKENS, POLICY_KEYS
    r = p.add_argument_group("the table on generated RTL (--rtl; docs/paper.md, 'On the RTL')")
    r.add_argument("--rtl", action="store_true",
                   help="co-simulate the 16 Mega-GPT-2 / T-NLG sub-layers on generated RTL "
                        "(each on a ring of TP GPUs, fast mode, on Dask workers) beside the "
                        "model's figures for the same scaled hardware")
    r.add_argument("--tokens", type=int, metavar="T",
                   help=f"tokens of every sub-layer (default {DEFAULT_TOKENS}; a multiple of "
                        f"32 x the ring size, within the engines' tables)")
    r.add_argument("--gpus", type=int, metavar="N",
                   help="ring size of every sub-layer (default: its TP degree)")
    r.add_argument("--policies", default="round_robin,t3_mca", metavar="P[,P...]",
                   help=f"arbitration policies, some of {', '.join(POLICY_KEYS)} "
                        f"(round_robin is the paper's T3)")
    r.add_argument("--workers", type=int, metavar="N",
                   help="worker processes of the local Dask cluster (default: the CPU count)")
    r.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running Dask scheduler, tcp://HOST:8786 (default: a local cluster)")
    r.add_argument("--full", action="store_true",
                   help="the paper's token counts (8192), on engines of 1024 tracker entries "
                        "and descriptors, each ring's GPU 0 alone with its neighbour supplied "
                        "by the ring's symmetry (t3hw cosim --symmetric; docs/paper.md)")
    r.add_argument("--symmetric", action="store_true",
                   help="each ring's GPU 0 alone, its neighbour supplied by the ring's "
                        "symmetry (the default with --full; the fixed-latency DRAM only)")
    r.add_argument("--pgo", action="store_true",
                   help="co-simulate on profile-guided builds of the fast tops "
                        "(t3hw cosim --pgo; docs/cosim.md)")
