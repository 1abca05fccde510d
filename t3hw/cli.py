# SPDX-License-Identifier: Apache-2.0
"""The ``t3hw`` command line.

::

    t3hw generate [--tracker-entries N ...] [--block B ...] --out DIR [--docs FILE]
    t3hw check-rtl [--rtl DIR] [--docs FILE]
    t3hw lint [--rtl DIR]
    t3hw demo [--out DIR] [--seed N]
    t3hw bench [--json FILE] [--events N]
    t3hw paper --json FILE [--plot DIR] [--sweep]
    t3hw arbiter-plot --out PNG [--json FILE] [--cycles N]
    t3hw cosim [--gpus N] [--model M] [--tp P] [--sublayer S] [--tokens T] [--hidden H]
               [--policy X]
               [--collective rs|allreduce] --json FILE [--waves DIR]
    t3hw waves DIR
    t3hw formal [NAME ...] [--task bmc|prove|cover]
    t3hw synth --json FILE [--blocks B,..] [--params SET,..] [--seed N,..] [--docs FILE]
    t3hw bitstream --out DIR [--seed N] [--baud N]

Global option: ``--build DIR`` puts every build (Verilator, synthesis, formal) under ``DIR``
instead of ``./build`` (it sets ``T3HW_BUILD``). Errors print one line saying what to fix,
and exit with status 2 (1 for a failed check).

This module parses arguments and nothing else: each subcommand is a :class:`Command`, a pair
of functions in its tool module, ``add_arguments(parser)`` and ``cmd(args)``.
"""

import argparse
import os
import sys
from pathlib import Path
from typing import Callable, NamedTuple

from t3hw.tools import board, check, formal, generate, synth, waves
from t3hw.tools.errors import CliError


__all__ = ["Command", "COMMANDS", "main"]


class Command(NamedTuple):
    """One subcommand: its name, one-line help, and the two functions of its tool module."""
    name: str
    help: str
    add_arguments: Callable
    cmd: Callable


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _cmd_demo(args):
    from t3hw.tools.demo import run_demo
    return run_demo(out=Path(args.out), seed=args.seed, progress=sys.stderr.isatty())


def _cmd_bench(args):
    from t3hw.tools.bench import run_bench
    run_bench(json_path=Path(args.json), events=args.events)


def _cmd_paper(args):
    from t3hw.tools.paper import cmd
    return cmd(args)


def _cmd_arbiter_plot(args):
    from t3hw.verif import arbiter_scenario as scenario
    out = Path(args.out)
    if out.suffix.lower() != ".png":
        raise CliError(f"--out must name a .png file, not {args.out!r}")
    if not scenario.MIN_CYCLES <= args.cycles <= scenario.MAX_CYCLES:
        raise CliError(f"--cycles must be in [{scenario.MIN_CYCLES}, {scenario.MAX_CYCLES}], "
                       f"not {args.cycles}")
    try:                                       # fail before the runs, not after
        for path in (out, Path(args.json or out)):
            path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot write {exc.filename}: {exc.strerror or exc}") from None
    traffic = scenario.Traffic.for_cycles(args.cycles)
    try:
        runs = scenario.run_scenario(args.cycles, traffic)
    except AssertionError as exc:
        print(f"t3hw arbiter-plot: the RTL disagrees with the model: "
              f"{str(exc).splitlines()[0] if str(exc) else exc!r}", file=sys.stderr)
        return 1
    print(f"{args.cycles} cycles per policy (`-`: not finished within them, or no threshold)")
    print(scenario.table(runs))
    written = [str(out)]
    try:
        scenario.plot(runs, out, traffic, args.cycles)
        if args.json:
            scenario.write_json(runs, args.json, traffic, args.cycles)
            written.append(args.json)
    except OSError as exc:
        raise CliError(f"cannot write {exc.filename or out}: {exc.strerror or exc}") from None
    print("written: " + ", ".join(written))


def _cmd_cosim(args):
    from sim_models.cosim import CosimConfig
    from t3hw.tools.cosim import result_line, run
    cfg = CosimConfig(gpus=args.gpus, model=args.model, tp=args.tp, sublayer=args.sublayer,
                      tokens=args.tokens, hidden=args.hidden, policy=args.policy,
                      collective=args.collective,
                      seed=args.seed, net_jitter=args.net_jitter, reorder=args.reorder,
                      dram_stall=args.dram_stall)
    r = run(cfg, json_path=args.json, waves_dir=args.waves, progress=sys.stderr.isatty())
    print(result_line(r))
    print(f"written: {args.json}" + (f", {r['waves']['dump']}, {r['waves']['gtkw']}"
                                     if args.waves else ""))
    if r["failure"] or not r["numerics_ok"]:
        raise CliError(f"the co-simulation failed its checks: "
                       f"{(r['failure'] or 'numerics differ from numpy').splitlines()[0][:300]}")


def _add_demo(p):
    p.add_argument("--out", default="out/demo", metavar="DIR", help="where waves go")
    p.add_argument("--seed", type=int, default=1)


def _add_bench(p):
    p.add_argument("--json", default="bench/results.json", metavar="FILE")
    p.add_argument("--events", type=int, default=100000, metavar="N")


def _add_paper(p):
    p.add_argument("--json", required=True, metavar="FILE")
    p.add_argument("--plot", metavar="DIR", help="also write PNG bar charts there")
    p.add_argument("--sweep", action="store_true", help="also run the sweep over T")


def _add_arbiter_plot(p):
    p.add_argument("--out", required=True, metavar="PNG", help="the plot to write")
    p.add_argument("--json", metavar="FILE", help="also write the numbers and grants there")
    p.add_argument("--cycles", type=int, default=4000, metavar="N",
                   help="cycles per policy; the traffic scales with it (default 4000)")


def _add_cosim(p):
    from sim_models.cosim import COLLECTIVES, POLICIES, CosimConfig
    from sim_models.workloads import MODELS, SUBLAYERS
    d = CosimConfig()
    p.add_argument("--gpus", type=int, default=d.gpus, metavar="N", help="ring size (2 .. 8)")
    p.add_argument("--model", default=d.model, choices=list(MODELS))
    p.add_argument("--tp", type=int, default=d.tp, metavar="P",
                   help="tensor-parallel degree that slices the GEMM")
    p.add_argument("--sublayer", default=d.sublayer, choices=list(SUBLAYERS))
    p.add_argument("--tokens", type=int, default=d.tokens, metavar="T",
                   help="a multiple of 32 * N")
    p.add_argument("--hidden", type=int, default=None, metavar="H",
                   help="narrow the layer to H columns (default: the model's hidden size)")
    p.add_argument("--policy", default=d.policy, choices=POLICIES)
    p.add_argument("--collective", default=d.collective, choices=COLLECTIVES,
                   help="fused reduce-scatter, or fused all-reduce (all-gather triggered too)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--net-jitter", type=int, default=0, metavar="CYCLES",
                   help="mean random extra flight time per packet (exponential)")
    p.add_argument("--reorder", action="store_true", help="let packets overtake each other")
    p.add_argument("--dram-stall", type=float, default=0.0, metavar="P",
                   help="probability per cycle that the DRAM starts a refusal burst")
    p.add_argument("--json", required=True, metavar="FILE")
    p.add_argument("--waves", metavar="DIR", help="also dump waves and a .gtkw there")


#: Every subcommand, in the order ``t3hw --help`` lists them.
COMMANDS = (
    Command("generate", "write Verilog for a parameter set",
            generate.add_arguments, generate.cmd),
    Command("check-rtl", "regenerate rtl/ and fail on any byte of difference",
            check.add_check_arguments, check.check_cmd),
    Command("lint", "verilator --lint-only -Wall on rtl/, with the waivers",
            check.add_lint_arguments, check.lint_cmd),
    Command("demo", "co-simulate a 4-GPU fused GEMM + reduce-scatter on the RTL; print "
                    "speedup, traffic, numerics, waves", _add_demo, _cmd_demo),
    Command("bench", "measure co-simulation throughput and build time", _add_bench, _cmd_bench),
    Command("paper", "run the performance model over the paper's table",
            _add_paper, _cmd_paper),
    Command("arbiter-plot", "run the arbiter RTL under each policy on the same traffic, "
                            "plot it", _add_arbiter_plot, _cmd_arbiter_plot),
    Command("cosim", "co-simulate N engines of generated Verilog in the GPU, DRAM and "
                     "network models", _add_cosim, _cmd_cosim),
    Command("synth", "synthesize the blocks (Yosys generic, ECP5, iCE40) and place and route "
                     "them on an ECP5-85F for Fmax", synth.add_arguments, synth.cmd),
    Command("bitstream", "build the engine for the ULX3S-85F with its registers on the UART",
            board.add_arguments, board.cmd),
    Command("formal", "run the formal proofs (docs/formal.md); `t3hw formal` lists them",
            formal.add_arguments, formal.cmd),
    Command("waves", "print the trigger timeline of a co-simulation's waves and render it "
                     "as a PNG", waves.add_arguments, waves.cmd),
)


def _parser():
    parser = _Parser(prog="t3hw", description="T3 track-and-trigger hardware kit")
    parser.add_argument("--build", metavar="DIR",
                        help="put builds under DIR (default: $T3HW_BUILD, else ./build)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(p)
        p.set_defaults(func=command.cmd)
    return parser


def main(argv=None):
    """Parse ``argv`` (default ``sys.argv[1:]``), run the subcommand, return its status."""
    args = _parser().parse_args(argv)
    if args.build:
        os.environ["T3HW_BUILD"] = str(Path(args.build).resolve())
    try:
        return args.func(args) or 0
    except (CliError, ValueError, FileNotFoundError) as exc:
        print(f"t3hw {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"t3hw {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
