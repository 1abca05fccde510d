# SPDX-License-Identifier: Apache-2.0
"""``t3hw synth`` on the command line: its options (:func:`add_arguments`) and the command
(:func:`cmd`), which runs :func:`t3hw.tools.synth.flow.run` and prints the table; likewise
``t3hw synth-scale`` (:func:`add_scale_arguments`, :func:`scale_cmd`) and ``t3hw
synth-levels`` (:func:`add_levels_arguments`, :func:`levels_cmd`: the ECP5 synthesis alone
and its logic levels, :func:`t3hw.tools.synth.flow.logic_levels`)."""

import json
from pathlib import Path

from ..errors import CliError, ToolError
from .config import (BLOCKS, DEFAULT_FREQ_MHZ, DEFAULT_JOBS, DEFAULT_PNR_TIMEOUT_S,
                     DEFAULT_SEEDS, MAX_JOBS, PARAM_SETS)
from .docs import markdown_table
from .flow import logic_levels, run
from .levels import LIMIT


def _list(text):
    return [item.strip() for item in text.split(",") if item.strip()]


def _items(values, default=None):
    """The items of a repeatable, comma-separated option (``values`` as argparse keeps
    them), or ``default`` when it was not given."""
    return [x for item in values for x in _list(item)] if values else default


def _add_selection(parser, blocks, sets):
    """``--blocks`` and ``--params``, with their defaults described as ``blocks`` and
    ``sets`` (``t3hw synth``, ``t3hw synth-levels``)."""
    parser.add_argument("--blocks", action="append", metavar="B[,B...]",
                        help=f"blocks, repeatable or comma-separated (default: {blocks}; any "
                             f"of {', '.join(BLOCKS)})")
    parser.add_argument("--params", action="append", metavar="SET[,SET...]",
                        help=f"parameter sets, repeatable or comma-separated (default: "
                             f"{sets}; any of {', '.join(PARAM_SETS)})")


def add_arguments(parser):
    """Add the options of ``t3hw synth`` to an :class:`argparse.ArgumentParser`."""
    parser.add_argument("--json", required=True, metavar="FILE", help="the results file")
    _add_selection(parser, "all", "all")
    parser.add_argument("--seed", action="append", metavar="N[,N...]",
                        help="nextpnr seeds, repeatable or comma-separated; Fmax is their "
                             f"median (default {','.join(map(str, DEFAULT_SEEDS))})")
    parser.add_argument("--freq", type=float, default=DEFAULT_FREQ_MHZ, metavar="MHZ",
                        help=f"place-and-route target in MHz (default {DEFAULT_FREQ_MHZ:g})")
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, metavar="N",
                        help=f"tool processes at a time, in [1, {MAX_JOBS}] "
                             f"(default {DEFAULT_JOBS})")
    parser.add_argument("--pnr-timeout", type=float, default=DEFAULT_PNR_TIMEOUT_S,
                        metavar="S", help="seconds a place-and-route run may take before its "
                        f"seed is recorded as not finished (default {DEFAULT_PNR_TIMEOUT_S})")
    parser.add_argument("--docs", metavar="FILE",
                        help="also replace the generated table in this Markdown file")
    parser.add_argument("--work", metavar="DIR",
                        help="folder for netlists, reports and logs (default build/synth)")


def cmd(args):
    """Run ``t3hw synth`` with parsed ``args`` (see :func:`add_arguments`)."""
    blocks, sets = _items(args.blocks), _items(args.params)
    seeds = DEFAULT_SEEDS
    if args.seed:
        try:
            seeds = [int(s) for item in args.seed for s in _list(item)]
        except ValueError:
            raise CliError(f"--seed takes integers, not {args.seed!r}") from None
    if args.docs and not Path(args.docs).is_file():
        raise CliError(f"--docs: {args.docs} does not exist")
    command = " ".join(["t3hw synth --json", args.json]
                       + (["--blocks", ",".join(blocks)] if blocks else [])
                       + (["--params", ",".join(sets)] if sets else [])
                       + ["--seed", ",".join(map(str, seeds)), "--freq", f"{args.freq:g}"]
                       + (["--docs", args.docs] if args.docs else []))
    try:
        results = run(args.json, blocks=blocks, param_sets=sets, seeds=seeds, freq=args.freq,
                      jobs=args.jobs, workdir=args.work, docs=args.docs,
                      pnr_timeout=args.pnr_timeout,
                      log=lambda line: print(line, flush=True), command=command)
    except ToolError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write {exc.filename}: {exc.strerror or exc}") from None
    print(markdown_table(results))
    print(f"tracker table storage at the default parameters: "
          f"{results['tracker_storage_bits']:,} bits")
    print(f"written: {args.json}" + (f", {args.docs}" if args.docs else "")
          + f" ({results['last_run']['wall_s']:.0f} s)")


# --- t3hw synth-scale ------------------------------------------------------------------------

def add_scale_arguments(parser):
    """Add the options of ``t3hw synth-scale`` to an :class:`argparse.ArgumentParser`."""
    from .scaling import AXES, DEFAULT_JSON
    parser.add_argument("--json", default=DEFAULT_JSON, metavar="FILE",
                        help=f"the results file; records of other points are kept "
                             f"(default {DEFAULT_JSON})")
    parser.add_argument("--axes", action="append", metavar="A[,A...]",
                        help=f"axes, repeatable or comma-separated (default: all of "
                             f"{', '.join(AXES)})")
    parser.add_argument("--blocks", action="append", metavar="B[,B...]",
                        help="blocks, repeatable or comma-separated (default: every block of "
                             "the axes: " + "; ".join(f"{a}: {','.join(x.blocks)}"
                                                      for a, x in AXES.items()) + ")")
    parser.add_argument("--points", action="append", metavar="AXIS=X[,X...]",
                        help="the points of an axis instead of its defaults, repeatable: "
                             "region, entry or descriptor counts (powers of two) or address "
                             "bits (default: " + "; ".join(
                                 f"{a}={','.join(map(str, x.points))}"
                                 for a, x in AXES.items()) + ")")
    parser.add_argument("--seed", action="append", metavar="N[,N...]",
                        help="nextpnr seeds, repeatable or comma-separated; Fmax is their "
                             f"median (default {','.join(map(str, DEFAULT_SEEDS))})")
    parser.add_argument("--freq", type=float, default=DEFAULT_FREQ_MHZ, metavar="MHZ",
                        help=f"place-and-route target in MHz (default {DEFAULT_FREQ_MHZ:g})")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help=f"points measured at a time, each one tool process, in "
                             f"[1, {MAX_JOBS}] (default 1)")
    parser.add_argument("--pnr-timeout", type=float, default=DEFAULT_PNR_TIMEOUT_S,
                        metavar="S", help="seconds a place-and-route run may take before its "
                        f"seed is recorded as not finished (default {DEFAULT_PNR_TIMEOUT_S})")
    parser.add_argument("--force", action="store_true",
                        help="measure every point again, even one whose stored record has "
                             "the same Verilog, seeds, target and tools")
    parser.add_argument("--no-run", action="store_true",
                        help="measure nothing: only write --docs and --plot from --json")
    parser.add_argument("--docs", metavar="FILE",
                        help="also replace the generated section between `<!-- scaling table "
                             "start -->` and `<!-- scaling table end -->` of this Markdown file")
    parser.add_argument("--plot", metavar="PNG", help="also draw the plot into this file")
    parser.add_argument("--work", metavar="DIR",
                        help="folder for netlists, reports and logs (default build/synth-scale)")


def _points(items):
    """``{axis: [x, ...]}`` of ``--points AXIS=X,X`` options."""
    out = {}
    for item in items or []:
        axis, sep, values = item.partition("=")
        if not sep or not axis.strip():
            raise CliError(f"--points takes AXIS=X[,X...], not {item!r}")
        try:
            xs = [int(v) for v in _list(values)]
        except ValueError:
            raise CliError(f"--points {item}: the points must be integers") from None
        out.setdefault(axis.strip(), []).extend(xs)
    return out


def scale_cmd(args):
    """Run ``t3hw synth-scale`` with parsed ``args`` (see :func:`add_scale_arguments`)."""
    from .scaling import load, plan, refit, run, write_results
    from .scaling_report import check_docs, plot_scaling, scaling_tables, update_docs
    axes, blocks = _items(args.axes), _items(args.blocks)
    points = _points(args.points)
    seeds = list(DEFAULT_SEEDS)
    if args.seed:
        try:
            seeds = [int(s) for item in args.seed for s in _list(item)]
        except ValueError:
            raise CliError(f"--seed takes integers, not {args.seed!r}") from None
    try:
        plan(axes, blocks, points)
        if args.docs:
            check_docs(args.docs)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    refitted = False
    if args.no_run:
        results = load(args.json)
        refitted = refit(results)
        if refitted:                    # fits of an older growth law: keep the file in step
            write_results(Path(args.json), results)
    else:
        command = " ".join(
            ["t3hw synth-scale --json", args.json]
            + (["--axes", ",".join(axes)] if axes else [])
            + (["--blocks", ",".join(blocks)] if blocks else [])
            + [f"--points {a}={','.join(map(str, xs))}" for a, xs in points.items()]
            + ["--seed", ",".join(map(str, seeds)), "--freq", f"{args.freq:g}"]
            + (["--pnr-timeout", f"{args.pnr_timeout:g}"]
               if args.pnr_timeout != DEFAULT_PNR_TIMEOUT_S else []))
        try:
            results = run(args.json, axes=axes, blocks=blocks, points=points, seeds=seeds,
                          freq=args.freq, jobs=args.jobs, workdir=args.work,
                          pnr_timeout=args.pnr_timeout, force=args.force,
                          log=lambda line: print(line, flush=True), command=command)
        except ToolError as exc:
            raise CliError(str(exc)) from None
        except ValueError as exc:
            raise CliError(str(exc)) from None
    if args.plot:
        plot_scaling(results, args.plot)
    if args.docs:
        update_docs(args.docs, results, plot=args.plot)
    print(scaling_tables(results))
    written = ([] if args.no_run and not refitted else [args.json]) \
        + [f for f in (args.docs, args.plot) if f]
    if written:
        print("written: " + ", ".join(written)
              + ("" if args.no_run else f" ({results['last_run']['wall_s']:.0f} s)"))


def add_levels_arguments(parser):
    """Add the options of ``t3hw synth-levels`` to an :class:`argparse.ArgumentParser`."""
    _add_selection(parser, "engine", "default")
    parser.add_argument("--limit", type=int, default=LIMIT, metavar="N",
                        help=f"count and list the endpoints deeper than N levels (default "
                             f"{LIMIT}, what 150 MHz holds on the ECP5-85F, speed 6)")
    parser.add_argument("--top", type=int, default=20, metavar="N",
                        help="list the N largest groups of them (default 20)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("--work", metavar="DIR",
                        help="folder for the netlists and logs (default build/synth)")


def levels_cmd(args):
    """Run ``t3hw synth-levels`` with parsed ``args`` (see :func:`add_levels_arguments`)."""
    blocks, sets = _items(args.blocks, ["engine"]), _items(args.params, ["default"])
    if args.limit < 0 or args.top < 0:
        raise CliError(f"--limit and --top take a count of 0 or more, not {args.limit} and "
                       f"{args.top}")
    out = []
    for block in blocks:
        for name in sets:
            try:
                r = logic_levels(block, name, workdir=args.work, limit=args.limit,
                                 top=args.top)
            except (ToolError, ValueError) as exc:
                raise CliError(str(exc)) from None
            out.append(r)
            hist = ", ".join(f"{k}: {n:,}" for k, n in r["histogram"].items())
            print(f"{block} at {name}: {r['over']:,} of {r['endpoints']:,} endpoints deeper "
                  f"than {r['limit']} levels, the deepest {r['max']} ({r['lut4']:,} LUT4, "
                  f"Yosys {r['yosys_ecp5_s']:.0f} s)\n  endpoints by levels: {hist}")
            for b in r["blocks"]:
                print(f"  {b['block']}: {b['endpoints']} (deepest {b['levels']})")
            for g in r["groups"]:
                print(f"    {g['from']} -> {g['to']}: {g['endpoints']} at {g['levels']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": out}, indent=1) + "\n")
        print(f"written: {args.json}")
