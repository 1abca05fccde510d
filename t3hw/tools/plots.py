# SPDX-License-Identifier: Apache-2.0
"""Plots of the performance model's results (``t3hw paper --plot DIR``) and of the
co-simulated table (``t3hw paper --rtl --plot DIR``).

:func:`plot_results` draws a result of :func:`t3hw.tools.paper.run_paper` or
:func:`~t3hw.tools.paper.run_token_sweep` as two PNG bar charts: the speedup of T3, T3-MCA
and Ideal over Sequential per config, and the DRAM traffic per class of Sequential and
T3-MCA.
"""

import os

import numpy as np

from sim_models.dram import TRAFFIC_CLASSES
from sim_models.perf import PAPER


__all__ = ["plot_results", "plot_rtl"]


def plot_results(result, plot_dir, *, prefix="paper"):
    """Write ``{prefix}_speedup.png`` and ``{prefix}_dram.png`` into ``plot_dir``: the
    speedups of every config of ``result`` (the paper's geomeans as lines when ``prefix`` is
    ``"paper"``) and their DRAM traffic per class."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(plot_dir, exist_ok=True)
    configs = result["configs"]
    labels = [f"{c['model']}\nTP{c['tp']} {c['sublayer']}" + (f"\nT={c['tokens']}"
              if prefix != "paper" else "") for c in configs]
    x = np.arange(len(configs))
    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(configs)), 4.5))
    bars = [(k, n) for k, n in (("t3", "T3"), ("t3_mca", "T3-MCA"), ("t3_mca_rr", "T3-MCA-RR"),
                                ("ideal", "Ideal")) if k in configs[0]["cycles"]]
    width = 0.8 / len(bars)
    for i, (key, name) in enumerate(bars):
        y = [100 * (c["cycles"]["sequential"] / c["cycles"][key] - 1) for c in configs]
        ax.bar(x + (i - (len(bars) - 1) / 2) * width, y, width, label=name)
    if prefix == "paper":
        for (key, name), color in zip((("t3", "T3"), ("t3_mca", "T3-MCA"), ("ideal", "Ideal")),
                                      plt.get_cmap("tab10").colors):
            ax.axhline(100 * PAPER["summary"]["speedup_geomean"][key], color=color, ls="--",
                       lw=1, label=f"paper geomean {name}")
    ax.set_xticks(x, labels, fontsize=6, rotation=90)
    ax.set_ylabel("speedup over Sequential (%)")
    ax.set_title("Sub-layer speedup (model: sim_models.perf)")
    ax.axhline(0, color="k", lw=0.5)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(plot_dir, f"{prefix}_speedup.png"), dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(configs)), 4.5))
    colors = plt.get_cmap("tab10").colors
    for off, scen, hatch in ((-0.2, "sequential", ""), (0.2, "t3_mca", "//")):
        bottom = np.zeros(len(configs))
        for k, cls in enumerate(TRAFFIC_CLASSES):
            y = np.array([c["dram_bytes"][scen][cls] / sum(c["dram_bytes"]["sequential"].values())
                          for c in configs])
            ax.bar(x + off, y, 0.4, bottom=bottom, color=colors[k], hatch=hatch,
                   label=cls if scen == "sequential" else None, edgecolor="k", lw=0.2)
            bottom += y
    ax.set_xticks(x, labels, fontsize=6, rotation=90)
    ax.set_ylabel("DRAM bytes / Sequential total")
    ax.set_title("DRAM traffic: Sequential (left, plain) vs T3-MCA (right, hatched)")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(os.path.join(plot_dir, f"{prefix}_dram.png"), dpi=120)
    plt.close(fig)


def plot_rtl(result, plot_dir):
    """Write ``paper_rtl_speedup.png`` (``paper_rtl_full_speedup.png`` for a table of the
    paper's token counts, ``full``) into ``plot_dir``: per sub-layer of a
    :func:`t3hw.tools.paper_rtl.run_paper_rtl` result, each policy's speedup over Sequential
    on the RTL (solid) beside the model's on the same hardware (hatched), and Ideal."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(plot_dir, exist_ok=True)
    configs = result["configs"]
    labels = [f"{c['model']}\nTP{c['tp']} {c['sublayer']}" for c in configs]
    keys = [k for k in configs[0]["cycles"] if k not in ("sequential", "ideal")]
    bars = [(k, side) for k in keys for side in ("cycles", "model_cycles")] + \
        [("ideal", "cycles")]
    x = np.arange(len(configs))
    width = 0.8 / len(bars)
    colors = plt.get_cmap("tab10").colors
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(configs)), 4.5))
    for i, (key, side) in enumerate(bars):
        y = [100 * (c["cycles"]["sequential"] / c[side][key] - 1) for c in configs]
        name = key if key == "ideal" else f"{key} ({'RTL' if side == 'cycles' else 'model'})"
        ax.bar(x + (i - (len(bars) - 1) / 2) * width, y, width, label=name,
               color=colors[keys.index(key) if key in keys else len(keys)],
               hatch="//" if side == "model_cycles" else "", edgecolor="k", lw=0.2)
    ax.set_xticks(x, labels, fontsize=6, rotation=90)
    ax.set_ylabel("speedup over Sequential (%)")
    t, n = configs[0]["tokens"], sorted({c["gpus"] for c in configs})
    full = result.get("sweep", {}).get("full", False)
    how = "GPU 0 of each symmetric ring of " if configs[0].get("symmetric") else ""
    ax.set_title(f"Sub-layer speedup on generated RTL (t3hw paper --rtl{' --full' * full}; "
                 f"T={t}, {how}{'/'.join(map(str, n))} GPUs)\nand the model on the same "
                 f"hardware", fontsize=10)
    ax.axhline(0, color="k", lw=0.5)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    name = "paper_rtl_full_speedup.png" if full else "paper_rtl_speedup.png"
    fig.savefig(os.path.join(plot_dir, name), dpi=120)
    plt.close(fig)
