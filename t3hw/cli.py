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

from t3hw.tools import (arbiter_plot, bench, board, check, cosim, demo, formal, generate, paper,
                        synth, waves)
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


#: Every subcommand, in the order ``t3hw --help`` lists them.
COMMANDS = (
    Command("generate", "write Verilog for a parameter set",
            generate.add_arguments, generate.cmd),
    Command("check-rtl", "regenerate rtl/ and fail on any byte of difference",
            check.add_check_arguments, check.check_cmd),
    Command("lint", "verilator --lint-only -Wall on rtl/, with the waivers",
            check.add_lint_arguments, check.lint_cmd),
    Command("demo", "co-simulate a 4-GPU fused GEMM + reduce-scatter on the RTL; print "
                    "speedup, traffic, numerics, waves", demo.add_arguments, demo.cmd),
    Command("bench", "measure co-simulation throughput and build time",
            bench.add_arguments, bench.cmd),
    Command("paper", "run the performance model over the paper's table",
            paper.add_arguments, paper.cmd),
    Command("arbiter-plot", "run the arbiter RTL under each policy on the same traffic, "
                            "plot it", arbiter_plot.add_arguments, arbiter_plot.cmd),
    Command("cosim", "co-simulate N engines of generated Verilog in the GPU, DRAM and "
                     "network models", cosim.add_arguments, cosim.cmd),
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
