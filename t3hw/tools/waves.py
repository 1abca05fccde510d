# SPDX-License-Identifier: Apache-2.0
"""GTKWave save files that open on the trigger path, and reading dumps back.

Dumps come from Verilator (VCD), whose top scope is the generated module. Amaranth emits one
named wire per struct field (``write__payload__tile``), so the save file traces every field
of a payload under its own name; the widths come from the layouts in :mod:`t3hw.spec.layouts`.
"""

import re

from vcd.gtkw import GTKWSave

from t3hw.spec.layouts import (entry_layout, program_layout, trigger_layout, tracker_errors_layout,
                      write_layout)
from t3hw.spec.params import EngineParams


__all__ = ["write_tracker_gtkw", "gtkw_traces", "dump_names", "write_system_gtkw",
           "system_events", "plot_timeline", "timeline", "add_arguments", "cmd"]


def _name(scope, name, width):
    return f"{scope}.{name}[{width - 1}:0]" if width > 1 else f"{scope}.{name}"


def _fields(g, scope, port, layout, datafmt="dec"):
    """One trace per (non-empty) field of the struct signal ``port``."""
    for name, field in layout:
        if field.width:
            g.trace(_name(scope, f"{port}__{name}", field.width), datafmt=datafmt)


def write_tracker_gtkw(dump, module, params: EngineParams, path):
    """Write ``path``, a ``.gtkw`` for the tracker ``dump`` grouping its streams.

    Groups: the observed ``write`` stream, ``program``, the S3 pipeline stage (the entry as
    read and forwarded, hit, new count, completion, push), the ``trigger`` stream, the sticky
    errors and the counters.
    """
    s = module
    with open(path, "w") as f:
        g = GTKWSave(f)
        g.dumpfile(str(dump))
        g.treeopen(f"{s}.")
        g.signals_width(300)
        g.zoom_markers(-6.0)
        g.trace(f"{s}.clk")
        g.trace(f"{s}.rst")
        g.trace(f"{s}.busy")
        with g.group("write (observed)"):
            g.trace(f"{s}.write__valid")
            _fields(g, s, "write__payload", write_layout(params))
        with g.group("program"):
            g.trace(f"{s}.program__valid")
            g.trace(f"{s}.program__ready")
            _fields(g, s, "program__payload", program_layout(params))
        with g.group("S3: lookup and count"):
            g.trace(f"{s}.s3_valid")
            g.trace(f"{s}.s3_prog")
            g.trace(f"{s}.s3_hit")
            _fields(g, s, "cur", entry_layout(params))
            g.trace(f"{s}.hit")
            g.trace(_name(s, "new_left", params.count_width), datafmt="dec")
            g.trace(f"{s}.done")
            g.trace(f"{s}.push")
        with g.group("trigger"):
            g.trace(f"{s}.trigger__valid")
            g.trace(f"{s}.trigger__ready")
            _fields(g, s, "trigger__payload", trigger_layout(params))
        with g.group("errors (sticky)"):
            _fields(g, s, "errors", tracker_errors_layout(params), datafmt="bin")


def gtkw_traces(path):
    """Signal names (without bit ranges) traced by a ``.gtkw`` file."""
    names = []
    for line in open(path):
        line = line.strip()
        if line and not line[0] in "[@-*+":
            names.append(re.sub(r"\[\d+:\d+\]$", "", line))
    return names


def dump_names(path):
    """Full names of every variable in a VCD or FST dump (read with pywellen)."""
    from pywellen import Waveform
    return {v.full_name for v in Waveform(path=str(path)).all_vars()}


# -- the system top (co-simulation) --------------------------------------------------------------
#: Per engine: (group, [(signal path inside the engine scope or top port, display format)]).
_TRIGGER_PATH = (
    ("write observed by the tracker", [("tracker.write__valid", None),
                                       ("tracker.write__payload__tile", "dec"),
                                       ("tracker.write__payload__source", "dec")]),
    ("tracker: hit, count, trigger", [("tracker.hit", None), ("tracker.new_left", "dec"),
                                      ("tracker.done", None), ("tracker.trigger__valid", None),
                                      ("tracker.trigger__ready", None),
                                      ("tracker.trigger__payload__tile", "dec"),
                                      ("tracker.trigger__payload__cmd", "dec")]),
    ("DMA descriptor and reads", [("dma.trigger__valid", None), ("dma.trigger__ready", None),
                                  ("dma.queue.descriptor__valid", None),
                                  ("dma.queue.descriptor__ready", None),
                                  ("dma.read__valid", None), ("dma.read__ready", None),
                                  ("dma.read__payload__addr", "hex")]),
    ("packets", [("@net_tx__valid", None), ("@net_tx__ready", None),
                 ("@net_tx__payload", "hex"), ("@net_rx__valid", None),
                 ("@net_rx__ready", None)]),
)


def _var_widths(dump):
    from pywellen import Waveform
    return {v.full_name: v.bitwidth for v in Waveform(path=str(dump)).all_vars()}


def write_system_gtkw(dump, n, params: EngineParams, path, *, module="t3hw_system"):
    """Write ``path``, a ``.gtkw`` for a system ``dump`` that opens on every engine's trigger
    path: the writes the tracker observes, its hit, new count and completion, the trigger, the
    DMA's descriptor and reads, and the packets on the engine's network ports. Signals the
    dump does not hold (a shallower trace) are left out."""
    widths = _var_widths(dump)
    with open(path, "w") as f:
        g = GTKWSave(f)
        g.dumpfile(str(dump))
        g.treeopen(f"{module}.")
        g.signals_width(320)
        g.zoom_markers(-14.0)
        g.trace(f"{module}.clk")
        for i in range(n):
            with g.group(f"GPU {i}", closed=i > 0):
                for title, sigs in _TRIGGER_PATH:
                    with g.group(title):
                        for sig, fmt in sigs:
                            name = (f"{module}.e{i}__{sig[1:]}" if sig[0] == "@"
                                    else f"{module}.e{i}.{sig}")
                            if name not in widths:
                                continue
                            g.trace(_name("", name, widths[name])[1:],
                                    **({"datafmt": fmt} if fmt else {}))


class SystemDump:
    """Transfers on a system dump's streams, by clock cycle, read with pywellen.

    A stream transfers at a rising clock edge when its ``valid`` and ``ready`` were both high
    just before the edge; :meth:`transfers` gives those cycles (counted from the first
    rising edge) and the payload values then.
    """

    def __init__(self, dump, module="t3hw_system"):
        from pywellen import Waveform
        self.module = module
        self.w = Waveform(path=str(dump))
        self.vars = {v.full_name: v for v in self.w.all_vars()}
        clk = [t for t, v in self.vars[f"{module}.clk"].tv if v == 1]
        self.e0, self.period = clk[0], clk[1] - clk[0]

    def has(self, name):
        return f"{self.module}.{name}" in self.vars

    def _steps(self, name):
        return self.vars[f"{self.module}.{name}"].tv

    def transfers(self, valid, ready=None, payload=()):
        """``[(cycle, {payload name: value})]`` of every transfer of ``valid``/``ready``."""
        changes = {}
        names = [valid] + ([ready] if ready else [])
        for k, name in enumerate(names):
            for t, v in self._steps(name):
                changes.setdefault(t, {})[k] = v
        state = [0] * len(names)
        out = []
        times = sorted(changes)
        sigs = [self.vars[f"{self.module}.{p}"].signal for p in payload]
        for idx, t in enumerate(times):
            for k, v in changes[t].items():
                state[k] = v
            if all(state):
                end = times[idx + 1] if idx + 1 < len(times) else t + self.period
                # edges E with t < E <= end sample this interval
                first = self.e0 + (max(0, (t - self.e0) // self.period + 1)) * self.period
                for edge in range(first, end + 1, self.period):
                    vals = {p: s.value_at(edge - 1) for p, s in zip(payload, sigs)}
                    out.append(((edge - self.e0) // self.period, vals))
        return out


def system_events(dump, n, module="t3hw_system"):
    """Per engine: ``triggers`` ``[(cycle, tile, cmd)]``, ``packets`` (cycles of net_tx
    transfers), ``stores`` and ``loads`` (cycles of GPU store and load transfers)."""
    d = SystemDump(dump, module)
    out = []
    for i in range(n):
        trig = d.transfers(f"e{i}.tracker.trigger__valid", f"e{i}.tracker.trigger__ready",
                           (f"e{i}.tracker.trigger__payload__tile",
                            f"e{i}.tracker.trigger__payload__cmd"))
        out.append({
            "triggers": [(c, v[f"e{i}.tracker.trigger__payload__tile"],
                          v[f"e{i}.tracker.trigger__payload__cmd"]) for c, v in trig],
            "packets": [c for c, _ in d.transfers(f"e{i}__net_tx__valid",
                                                  f"e{i}__net_tx__ready")],
            "stores": [c for c, _ in d.transfers(f"e{i}__store__valid", f"e{i}__store__ready")],
            "loads": [c for c, _ in d.transfers(f"e{i}__load__valid", f"e{i}__load__ready")],
        })
    return out


def plot_timeline(events, path, *, title="trigger timeline", bins=400):
    """A PNG timeline: per GPU, its compute traffic (loads and stores per cycle), its DMA
    and remote packets, and a marker at every trigger."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    n = len(events)
    end = max([1] + [max(e[k][-1] if k != "triggers" else e[k][-1][0], 1)
                     for e in events for k in e if e[k]])
    edges = np.linspace(0, end, bins + 1)
    width = edges[1] - edges[0]
    fig, axes = plt.subplots(n, 1, figsize=(11, 1.3 * n + 0.8), sharex=True, squeeze=False)
    for i, (ax, e) in enumerate(zip(axes[:, 0], events)):
        comp = np.histogram(e["loads"] + e["stores"], edges)[0] / width
        pk = np.histogram(e["packets"], edges)[0] / width
        ax.fill_between(edges[:-1], comp, step="post", color="0.6", label="compute (loads + stores)")
        ax.fill_between(edges[:-1], pk, step="post", color="tab:blue", alpha=0.7,
                        label="packets sent")
        for c, _, _ in e["triggers"]:
            ax.axvline(c, color="tab:red", lw=0.6, alpha=0.8)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(f"GPU {i}", rotation=0, ha="right", va="center")
        ax.set_yticks([])
    axes[0, 0].plot([], [], color="tab:red", lw=1, label="trigger")
    axes[0, 0].legend(loc="upper right", fontsize=7, ncol=3)
    axes[-1, 0].set_xlabel("cycle (memory-controller clock)")
    axes[0, 0].set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def timeline(wdir, *, out=None, limit=40):
    """``t3hw waves DIR``: read ``DIR/system.vcd`` back, print its trigger timeline (per
    trigger: cycle, GPU, tile id and what it was: a reduce-scatter hop or an all-gather copy
    of chunk ``c``, unit ``u``) and render ``DIR/timeline.png``; returns the PNG path."""
    import json
    from pathlib import Path
    wdir = Path(wdir)
    dump, info = wdir / "system.vcd", wdir / "cosim.json"
    for f in (dump, info):
        if not f.is_file():
            raise FileNotFoundError(f"{f} does not exist; run `t3hw cosim --waves {wdir} ...` "
                                    f"first")
    r = json.loads(info.read_text())
    n, units = r["config"]["gpus"], r["units"]["per_chunk"]
    events = system_events(dump, n)
    rows = sorted((c, i, tile, cmd) for i, e in enumerate(events) for c, tile, cmd in e["triggers"])

    def what(tile):
        phase, rest = ("RS", tile) if tile < n * units else ("AG", tile - n * units)
        return f"{phase} chunk {rest // units} unit {rest % units}"

    print(f"{len(rows)} triggers in {dump} ({n} GPUs, {units} units per chunk)")
    print(f"  {'cycle':>8}  {'GPU':>3}  {'tile':>5}  {'cmd':>4}  unit")
    shown = rows if len(rows) <= limit else rows[:limit // 2] + [None] + rows[-limit // 2:]
    for row in shown:
        if row is None:
            print(f"  {'...':>8}")
            continue
        c, i, tile, cmd = row
        print(f"  {c:>8}  {i:>3}  {tile:>5}  {cmd:>4}  {what(tile)}")
    for i, e in enumerate(events):
        t = [c for c, _, _ in e["triggers"]]
        span = f"cycles {t[0]} .. {t[-1]}" if t else "none"
        print(f"  GPU {i}: {len(t)} triggers ({span}), {len(e['packets'])} packets sent, "
              f"{len(e['loads'])} loads and {len(e['stores'])} stores")
    png = Path(out) if out else wdir / "timeline.png"
    plot_timeline(events, png, title=f"{n}-GPU {r['config']['collective']} under "
                                     f"{r['config']['policy']}: triggers over time")
    print(f"timeline: {png}")
    return png


def add_arguments(parser):
    """The options of ``t3hw waves``."""
    parser.add_argument("dir", metavar="DIR", help="the --waves folder of a `t3hw cosim` run")


def cmd(args):
    """``t3hw waves DIR``: :func:`timeline` of ``DIR``; an unreadable dump or ``cosim.json``
    (corrupt, truncated, from another tool) is a one-line error."""
    from .errors import CliError
    try:
        timeline(args.dir)
    except (RuntimeError, ValueError, KeyError, IndexError, TypeError) as exc:
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()),
                     type(exc).__name__)
        raise CliError(f"cannot read the waves in {args.dir} ({first}): the dump or "
                       f"cosim.json is corrupt or truncated; rerun `t3hw cosim --waves "
                       f"{args.dir} ...`") from None
    return 0
