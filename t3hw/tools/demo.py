# SPDX-License-Identifier: Apache-2.0
"""``make demo``: a 4-GPU fused GEMM + ring reduce-scatter co-simulated on the generated
RTL of four engines under T3-MCA, with waves and a trigger timeline.

It prints the speedup over the Sequential baseline (GEMM, then the ring reduce-scatter, from
the performance model on the same scaled hardware), the DRAM traffic saved, whether every
GPU's reduced chunk equals numpy's sum, and where the waves and the timeline PNG are.
"""

import sys
import time
from pathlib import Path

from sim_models.cosim import CosimConfig
from . import cosim
from . import waves


__all__ = ["run_demo", "add_arguments", "cmd"]


def run_demo(*, out: Path, seed=1, progress=True):
    """Run the demo scenario into ``out``; returns 0 when its checks pass, else 1."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    cfg = CosimConfig(gpus=4, policy="t3_mca", collective="rs", seed=seed)
    print(f"[1/3] building the {cfg.gpus}-engine system top (Verilator, with tracing)...",
          flush=True)
    t0 = time.perf_counter()
    cosim.build(cfg, waves=True)
    print(f"      built in {time.perf_counter() - t0:.1f} s")
    w = cfg.workload
    print(f"[2/3] {cfg.gpus} GPUs: {w.model} {w.sublayer} at TP {w.tp}, {w.tokens} tokens "
          f"(GEMM {cfg.shape.m} x {cfg.shape.k} x {cfg.shape.n}), fused ring reduce-scatter, "
          f"T3-MCA...", flush=True)
    r = cosim.run(cfg, waves_dir=out, json_path=out / "cosim.json", progress=progress)
    c = r["cycles"]
    seq = r["model"]["sequential_dram_bytes"]
    t3 = sum(r["dram_bytes"].values()) / cfg.gpus
    print("[3/3] trigger timeline from the waves")
    png = waves.timeline(out, limit=12)
    print()
    print(f"  RTL cycles (GEMM + reduce-scatter):  {c['rtl']:>9,}   "
          f"performance model: {c['model']:>9,.0f} ({100 * c['gap']:+.1f}%)")
    print(f"  Sequential baseline (model):         {c['sequential']:>9,.0f}")
    print(f"  speedup over Sequential:             {c['sequential'] / c['rtl']:>9.2f}x "
          f"(model: {c['sequential'] / c['model']:.2f}x)")
    print(f"  DRAM traffic per GPU:                {t3 / 2**20:>9.2f} MiB vs "
          f"{seq / 2**20:.2f} MiB Sequential ({100 * (1 - t3 / seq):.0f}% saved)")
    ok = r["numerics_ok"] and not r["failure"] and not any(any(e.values()) for e in r["errors"])
    print(f"  numerics: {'every GPU reduced chunk equals numpy (max abs error 0)' if ok else 'WRONG'}"
          f"; {r['triggers']} triggers; {r['rtl_cycles_per_s']:,.0f} RTL cycles/s")
    print(f"\n  waves:    {r['waves']['dump']}\n  open:     gtkwave {r['waves']['gtkw']}"
          f"\n  timeline: {png}\n  results:  {out / 'cosim.json'}")
    return 0 if ok else 1


def add_arguments(p):
    """The options of ``t3hw demo``."""
    p.add_argument("--out", default="out/demo", metavar="DIR", help="where waves go")
    p.add_argument("--seed", type=int, default=1)


def cmd(args):
    """``t3hw demo``: run the demo scenario; its status is the demo's."""
    return run_demo(out=Path(args.out), seed=args.seed, progress=sys.stderr.isatty())
