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
           "gtkw_view", "view_window", "trigger_name", "find_dump", "SystemDump",
           "system_events", "plot_timeline", "timeline", "add_arguments", "cmd"]


def _name(scope, name, width):
    return f"{scope}.{name}[{width - 1}:0]" if width > 1 else f"{scope}.{name}"


def _fields(g, scope, port, layout, datafmt="dec", filters=None):
    """One trace per (non-empty) field of the struct signal ``port``; with ``filters`` (a
    folder next to the save file), enum-typed fields through a translate filter written
    there (:mod:`.wave_enums`) and named relative to the save file."""
    from .wave_enums import DATAFMT, layout_enums, write_filter
    enums = layout_enums(layout) if filters is not None else {}
    for name, field in layout:
        if field.width:
            kw = {"datafmt": datafmt}
            if name in enums:
                f = write_filter(enums[name], filters)
                kw = {"datafmt": DATAFMT, "translate_filter_file": f"{f.parent.name}/{f.name}"}
            g.trace(_name(scope, f"{port}__{name}", field.width), **kw)


def write_tracker_gtkw(dump, module, params: EngineParams, path):
    """Write ``path``, a ``.gtkw`` for the tracker ``dump`` grouping its streams.

    Groups: the observed ``write`` stream, ``program``, the S3 pipeline stage (the entry as
    read and forwarded, hit, new count, completion, push), the ``trigger`` stream, the sticky
    errors and the counters. The dump is named relative to ``path``'s folder; enum fields
    (write kind and source, program op) show their names through ``filters/`` there.
    """
    import os
    from pathlib import Path
    s = module
    filters = Path(path).parent / "filters"
    with open(path, "w") as f:
        g = GTKWSave(f)
        g.dumpfile(os.path.relpath(Path(dump).resolve(), Path(path).resolve().parent),
                   abspath=False)
        g.treeopen(f"{s}.")
        g.signals_width(300)
        g.zoom_markers(-6.0)
        g.trace(f"{s}.clk")
        g.trace(f"{s}.rst")
        g.trace(f"{s}.busy")
        with g.group("write (observed)"):
            g.trace(f"{s}.write__valid")
            _fields(g, s, "write__payload", write_layout(params), filters=filters)
        with g.group("program"):
            g.trace(f"{s}.program__valid")
            g.trace(f"{s}.program__ready")
            _fields(g, s, "program__payload", program_layout(params), filters=filters)
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
        if line.startswith("+{"):                    # +{alias} name
            line = line.split("} ", 1)[1]
        if line and line[0] not in "[@-*+^":
            names.append(re.sub(r"\[\d+:\d+\]$", "", line))
    return names


def dump_names(path):
    """Full names of every variable in a VCD or FST dump (read with pywellen)."""
    from pywellen import Waveform
    return {v.full_name for v in Waveform(path=str(path)).all_vars()}


# -- the system top (co-simulation) --------------------------------------------------------------
#: Per engine: (group, [(signal path inside the engine scope or top port, display format)]).
#: A ``(path, layout function)`` pair instead traces every field of that struct signal
#: (``path__field``), enum-typed fields through a translate filter (:mod:`.wave_enums`).
_TRIGGER_PATH = (
    ("write observed by the tracker", [("tracker.write__valid", None),
                                       ("tracker.write__payload", write_layout)]),
    ("tracker: hit, count, trigger", [("tracker.hit", None), ("tracker.new_left", "dec"),
                                      ("tracker.done", None), ("tracker.trigger__valid", None),
                                      ("tracker.trigger__ready", None),
                                      ("tracker.trigger__payload", trigger_layout)]),
    ("DMA descriptor and reads", [("dma.trigger__valid", None), ("dma.trigger__ready", None),
                                  ("dma.queue.descriptor__valid", None),
                                  ("dma.queue.descriptor__ready", None),
                                  ("dma.read__valid", None), ("dma.read__ready", None),
                                  ("dma.read__payload__addr", "hex")]),
    ("packets", [("@net_tx__valid", None), ("@net_tx__ready", None),
                 ("@net_tx__payload", "hex"), ("@net_rx__valid", None),
                 ("@net_rx__ready", None)]),
)

#: GTKWave's window in the save file: ``[size]`` and the signal pane's width (pixels).
GTKW_SIZE = (1600, 900)
GTKW_SIGNALS_WIDTH = 340
#: Pixels of the wave pane that GTKWave gives to borders and the scroll bar (measured with
#: ``gtkwave::getWindowEndTime`` on 3.3.118: the pane shows about this many fewer pixels).
_GTKW_WAVE_MARGIN = 30
#: Named markers GTKWave's save file holds (``A`` .. ``Z``).
NAMED_MARKERS = 26


def _var_widths(dump):
    from pywellen import Waveform
    return {v.full_name: v.bitwidth for v in Waveform(path=str(dump)).all_vars()}


def trigger_name(tile, n, units):
    """What the trigger of ``tile`` is in an ``n``-GPU all-reduce with ``units`` units per
    chunk: ``("RS", chunk, unit)`` (a reduce-scatter hop) or ``("AG", chunk, unit)`` (an
    all-gather copy); tile ids of the all-gather follow those of the reduce-scatter."""
    phase, rest = ("RS", tile) if tile < n * units else ("AG", tile - n * units)
    return phase, rest // units, rest % units


def view_window(times, *, period, first=8, margin=20, min_cycles=120, max_cycles=600):
    """``(start, end)`` of the view a save file opens on: from ``margin`` cycles before the
    first trigger to ``margin`` cycles after the ``first``-th, at least ``min_cycles`` and
    at most ``max_cycles`` wide (times in the dump's unit)."""
    t0 = times[0]
    last = times[min(first, len(times)) - 1]
    span = min(max(last - t0 + 2 * margin * period, min_cycles * period), max_cycles * period)
    start = max(0, t0 - margin * period)
    return start, start + span


def gtkw_view(path):
    """The view a ``.gtkw`` opens on, from its lines: ``{"start", "end", "marker",
    "named": {letter: time}, "names": {letter: text}, "dumpfile"}`` (``end`` computed from
    the zoom and the window size as GTKWave does: ``2**-zoom`` time units per pixel)."""
    import re as _re
    out = {"start": 0, "named": {}, "names": {}, "size": GTKW_SIZE,
           "signals_width": GTKW_SIGNALS_WIDTH}
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("[timestart]"):
            out["start"] = int(line.split()[1])
        elif line.startswith("[size]"):
            out["size"] = tuple(int(x) for x in line.split()[1:3])
        elif line.startswith("[signals_width]"):
            out["signals_width"] = int(line.split()[1])
        elif line.startswith("[dumpfile]"):
            out["dumpfile"] = line.split(None, 1)[1].strip('"')
        elif line.startswith("[markername]"):
            text = line.split(None, 1)[1]
            out["names"][text[0]] = text[1:]
        elif _re.match(r"^\*-?\d", line):
            vals = line[1:].split()
            out["zoom"] = float(vals[0])
            out["marker"] = int(vals[1])
            for letter, v in zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", vals[2:]):
                if int(v) >= 0:
                    out["named"][letter] = int(v)
    pixels = out["size"][0] - out["signals_width"] - _GTKW_WAVE_MARGIN
    out["end"] = out["start"] + int(pixels * 2 ** -out["zoom"])
    return out


def write_system_gtkw(dump, n, params: EngineParams, path, *, module="t3hw_system",
                      units=None):
    """Write ``path``, a ``.gtkw`` for a system ``dump`` that opens on every engine's trigger
    path: the writes the tracker observes, its hit, new count and completion, the trigger, the
    DMA's descriptor and reads, and the packets on the engine's network ports. Signals the
    dump does not hold (a shallower trace) are left out.

    The save file names the dump relative to its own folder (the folder can move), opens
    zoomed on the first triggers (:func:`view_window`) with the primary marker on the first
    trigger and named markers ``A`` .. ``Z`` on the following ones, labelled with the GPU
    and, given ``units`` (per chunk), the collective phase, chunk and unit
    (:func:`trigger_name`). Enum-typed fields show their names through translate filter
    files written to ``filters/`` next to ``path``.
    """
    import math
    import os
    from pathlib import Path
    from .wave_enums import DATAFMT, layout_enums, write_filter
    path = Path(path)
    widths = _var_widths(dump)
    d = SystemDump(dump, module)
    trig = []
    for i, e in enumerate(system_events(dump, n, module, dump_reader=d)):
        trig += [(d.time(c), i, tile) for c, tile, _ in e["triggers"]]
    trig.sort()
    filters = {}
    with open(path, "w") as f:
        g = GTKWSave(f)
        g.comment(f"written by t3hw.tools.waves for {Path(dump).name}: the view opens on the "
                  f"first trigger (primary marker), named markers on the next ones")
        g.dumpfile(os.path.relpath(Path(dump).resolve(), path.resolve().parent), abspath=False)
        g.savefile(path.name, abspath=False)
        if trig:
            start, end = view_window([t for t, _, _ in trig], period=d.period)
            pixels = GTKW_SIZE[0] - GTKW_SIGNALS_WIDTH - _GTKW_WAVE_MARGIN
            zoom = -math.log2((end - start) / pixels)
            g.timestart(start)
            named = {k: t for k, (t, _, _) in zip("abcdefghijklmnopqrstuvwxyz",
                                                   trig[1:1 + NAMED_MARKERS])}
            g.zoom_markers(zoom, trig[0][0], **named)
            for letter, (t, i, tile) in zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                                            trig[1:1 + NAMED_MARKERS]):
                label = f"GPU{i} tile {tile}"
                if units:
                    phase, chunk, unit = trigger_name(tile, n, units)
                    label = f"GPU{i} {phase} chunk {chunk} unit {unit}"
                g._p(f"[markername] {letter}{label}")
        else:
            g.zoom_markers(-14.0)
        g.size(*GTKW_SIZE)
        g.treeopen(f"{module}.")
        g.sst_expanded(False)
        g.signals_width(GTKW_SIGNALS_WIDTH)
        g.trace(f"{module}.clk")
        for i in range(n):
            with g.group(f"GPU {i}", closed=i > 0):
                for title, sigs in _TRIGGER_PATH:
                    with g.group(title):
                        for sig, fmt in sigs:
                            name = (f"{module}.e{i}__{sig[1:]}" if sig[0] == "@"
                                    else f"{module}.e{i}.{sig}")
                            if callable(fmt):              # every field of a struct
                                layout = fmt(params)
                                enums = layout_enums(layout)
                                fields = [(f"{name}__{fld}", enums.get(fld))
                                          for fld, field in layout if field.width]
                            else:
                                fields = [(name, fmt)]
                            for full, how in fields:
                                if full not in widths:
                                    continue
                                kw = {"datafmt": how} if isinstance(how, str) else {}
                                if how is not None and not isinstance(how, str):
                                    if how not in filters:
                                        filters[how] = write_filter(how, path.parent / "filters")
                                    kw = {"datafmt": DATAFMT, "translate_filter_file":
                                          f"filters/{filters[how].name}"}
                                elif callable(fmt):
                                    kw = {"datafmt": "dec"}
                                short = re.sub(rf"^e{i}(\.|__)", "",
                                               full[len(module) + 1:])
                                # no dots: GTKWave shows an alias's last dotted part only
                                alias = (short.replace("__payload__", " ")
                                         .replace("__", " ").replace(".", " "))
                                g.trace(_name("", full, widths[full])[1:], alias=alias, **kw)
    return path


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

    def time(self, cycle):
        """The dump time of the rising edge of ``cycle`` (as :meth:`transfers` counts)."""
        return self.e0 + cycle * self.period

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


def system_events(dump, n, module="t3hw_system", *, dump_reader=None):
    """Per engine: ``triggers`` ``[(cycle, tile, cmd)]``, ``packets`` (cycles of net_tx
    transfers), ``stores`` and ``loads`` (cycles of GPU store and load transfers).
    ``dump_reader`` reuses a :class:`SystemDump` of ``dump``."""
    d = dump_reader or SystemDump(dump, module)
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


#: Trigger colours of the timeline, by collective phase (:func:`trigger_name`).
PHASE_STYLE = {"RS": ("tab:red", "reduce-scatter hop"), "AG": ("tab:green", "all-gather copy")}


def plot_timeline(events, path, *, title="trigger timeline", bins=400, units=None):
    """A PNG timeline: per GPU, its compute traffic (loads and stores per cycle) and its
    packets (left scale, transfers per cycle), and a dot at every trigger, at the height of
    its unit (right scale) and coloured by collective phase (reduce-scatter hop or
    all-gather copy, :func:`trigger_name`; with ``units`` per chunk, else by tile id). The
    legend sits below the panels, so it hides no trigger."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    n = len(events)
    end = max([1] + [max(e[k][-1] if k != "triggers" else e[k][-1][0], 1)
                     for e in events for k in e if e[k]])
    edges = np.linspace(0, end, bins + 1)
    width = edges[1] - edges[0]
    fig, axes = plt.subplots(n, 1, figsize=(11, 1.6 * n + 1.4), sharex=True, squeeze=False)
    seen = {}
    for i, (ax, e) in enumerate(zip(axes[:, 0], events)):
        comp = np.histogram(e["loads"] + e["stores"], edges)[0] / width
        pk = np.histogram(e["packets"], edges)[0] / width
        seen["compute"] = ax.fill_between(edges[:-1], comp, step="post", color="0.65",
                                          label="compute: loads + stores per cycle")
        seen["packets"] = ax.fill_between(edges[:-1], pk, step="post", color="tab:blue",
                                          alpha=0.6, label="packets sent per cycle")
        ax.set_ylim(0, 1.05)
        ax.set_yticks([0, 0.5, 1])
        ax.set_ylabel(f"GPU {i}\ntransfers/cycle", fontsize=8)
        ax.tick_params(labelsize=7)
        ax2 = ax.twinx()
        if units:
            ax2.set_ylim(-0.5, units - 0.5)
            ax2.set_yticks(range(units) if units <= 8 else
                           np.linspace(0, units - 1, 5).round().astype(int))
            ax2.set_ylabel("trigger: unit", fontsize=8)
            by = {}
            for c, tile, _ in e["triggers"]:
                phase, _, unit = trigger_name(tile, n, units)
                by.setdefault(phase, []).append((c, unit))
            for phase, pts in sorted(by.items()):
                color, label = PHASE_STYLE[phase]
                seen[phase] = ax2.scatter([c for c, _ in pts], [u for _, u in pts], s=9,
                                          color=color, marker="|" if len(pts) > 400 else "o",
                                          label=f"trigger: {label} (height: its unit)")
        else:
            tiles = [t for _, t, _ in e["triggers"]]
            ax2.set_ylabel("trigger: tile id", fontsize=8)
            seen["trigger"] = ax2.scatter([c for c, _, _ in e["triggers"]], tiles, s=9,
                                          color="tab:red", label="trigger (height: tile id)")
        ax2.tick_params(labelsize=7)
        ax.text(0.005, 0.93, f"GPU {i}: {len(e['triggers'])} triggers", transform=ax.transAxes,
                fontsize=7, va="top", bbox=dict(facecolor="white", alpha=0.7, lw=0))
    axes[-1, 0].set_xlabel("cycle (memory-controller clock)")
    axes[0, 0].set_title(title)
    handles = [seen[k] for k in ("compute", "packets", "RS", "AG", "trigger") if k in seen]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7,
               frameon=False)
    fig.tight_layout(rect=(0, 0.06 if n > 1 else 0.1, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def find_dump(wdir):
    """The dump of a ``--waves`` folder: ``system.fst`` or ``system.vcd`` (the newer one
    when both exist); ``None`` if neither does."""
    from pathlib import Path
    found = [p for p in (Path(wdir) / "system.fst", Path(wdir) / "system.vcd") if p.is_file()]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def timeline(wdir, *, out=None, limit=40):
    """``t3hw waves DIR``: read ``DIR/system.fst`` (or ``system.vcd``) back, print its
    trigger timeline (per trigger: cycle, GPU, tile id and what it was: a reduce-scatter hop
    or an all-gather copy of chunk ``c``, unit ``u``) and render ``DIR/timeline.png``;
    returns the PNG path."""
    import json
    from pathlib import Path
    wdir = Path(wdir)
    dump, info = find_dump(wdir), wdir / "cosim.json"
    for f in (dump or wdir / "system.fst", info):
        if not f.is_file():
            raise FileNotFoundError(f"{f} does not exist; run `t3hw cosim --waves {wdir} ...` "
                                    f"first")
    r = json.loads(info.read_text())
    n, units = r["config"]["gpus"], r["units"]["per_chunk"]
    events = system_events(dump, n)
    rows = sorted((c, i, tile, cmd) for i, e in enumerate(events) for c, tile, cmd in e["triggers"])

    def what(tile):
        return "{} chunk {} unit {}".format(*trigger_name(tile, n, units))

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
    plot_timeline(events, png, units=units,
                  title=f"{n}-GPU {r['config']['collective']} under "
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
