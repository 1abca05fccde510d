# SPDX-License-Identifier: Apache-2.0
"""``t3hw paper --rtl``: the paper's table co-simulated on generated RTL, beside the model.

Each of the 16 Mega-GPT-2 / T-NLG sub-layers of :func:`~sim_models.workloads.paper_workloads`
(TP 8 and 16) becomes a :class:`~sim_models.cosim.CosimConfig`: the paper's GEMM slice on a
ring of as many GPUs as its TP degree (``gpus`` overrides it), each GPU with a T3 engine of
generated RTL, on the co-simulation's scaled hardware (``docs/cosim.md``, "What runs"). Every
sub-layer runs once per arbitration policy as one point of a :func:`t3hw.tools.sweep.run_sweep`
(fast mode, on a local Dask cluster or a running scheduler's workers), and beside it the
performance model runs the same scenario (:func:`sim_models.cosim.model_cycles`). FC-1 and
FC-2 are one GEMM shape, so each FC-1 entry is its FC-2's points (:func:`same_run`): 24
co-simulations for the table's 32 points.

A sub-layer's entry has the shape of :func:`t3hw.tools.paper.run_paper`'s: ``cycles``
(``sequential`` and ``ideal`` from the model's Sequential run on the same hardware, which has
no T3 engine to co-simulate; one key per policy from the RTL, ``t3`` for round-robin as in
the paper), ``model_cycles`` (the model's cycles per policy), ``gap`` per policy (RTL over
model, minus 1) and the co-simulation's DRAM bytes per GPU. ``summary`` holds the speedup
geomeans and maxima of the RTL and of the model, side by side, and the largest gap.

Size: by default the table runs at ``tokens`` (512, the fewest that 16 GPUs' chunks of whole
tile rows allow) on every GPU of each ring. ``G / RS`` does not depend on T (the token sweep
of ``docs/paper.md``), so the speedups compare with the model's at any T; what a smaller T
changes is the weight of the ring's fill and drain. ``full`` runs the paper's own T (8192
tokens), which needs more tracker entries and DMA descriptors than the default engines have
(they hold at most 4096 tokens of Mega-GPT-2 and 2560 of T-NLG at 16 GPUs:
:meth:`CosimConfig.max_tokens`): the engines of :data:`FULL_PARAMS` (1024 of each; the
co-simulation's 32 x 64 tiles are a 16th of the paper's 256 x 128, so the paper's 256
entries per tile count would be 4096), and each ring's GPU 0 alone, its neighbour supplied
by the ring's symmetry (``symmetric``: :func:`t3hw.tools.cosim_split.run_parts`, the whole
ring's cycles and numerics on the fixed-latency DRAM).
"""

import dataclasses
import json
import sys
import time
from pathlib import Path

from sim_models.cosim import CosimConfig
from sim_models.perf import geomean
from sim_models.workloads import paper_workloads, same_gemm
from .errors import CliError


__all__ = ["POLICY_KEYS", "DEFAULT_TOKENS", "FULL_PARAMS", "workloads", "configs", "same_run",
           "assemble", "run_paper_rtl", "summary_lines", "markdown", "options", "cmd"]

#: The policies a table can run, with the key each has in the paper's JSON (``t3`` is plain
#: T3: round-robin arbitration).
POLICY_KEYS = {"round_robin": "t3", "t3_mca": "t3_mca", "t3_mca_rr": "t3_mca_rr",
               "compute_first": "compute_first"}

#: The table's default token count: the fewest that a 16-GPU ring (TP 16) can run.
DEFAULT_TOKENS = 512

#: The engines of the table at the paper's token counts (``full``): the co-simulation's, with
#: 1024 tracker entries and DMA descriptors (module docstring).
FULL_PARAMS = dataclasses.replace(CosimConfig().params, tracker_entries=1024, cmd_width=10)


def workloads():
    """The 16 Mega-GPT-2 / T-NLG sub-layers of the paper's table (TP 8 and 16)."""
    return [w for w in paper_workloads() if w.tp != 32]


def configs(*, policies=("round_robin", "t3_mca"), tokens=None, gpus=None,
            memory="fixed", base=None, only=None, full=False):
    """The :class:`CosimConfig` of every (sub-layer, policy) point, sub-layers in the
    paper's order, policies fastest. ``gpus`` None rings each sub-layer on its TP degree;
    ``base`` supplies every other field (default ``CosimConfig()``'s; with ``full``, its
    params :data:`FULL_PARAMS`); ``only`` keeps the sub-layers whose index in
    :func:`workloads` it lists; ``tokens`` is every sub-layer's (default
    :data:`DEFAULT_TOKENS`), or with ``full`` each its paper token count. Raises
    ValueError (the config's own message) for a value out of range."""
    bad = [p for p in policies if p not in POLICY_KEYS]
    if bad or not policies:
        raise ValueError(f"policies must be some of {tuple(POLICY_KEYS)}, not {list(policies)!r}")
    if full and tokens is not None:
        raise ValueError(f"tokens is the paper's own with full, not {tokens!r}")
    tokens = DEFAULT_TOKENS if tokens is None else tokens
    base = base if base is not None else \
        CosimConfig(params=FULL_PARAMS) if full else CosimConfig()
    ws = workloads()
    if only is not None:
        if not only or any(not 0 <= i < len(ws) for i in only):
            raise ValueError(f"only must list sub-layers in [0, {len(ws) - 1}], not {only!r}")
        ws = [ws[i] for i in sorted(set(only))]
    return [dataclasses.replace(base, gpus=gpus or w.tp, model=w.model, tp=w.tp,
                                sublayer=w.sublayer, tokens=w.tokens if full else tokens,
                                policy=p, memory=memory)
            for w in ws for p in policies]


def same_run(cfg):
    """The configuration whose co-simulation is ``cfg``'s: ``cfg`` with the first sub-layer
    of its GEMM's shape (:func:`~sim_models.workloads.same_gemm`: FC-2 for FC-1). A
    configuration uses its sub-layer only for that shape (:meth:`CosimConfig.shape`; the
    data's seed is a field of its own), so the two are one simulation, the same to the
    bit, run once."""
    return dataclasses.replace(cfg, sublayer=same_gemm(cfg.sublayer))


def _as(result, cfg):
    """``result`` (of :func:`same_run` of ``cfg``) as ``cfg``'s, saying which sub-layer
    ran."""
    ran = result["config"]["sublayer"]
    if ran == cfg.sublayer:
        return result
    return dict(result, config=dict(result["config"], sublayer=cfg.sublayer),
                same_run_as=ran)


def _summary(entries, side):
    """Speedup geomean and max over ``entries`` of each policy key and of Ideal, and the DRAM
    bytes' reduction against Sequential, from ``side`` (``"rtl"`` or ``"model"``)."""
    cycles, dram = (("cycles", "dram_bytes_per_gpu") if side == "rtl" else
                    ("model_cycles", "model_dram_bytes_per_gpu"))
    out = {"speedup_geomean": {}, "speedup_max": {}, "dram_reduction_geomean": {}}
    for key in (k for k in entries[0][cycles] if k != "sequential"):
        ran = [e for e in entries if e[cycles].get(key)]   # a point that failed has no cycles
        if not ran:
            continue
        ratios = [e["cycles"]["sequential"] / e[cycles][key] for e in ran]
        out["speedup_geomean"][key] = geomean(ratios) - 1
        out["speedup_max"][key] = max(ratios) - 1
        if key != "ideal":
            out["dram_reduction_geomean"][key] = 1 - geomean(
                [e[dram][key] / e["dram_bytes_per_gpu"]["sequential"] for e in ran])
    return out


def assemble(points):
    """The table from sweep points (results of :func:`t3hw.tools.cosim.run` with the
    model, in :func:`configs` order): one entry per sub-layer, and the summaries. An entry
    whose points are another sub-layer's runs (:func:`same_run`) names it in
    ``same_run_as``, and its ``sim_wall_s`` are 0: it took no time of its own."""
    entries = {}
    for r in points:
        c = r["config"]
        key = (c["model"], c["tp"], c["sublayer"])
        if key not in entries:
            entries[key] = {"model": c["model"], "tp": c["tp"], "sublayer": c["sublayer"],
                            "tokens": c["tokens"], "gpus": c["gpus"], "hidden": c["hidden"],
                            "memory": c["memory"], "symmetric": bool(r.get("symmetric")),
                            "cycles": {"sequential": r["cycles"]["sequential"]},
                            "model_cycles": {}, "gap": {}, "numerics_ok": True,
                            "dram_bytes_per_gpu": {
                                "sequential": r["model"]["sequential_dram_bytes"]},
                            "model_dram_bytes_per_gpu": {}, "sim_wall_s": {}, "mode": {}}
        e, p = entries[key], POLICY_KEYS[c["policy"]]
        e["cycles"][p] = r["cycles"]["rtl"]
        e["model_cycles"][p] = r["cycles"]["model"]
        e["gap"][p] = r["cycles"]["gap"]
        # the GPUs simulated: the ring's, or GPU 0 of a symmetric one
        simulated = 1 if r.get("symmetric") else c["gpus"]
        e["dram_bytes_per_gpu"][p] = sum(r["dram_bytes"].values()) / simulated
        e["model_dram_bytes_per_gpu"][p] = r["model"]["t3_dram_bytes"]
        e["numerics_ok"] = e["numerics_ok"] and bool(r["numerics_ok"]) and not r["failure"]
        if "same_run_as" in r:                  # another sub-layer's run: no time of its own
            e["same_run_as"], e["sim_wall_s"][p] = r["same_run_as"], 0.0
        else:
            e["sim_wall_s"][p] = r.get("sweep_point", {}).get("seconds", r["sim_wall_s"])
        e["mode"][p] = r["mode"]
        seq = r["model"]["phases"]["sequential"]          # Ideal: max(GEMM, RS) + nothing
        e["ideal"] = max(seq["gemm"], seq["rs"])
    entries = list(entries.values())
    for e in entries:                       # Ideal after the policies, on both sides
        e["cycles"]["ideal"] = e["model_cycles"]["ideal"] = e.pop("ideal")
    gaps = [(abs(g), k, e) for e in entries for k, g in e["gap"].items()]
    _, policy, worst = max(gaps, key=lambda t: t[0])
    return {"configs": entries,
            "summary": {"rtl": _summary(entries, "rtl"), "model": _summary(entries, "model"),
                        "gap_max": {"gap": worst["gap"][policy], "policy": policy,
                                    "config": f"{worst['model']} TP{worst['tp']} "
                                              f"{worst['sublayer']}"},
                        "numerics_ok": all(e["numerics_ok"] for e in entries)}}


def run_paper_rtl(json_path=None, plot_dir=None, *, progress=False, scheduler=None,
                  workers=None, pgo=False, symmetric=None, **kw):
    """Co-simulate the table (``kw``: :func:`configs`' options) on Dask workers, on
    profile-guided builds with ``pgo`` (:mod:`t3hw.tools.pgo`), each ring's GPU 0 alone
    with ``symmetric`` (default: with ``full``); returns ``{"configs", "summary",
    "sweep"}`` (written to ``json_path``, plotted into ``plot_dir`` as
    ``paper_rtl_speedup.png``)."""
    from .sweep import run_sweep
    if symmetric is None:
        symmetric = bool(kw.get("full"))
    t0 = time.perf_counter()
    points = configs(**kw)
    runs = list(dict.fromkeys(same_run(c) for c in points))     # FC-1 is FC-2's run
    # every sub-layer under the first policy, then under the next: the model's Sequential run
    # of a sub-layer, the same for every policy, is then made once and kept
    # (t3hw.tools.cosim._sequential) before its other policies run. Within a policy the
    # largest GEMMs first, so that the sweep ends on short points, not on one long one
    # while the other workers wait.
    policies = list(dict.fromkeys(c.policy for c in points))
    runs.sort(key=lambda c: (policies.index(c.policy), -c.shape.m * c.shape.n * c.shape.k))
    out = run_sweep(runs, scheduler=scheduler, workers=workers, progress=progress,
                    model=True, mode="fast", pgo=pgo, symmetric=symmetric)
    ran = dict(zip(runs, out["points"]))
    result = assemble([_as(ran[same_run(c)], c) for c in points])
    result["sweep"] = dict(out["sweep"], wall_s=time.perf_counter() - t0, pgo=pgo,
                           symmetric=symmetric, full=bool(kw.get("full")),
                           configs=len(points))
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(result, indent=1) + "\n")
    if plot_dir:
        from .plots import plot_rtl
        plot_rtl(result, plot_dir)
    return result


def summary_lines(result):
    """The printed summary: the speedup geomeans (max) of the RTL and of the model."""
    s = result["summary"]
    lines = []
    for side in ("rtl", "model"):
        g, m = s[side]["speedup_geomean"], s[side]["speedup_max"]
        d = s[side]["dram_reduction_geomean"]
        lines.append(f"{side.upper():>5}: speedup over Sequential, geomean (max): " +
                     ", ".join(f"{k} {100 * g[k]:.1f}% ({100 * m[k]:.1f}%)" for k in g) +
                     "; DRAM bytes " + ", ".join(f"{k} -{100 * d[k]:.1f}%" for k in d))
    w = s["gap_max"]
    lines.append(f"largest RTL-vs-model gap: {100 * w['gap']:+.1f}% ({w['config']}, "
                 f"{w['policy']}); numerics {'exact' if s['numerics_ok'] else 'WRONG'}")
    return lines


def markdown(result, paper=None):
    """The table of ``docs/paper.md`` ("On the RTL") from a result: per sub-layer, each
    policy's speedup over Sequential on the RTL and in the model, the gap, and Ideal; then
    the geomeans. ``paper``: a :func:`t3hw.tools.paper.run_paper` result (the model on the
    paper's own hardware, ``bench/paper.json``), whose speedups of the same keys go in a
    last column."""
    entries = result["configs"]
    keys = [k for k in entries[0]["cycles"] if k not in ("sequential", "ideal")]
    head = ["model", "TP", "sub-layer", "GPUs", "Sequential (cycles)"] + \
        [f"{k} RTL / model (gap)" for k in keys] + ["Ideal"]
    full = {}
    if paper is not None:
        full = {(c["model"], c["tp"], c["sublayer"]): c["cycles"] for c in paper["configs"]}
        head.append(" / ".join(keys + ["Ideal"]) + ", paper's hardware (model)")
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def pct(seq, x):
        return f"{100 * (seq / x - 1):.1f}%" if x else "failed"

    def on_paper(cycles):
        return " / ".join(pct(cycles["sequential"], cycles[k]) for k in keys + ["ideal"])
    for e in entries:
        seq = e["cycles"]["sequential"]
        rows.append("| " + " | ".join(
            [e["model"], str(e["tp"]), e["sublayer"], str(e["gpus"]), f"{seq:,.0f}"] +
            [f"{pct(seq, e['cycles'][k])} / {pct(seq, e['model_cycles'][k])} "
             f"({100 * e['gap'][k]:+.1f}%)" for k in keys] +
            [pct(seq, e["cycles"]["ideal"])] +
            ([on_paper(full[e["model"], e["tp"], e["sublayer"]])] if full else [])) + " |")
    s = result["summary"]
    g = {side: s[side]["speedup_geomean"] for side in ("rtl", "model")}
    tail = ""
    if full:
        ps = paper["summary"]["speedup_geomean"]
        tail = " | **" + " / ".join(f"{100 * ps[k]:.1f}%" for k in keys + ["ideal"]) + "**"
    rows.append("| **geomean** | | | | | " + " | ".join(
        f"**{100 * g['rtl'][k]:.1f}% / {100 * g['model'][k]:.1f}%**" for k in keys) +
        f" | **{100 * g['rtl']['ideal']:.1f}%**{tail} |")
    return "\n".join(rows) + "\n"


def options(args):
    """:func:`configs`' options from ``t3hw paper --rtl``'s arguments; a bad value is a
    :class:`CliError` naming its option."""
    from .cosim import config_error
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers must be at least 1, not {args.workers}")
    if args.full and args.tokens is not None:
        raise CliError(f"--full runs the paper's own token counts: leave out --tokens "
                       f"{args.tokens}")
    if args.full and args.memory == "hbm":
        raise CliError("--full runs one GPU of each symmetric ring, which needs the "
                       "fixed-latency DRAM: leave out --memory hbm")
    if args.symmetric and args.memory == "hbm":
        raise CliError("--symmetric runs one GPU of each ring, which needs the fixed-latency "
                       "DRAM: leave out --memory hbm")
    kw = dict(policies=[p.strip() for p in args.policies.split(",") if p.strip()],
              tokens=None if args.full else
              DEFAULT_TOKENS if args.tokens is None else args.tokens, gpus=args.gpus,
              memory="hbm" if args.memory == "hbm" else "fixed", full=args.full)
    try:
        configs(**kw)
    except ValueError as exc:
        raise config_error(exc, {"tokens": 0, "gpus": 0, "policies": 0}) from None
    return kw


def cmd(args):
    """``t3hw paper --rtl``: run the table on the co-simulation, print its summary."""
    kw = options(args)
    result = run_paper_rtl(args.json, args.plot, progress=sys.stderr.isatty(),
                           scheduler=args.scheduler, workers=args.workers, pgo=args.pgo,
                           symmetric=args.symmetric or None, **kw)
    for line in summary_lines(result):
        print(line)
    print(f"{result['sweep']['points']} co-simulations for {result['sweep']['configs']} "
          f"points on {result['sweep']['workers']} "
          f"workers in {result['sweep']['wall_s']:.0f} s; written: {args.json}"
          + (f", plots in {args.plot}" if args.plot else ""))
    if not result["summary"]["numerics_ok"]:
        raise CliError("a co-simulation of the table failed its checks (see the JSON's "
                       "numerics_ok per sub-layer)")
