# SPDX-License-Identifier: Apache-2.0
"""``t3hw cosim``: build the N-engine system top and run a co-simulation scenario on it.

:func:`build` generates ``t3hw_system`` with ``n`` engines for the scenario's parameters and
Verilates it (one build folder per ``(n, parameters, waves)``); :func:`run` runs
:mod:`t3hw.verif.cosim_tb` on it and adds the performance model's figures for the same scenario
(:func:`sim_models.cosim.model_cycles`), so that one JSON says how the RTL and the model
compare.
"""

import functools
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from sim_models.cosim import (COLLECTIVES, MEMORIES, POLICIES, CosimConfig, model_cycles,
                              model_sequential)
from sim_models.workloads import MODELS, SUBLAYERS
from . import simulate, toolchain
from .errors import CliError
from .progress import Progress


__all__ = ["MODES", "SAME_IN_BOTH_MODES", "build_dir", "build", "run", "choose_mode", "differences",
           "result_line", "add_arguments", "cmd"]

MODULE = "t3hw_system"
#: Which scopes ``--waves`` traces (a Verilator configuration file).
TRACE_SCOPE = toolchain.PACKAGE / "verif" / "trace_scope.vlt"


#: Dump formats of ``--waves``, default first: FST (Verilator ``--trace-fst``; needs Debian's
#: ``liblz4-dev``) is about 10 times smaller than VCD and opens in GTKWave at once.
WAVE_FORMATS = ("fst", "vcd")


def _key(cfg, waves):
    text = json.dumps({"n": cfg.gpus, "params": cfg.params.to_dict(), "waves": waves,
                       "scope": TRACE_SCOPE.read_text() if waves else "", "max_width": 64,
                       "verilator": simulate.VERILATOR_KEY},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


#: The Verilog module of each engine of the co-simulation's system top (:func:`_system_verilog`).
ENGINE_MODULE = "t3hw_system_engine"


@functools.lru_cache(maxsize=None)
def _system_verilog(gpus, params):
    """The generated Verilog of the ``gpus``-engine system: ``rtl/t3hw_system.v``'s ports and
    instance hierarchy (``t3hw_system.e<i>.tracker`` ...), with the engine one module
    (:data:`ENGINE_MODULE`) that the top instantiates ``gpus`` times, so that generating and
    Verilating a system costs one engine, not ``gpus`` (the fast top's scheme,
    :mod:`t3hw.verif.simhdl.top`). ``tests/test_native.py`` checks that it computes what
    ``rtl/t3hw_system.v`` (:class:`~t3hw.hw.system.System`) does."""
    from .generate import _header, convert
    from t3hw.hw.engine import Engine
    from t3hw.verif.simhdl.top import SharedSystem
    return (_header("system", MODULE, params)
            + convert(SharedSystem(params, gpus, ENGINE_MODULE), MODULE)
            + convert(Engine(params), ENGINE_MODULE))


def build_dir(cfg, waves=False, root=None):
    """The folder :func:`build` makes ``cfg``'s system top in: one per ring size, engine
    parameters, Verilator flags and ``waves`` (a dump format, or False)."""
    return Path(root or toolchain.build_root()) / f"system{cfg.gpus}-{_key(cfg, waves)}"


def build(cfg: CosimConfig, *, waves=False, root=None):
    """Generate and Verilate the ``cfg.gpus``-engine system; returns (runner, build dir).

    ``waves`` is ``False`` or a dump format of :data:`WAVE_FORMATS` (``True``: the first,
    FST). With waves, the build traces the system top, each engine's nets and the trigger path
    inside its tracker and DMA queue (:data:`TRACE_SCOPE`), not every wire, and no vector
    wider than 64 bits (whole payloads and counter banks: their fields are traced).
    """
    if waves is True:
        waves = WAVE_FORMATS[0]
    if waves and waves not in WAVE_FORMATS:
        raise ValueError(f"waves must be one of {WAVE_FORMATS}, not {waves!r}")
    bdir = build_dir(cfg, waves, root)
    with toolchain.locked(bdir.with_name(bdir.name + ".lock")):
        return _build(cfg, bdir, waves)


def _build(cfg, bdir, waves):
    src = bdir / "rtl" / f"{MODULE}.v"
    # Generated once per process, written only when it changed: the Verilator build is redone
    # exactly when the RTL changed (a build folder is keyed by the parameters, not by the
    # generator's code).
    text = _system_verilog(cfg.gpus, cfg.params)
    if not src.is_file() or src.read_text() != text:
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(text)
    runner = simulate.verilator_runner()
    args = [*simulate.VERILATOR_ARGS,
            str(simulate.ports_vlt(src, MODULE, bdir, no_inline=(ENGINE_MODULE,)))]
    if waves:
        # --no-trace-top: no ``$rootio`` scope (the top's ports are in ``t3hw_system``)
        args += ["--trace-depth", "4", "--trace-max-width", "64", "--no-trace-top",
                 str(TRACE_SCOPE)]
        if waves == "fst":
            args += ["--trace-fst"]
    runner.build(sources=[src], hdl_toplevel=MODULE, build_dir=bdir, always=False,
                 build_args=args, waves=bool(waves), log_file=bdir / "build.log")
    return runner, bdir


def _progress(state):
    """How far a run is, from the testbench's progress file: ``(fraction, text)``."""
    frac = 0.5 * state["tiles"] / max(1, state["tiles_total"]) + \
        0.5 * min(1.0, state["r_bytes"] / max(1, state["r_total"]))
    return frac, f"{100 * frac:5.1f}%  cycle {state['cycle']:>9,}"


#: How a scenario runs: ``"fast"`` (the GPU, DRAM and ring models as simulation-only HDL,
#: Python at tile events: :mod:`t3hw.tools.cosim_fast`), ``"exact"`` (every cycle stepped in
#: Python: :mod:`t3hw.verif.cosim_tb`, the golden mode, which runs every setting), or
#: ``"auto"``: fast when the scenario allows it (no jitter, refusals or
#: reordering, no waves), else exact.
MODES = ("auto", "fast", "exact")


def choose_mode(cfg, mode="auto", waves=False):
    """The mode a run of ``cfg`` takes (:data:`MODES`); ``ValueError`` if ``"fast"`` cannot
    run it."""
    from t3hw.verif.simhdl.top import check_fast
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if mode == "exact":
        return mode
    try:
        check_fast(cfg)
        if waves:
            raise ValueError("waves are dumped by the exact co-simulation only (--exact)")
    except ValueError:
        if mode == "fast":
            raise
        return "exact"
    return "fast"


def run(cfg: CosimConfig, *, json_path=None, waves_dir=None, progress=False, root=None,
        model=True, wave_format=WAVE_FORMATS[0], mode="auto", inputs_path=None, parts=1,
        pgo=False, symmetric=False):
    """Run one scenario; returns the result dict (also written to ``json_path``).

    ``mode`` is one of :data:`MODES` (the result's ``mode`` says which ran); both modes give
    the same cycles, triggers, counters and numerics where both run
    (``cocotb_tests/test_cosim_fast.py``).

    ``waves_dir`` also dumps the run there, as ``system.fst`` (or ``system.vcd`` with
    ``wave_format="vcd"``), with a ``system.gtkw`` that opens on the triggers
    (:func:`t3hw.tools.waves.write_system_gtkw`) and the ``cosim.json`` ``t3hw waves`` reads.

    Fields: ``numerics_ok``, ``max_abs_err``, ``cycles`` (``rtl``, ``model``, and the
    Sequential baseline's ``sequential`` from the same model), ``triggers`` (per GPU),
    ``dram_bytes`` (per traffic class, summed over the GPUs), ``sim_wall_s``,
    ``rtl_cycles_per_s``, plus the run's details (errors, counters, packets, skipping).

    ``inputs_path`` (the fast mode only) records every input the testbench gave the top
    there, for the native harness (:func:`t3hw.tools.native.replay_fast`). ``parts`` > 1
    (the fast mode only) splits the ring over that many processes, each on a core of its
    own (:mod:`t3hw.tools.cosim_split`): the same result, sooner. ``pgo`` (the fast mode
    only) runs on the profile-guided build of the fast top (:mod:`t3hw.tools.pgo`): the
    same result, 1.2 to 1.4 times as fast, after a build about twice as long.
    ``symmetric`` (the fast mode only) runs GPU 0 of the ring alone, its neighbour supplied
    by the ring's symmetry (:func:`t3hw.tools.cosim_split.run_parts` with ``symmetric``):
    the whole ring's cycles, triggers and numerics on the fixed-latency DRAM, about N times
    as fast; the per-GPU fields and ``dram_bytes`` are GPU 0's.
    """
    waves = waves_dir is not None
    if symmetric:
        check_symmetric(cfg)
    if choose_mode(cfg, mode, waves) == "fast":
        return _finish(cfg, _run_fast(cfg, root, progress, inputs_path, parts, pgo,
                                      symmetric), json_path, model)
    if symmetric:
        raise ValueError("symmetric runs one GPU of the fast mode's ring, and this scenario "
                         "runs in the exact mode")
    if parts != 1:
        raise ValueError(f"parts={parts} splits the fast mode, and this scenario runs in the "
                         f"exact mode")
    if pgo:
        raise ValueError("pgo builds the fast mode's top, and this scenario runs in the "
                         "exact mode")
    if inputs_path is not None:
        raise ValueError("inputs_path records the fast mode's inputs, and this scenario runs "
                         "in the exact mode")
    t0 = time.perf_counter()
    runner, bdir = build(cfg, waves=wave_format if waves else False, root=root)
    build_s = time.perf_counter() - t0
    tag = hashlib.sha256(json.dumps(cfg.to_dict(), sort_keys=True).encode()).hexdigest()[:10]
    out = bdir / f"cosim-{tag}.json"
    prog = bdir / f"cosim-{tag}.progress"
    for f in (out, prog):
        f.unlink(missing_ok=True)
    trace = None
    if waves:
        wdir = Path(waves_dir).resolve()
        wdir.mkdir(parents=True, exist_ok=True)
        trace = wdir / f"system.{wave_format}"
        for fmt in WAVE_FORMATS:                 # a stale dump of the other format
            (wdir / f"system.{fmt}").unlink(missing_ok=True)
    toolchain.toolchain_env()
    env = {"T3HW_COSIM": json.dumps(cfg.to_dict()), "T3HW_COSIM_OUT": str(out),
           "T3HW_COSIM_PROGRESS": str(prog)}
    failure = None
    with Progress(enabled=progress).follow(prog, _progress):
        try:
            simulate.run(runner, MODULE, bdir, "t3hw.verif.cosim_tb", params=cfg.params,
                        seed=cfg.seed, test_dir=bdir, extra_env=env, trace_file=trace,
                        tag=f"cosim-{tag}")
        except AssertionError as e:          # a failed check: report it with the results
            if not out.is_file():
                raise
            failure = str(e)
    r = json.loads(out.read_text())
    r["failure"] = failure
    r["build_s"] = build_s
    r["mode"] = "exact"
    r = _finish(cfg, r, None, model)
    if waves:
        from .waves import write_system_gtkw
        r["waves"] = {"dump": str(trace), "gtkw": str(trace.with_suffix(".gtkw"))}
        write_system_gtkw(trace, cfg.gpus, cfg.params, trace.with_suffix(".gtkw"),
                          units=r.get("units", {}).get("per_chunk"))
        (Path(waves_dir) / "cosim.json").write_text(json.dumps(r, indent=1) + "\n")
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(r, indent=1) + "\n")
    return r


#: The result fields the fast and the exact mode must agree on (with ``cycles.rtl``).
SAME_IN_BOTH_MODES = ("numerics_ok", "max_abs_err", "triggers_per_gpu", "armed", "packets",
                      "store_wait_cycles", "gemm_cycles", "dram_bytes", "errors", "stats")


def differences(fast, exact):
    """The fields of :data:`SAME_IN_BOTH_MODES` (and ``cycles``) in which a fast run's result
    differs from an exact run's of the same scenario: ``[]`` when they agree."""
    diff = [k for k in SAME_IN_BOTH_MODES if fast[k] != exact[k]]
    return diff + ([] if fast["cycles"]["rtl"] == exact["cycles"]["rtl"] else ["cycles"])


def check_symmetric(cfg):
    """Raise ``ValueError`` unless GPU 0 of ``cfg``'s ring can stand for the whole ring
    (:func:`t3hw.tools.cosim_split.run_parts` with ``symmetric``): the fixed-latency DRAM,
    whose timing does not depend on the address (the HBM2 model's banks see the rotated
    chunks at other addresses, so its GPUs are not rotations of each other)."""
    if cfg.memory != "fixed":
        raise ValueError(f"a run of one GPU of a symmetric ring needs memory 'fixed' (the "
                         f"HBM2 model's timing depends on the address), not {cfg.memory!r}")


def _run_fast(cfg, root, progress, inputs_path=None, parts=1, pgo=False, symmetric=False):
    from . import cosim_fast
    prog = Path(root or toolchain.build_root()) / f"fast-{cfg.gpus}-{time.time_ns()}.progress"
    with Progress(enabled=progress).follow(prog, _progress):
        r = cosim_fast.run(cfg, root=root, progress_path=prog, inputs_path=inputs_path,
                           parts=parts, pgo=pgo, symmetric=symmetric)
    prog.unlink(missing_ok=True)
    return r


def _model_key(cfg):
    """What the model's Sequential run of ``cfg`` depends on: the scenario but its policy,
    and the performance model's and the parameters' sources."""
    root = Path(__file__).resolve().parent.parent.parent
    sources = toolchain.sources_digest([*(root / "sim_models").glob("*.py"),
                                        *(root / "t3hw" / "spec").glob("*.py")])
    return hashlib.sha256(json.dumps([dict(cfg.to_dict(), policy=None), sources],
                                     sort_keys=True).encode()).hexdigest()[:16]


def _sequential(cfg):
    """:func:`sim_models.cosim.model_sequential` of ``cfg``, kept in the build folder
    (``model/``) under :func:`_model_key`: the scenario's other policies (``t3hw paper
    --rtl`` runs two per sub-layer, a sweep any number) reuse it instead of running the
    Sequential baseline again (at the paper's 8192 tokens, a minute of the model's time)."""
    path = toolchain.build_root() / "model" / f"sequential-{_model_key(cfg)}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text())
        except ValueError:              # a file cut short by a killed run: run it again
            pass
    seq = model_sequential(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(seq))
    tmp.replace(path)                   # whole or absent, whatever runs at the same time
    return seq


def _finish(cfg, r, json_path, model):
    """Add the model's figures to a result and write it to ``json_path`` (if given)."""
    done = [c for c in r.get("gemm_cycles") or () if c is not None]
    if done:                     # the GEMM's end: the last tile retired on the slowest GPU
        r["cycles"]["gemm"] = max(done)
    if model:
        m = model_cycles(cfg, sequential=_sequential(cfg))
        r["cycles"]["model"] = m["t3"]
        r["cycles"]["model_gemm"] = m["phases"]["t3"]["gemm"]
        r["cycles"]["sequential"] = m["sequential"]
        r["model"] = m
        r["cycles"]["gap"] = r["cycles"]["rtl"] / m["t3"] - 1.0
    triggers = r["triggers"]
    r["triggers_per_gpu"] = triggers
    r["triggers"] = sum(triggers)
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(r, indent=1) + "\n")
    return r


def result_line(r):
    """One line summing up a result."""
    c = r["cycles"]
    model = f", model {c['model']:,.0f} ({100 * c['gap']:+.1f}%)" if "model" in c else ""
    gemm = ""
    if "gemm" in c:
        gemm = f"; GEMM done at {c['gemm']:,}" + (f" (model {c['model_gemm']:,.0f})"
                                                   if "model_gemm" in c else "")
    mem = r["config"].get("memory", "fixed")
    split = (", GPU 0 of a symmetric ring" if r.get("symmetric") else
             f" in {len(r['parts'])} processes" if r.get("parts") else "") \
        + (", profile-guided build" if r.get("pgo") else "")
    return (f"{r['config']['gpus']} GPUs {r['config']['collective']} {r['config']['policy']} "
            f"({mem} DRAM, {r.get('mode', 'exact')} mode{split}): "
            f"{c['rtl']:,} RTL cycles{model}{gemm}; numerics "
            f"{'exact' if r['numerics_ok'] else 'WRONG'} (max err {r['max_abs_err']:g}); "
            f"{r['triggers']} triggers; {r['rtl_cycles_per_s']:,.0f} cycles/s")


def add_arguments(p):
    """The options of ``t3hw cosim``, with ``CosimConfig``'s defaults."""
    d = CosimConfig()
    p.add_argument("--gpus", type=int, default=d.gpus, metavar="N",
                   help=f"ring size, 2 .. {CosimConfig.max_gpus(d.params)} (tested at 2, 4, 8)")
    p.add_argument("--model", default=d.model, choices=list(MODELS), help="the workload's model")
    p.add_argument("--tp", type=int, default=d.tp, metavar="P",
                   help="tensor-parallel degree that slices the GEMM (divides the sub-layer's K)")
    p.add_argument("--sublayer", default=d.sublayer, choices=list(SUBLAYERS),
                   help="the Transformer sub-layer whose GEMM runs")
    p.add_argument("--tokens", type=int, default=d.tokens, metavar="T",
                   help=f"a multiple of 32 * N, at most what the tracker and descriptor "
                        f"table hold ({d.max_tokens()} at N = {d.gpus}, {d.model} {d.sublayer}; "
                        f"an error says the limit of a scenario)")
    p.add_argument("--hidden", type=int, default=None, metavar="H",
                   help="narrow the layer to H columns, a multiple of 64 (default: the "
                        "model's hidden size)")
    p.add_argument("--policy", default=d.policy, choices=POLICIES, help="arbitration policy")
    p.add_argument("--collective", default=d.collective, choices=COLLECTIVES,
                   help="fused reduce-scatter, or fused all-reduce (all-gather triggered too)")
    p.add_argument("--seed", type=int, default=d.seed, metavar="N", help="randomness, >= 0")
    p.add_argument("--link-latency", type=int, default=d.link_latency, metavar="CYCLES",
                   help=f"cycles of flight on each link, >= 1 (default {d.link_latency}: the "
                        f"paper's 500 ns)")
    p.add_argument("--net-jitter", type=int, default=0, metavar="CYCLES",
                   help="mean random extra flight time per packet (exponential), >= 0")
    p.add_argument("--reorder", action="store_true", help="let packets overtake each other")
    p.add_argument("--dram-stall", type=float, default=0.0, metavar="P",
                   help="probability per cycle, in [0, 1), that the DRAM starts a refusal "
                        "burst")
    p.add_argument("--memory", default=d.memory, choices=MEMORIES,
                   help="DRAM timing: 'fixed' (in order, one request per cycle, fixed "
                        "latency) or 'hbm' (the HBM2 bank/row model, docs/cosim.md)")
    p.add_argument("--exact", action="store_true",
                   help="step every cycle in Python (the golden mode; it runs every setting). "
                        "Default: the fast mode (models in simulation-only HDL) where the "
                        "scenario allows it (no jitter, stalls or reordering, no "
                        "waves), else exact")
    p.add_argument("--parts", type=int, default=1, metavar="P",
                   help="split the fast mode's ring over P processes, one per core (a divisor "
                        "of --gpus; default 1)")
    p.add_argument("--pgo", action="store_true",
                   help="run the fast mode on a profile-guided build of its top: the same "
                        "results 1.2x to 1.4x as fast, after a build about twice as long "
                        "(docs/cosim.md)")
    p.add_argument("--symmetric", action="store_true",
                   help="run GPU 0 of the ring alone, its neighbour supplied by the ring's "
                        "symmetry: the whole ring's cycles and numerics, about N times as "
                        "fast (fixed-latency DRAM only; docs/cosim.md)")
    p.add_argument("--json", required=True, metavar="FILE", help="the results file")
    p.add_argument("--waves", metavar="DIR", help="also dump waves and a .gtkw there")
    p.add_argument("--wave-format", choices=WAVE_FORMATS, default=WAVE_FORMATS[0],
                   help="dump format of --waves (FST is about 50x smaller than VCD)")


def config_error(exc, fields):
    """The :class:`CliError` of a :class:`CosimConfig` ``ValueError``: its message, led by
    the option of the field it names (one of ``fields``), if any."""
    msg = str(exc)
    name = next((k for k in fields if msg.startswith(f"{k} ")), None)
    return CliError(f"--{name.replace('_', '-')}: {msg}" if name else msg)


def cmd(args):
    """``t3hw cosim``: run one scenario, print its result line; a failed check is an error."""
    opts = dict(gpus=args.gpus, model=args.model, tp=args.tp, sublayer=args.sublayer,
                tokens=args.tokens, hidden=args.hidden, policy=args.policy,
                collective=args.collective, seed=args.seed, link_latency=args.link_latency,
                net_jitter=args.net_jitter,
                reorder=args.reorder, dram_stall=args.dram_stall, memory=args.memory)
    try:                                    # every limit is checked here, before the build
        cfg = CosimConfig(**opts)
    except ValueError as exc:
        raise config_error(exc, opts) from None
    mode = "exact" if args.exact else "auto"
    if args.pgo and choose_mode(cfg, mode, args.waves is not None) != "fast":
        raise CliError("--pgo: it builds the fast mode's top, and this scenario runs in the "
                       "exact mode (--exact, --waves, jitter, stalls or reordering)")
    if args.symmetric:
        try:
            check_symmetric(cfg)
        except ValueError as exc:
            raise CliError(f"--symmetric: {exc}") from None
        if args.parts != 1:
            raise CliError(f"--symmetric runs one process: leave out --parts {args.parts}")
        if choose_mode(cfg, mode, args.waves is not None) != "fast":
            raise CliError("--symmetric runs one GPU of the fast mode's ring, and this "
                           "scenario runs in the exact mode (--exact, --waves, jitter, stalls "
                           "or reordering)")
    if args.parts != 1:
        from t3hw.verif.simhdl.top import check_parts
        try:
            check_parts(cfg, args.parts)
            if choose_mode(cfg, mode, args.waves is not None) != "fast":
                raise ValueError("parts other than 1 split the fast mode, and this scenario "
                                 "runs in the exact mode (--exact, --waves, jitter, stalls or "
                                 "reordering)")
        except ValueError as exc:
            raise CliError(f"--parts: {exc}") from None
    r = run(cfg, json_path=args.json, waves_dir=args.waves, progress=sys.stderr.isatty(),
            wave_format=args.wave_format, mode=mode, parts=args.parts, pgo=args.pgo,
            symmetric=args.symmetric)
    print(result_line(r))
    print(f"written: {args.json}" + (f", {r['waves']['dump']}, {r['waves']['gtkw']}"
                                     if args.waves else ""))
    if r["failure"] or not r["numerics_ok"]:
        raise CliError(f"the co-simulation failed its checks: "
                       f"{(r['failure'] or 'numerics differ from numpy').splitlines()[0][:300]}")
