# SPDX-License-Identifier: Apache-2.0
"""The ``t3hw`` command line.

::

    t3hw generate [--tracker-entries N ...] [--block B ...] --out DIR [--docs FILE]
    t3hw check-rtl [--rtl DIR] [--docs FILE]
    t3hw lint [--rtl DIR]
    t3hw demo [--out DIR] [--seed N]
    t3hw bench [--json FILE] [--events N]
    t3hw paper --json FILE [--plot DIR] [--sweep] [--memory fluid|hbm]
    t3hw paper --rtl --json FILE [--plot DIR] [--tokens T] [--gpus N] [--policies X,..]
               [--memory fluid|hbm] [--scheduler tcp://HOST:8786 | --workers N]
    t3hw arbiter-plot --out PNG [--json FILE] [--cycles N]
    t3hw cosim [--gpus N] [--model M] [--tp P] [--sublayer S] [--tokens T] [--hidden H]
               [--policy X]
               [--collective rs|allreduce] [--memory fixed|hbm] [--link-latency C]
               --json FILE [--waves DIR]
    t3hw sweep [--gpus N,..] [--policy X,..] [--memory M,..] [FIELD V,..] --json FILE
               [--scheduler tcp://HOST:8786 | --workers N]
    t3hw waves DIR
    t3hw formal [NAME ...] [--task bmc|prove|cover]
    t3hw synth --json FILE [--blocks B,..] [--params SET,..] [--seed N,..] [--docs FILE]
    t3hw synth-scale [--json FILE] [--axes A,..] [--blocks B,..] [--points AXIS=X,..]
                     [--seed N,..] [--jobs N] [--docs FILE] [--plot PNG] [--no-run]
    t3hw synth-levels [--blocks B,..] [--params SET,..] [--limit N] [--json FILE]
    t3hw bitstream --out DIR [--seed N] [--baud N]

Global option: ``--build DIR`` puts every build (Verilator, synthesis, formal) under ``DIR``
instead of ``./build`` (it sets ``T3HW_BUILD``). Errors print one line saying what to fix,
and exit with status 2 (1 for a failed check); the output paths of a command are checked
before it does any work (:mod:`t3hw.tools.paths`). Anything else is a bug: one line
``t3hw CMD: internal error: ...`` and status 3 (``T3HW_DEBUG=1`` shows the traceback).
``t3hw --version`` prints the installed package's version.

This module parses arguments and nothing else: each subcommand is a :class:`Command`, a pair
of functions in its tool module, ``add_arguments(parser)`` and ``cmd(args)``.
"""

import argparse
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Callable, NamedTuple

from t3hw.tools import (arbiter_plot, bench, board, check, cosim, demo, formal, generate, paper,
                        paths, sweep, synth, waves)
from t3hw.tools.errors import CliError


__all__ = ["Command", "COMMANDS", "main"]


class Command(NamedTuple):
    """One subcommand: its name, one-line help, the two functions of its tool module, and
    its output options (``{dest: "file" or "dir"}``), checked before ``cmd`` runs."""
    name: str
    help: str
    add_arguments: Callable
    cmd: Callable
    outputs: dict = {}


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every option's default, unless its help text already says it."""

    def _get_help_string(self, action):
        if "default" in (action.help or "").lower() or action.default in (None, False):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


#: Every subcommand, in the order ``t3hw --help`` lists them.
COMMANDS = (
    Command("generate", "write Verilog for a parameter set",
            generate.add_arguments, generate.cmd,
            {"out": "dir", "docs": "file"}),
    Command("check-rtl", "regenerate rtl/ and fail on any byte of difference",
            check.add_check_arguments, check.check_cmd),
    Command("lint", "verilator --lint-only -Wall on rtl/, with the waivers",
            check.add_lint_arguments, check.lint_cmd),
    Command("demo", "co-simulate a 4-GPU fused GEMM + reduce-scatter on the RTL; print "
                    "speedup, traffic, numerics, waves", demo.add_arguments, demo.cmd,
            {"out": "dir"}),
    Command("bench", "measure co-simulation throughput and build time",
            bench.add_arguments, bench.cmd,
            {"json": "file"}),
    Command("paper", "run the performance model over the paper's table",
            paper.add_arguments, paper.cmd,
            {"json": "file", "plot": "dir"}),
    Command("arbiter-plot", "run the arbiter RTL under each policy on the same traffic, "
                            "plot it", arbiter_plot.add_arguments, arbiter_plot.cmd,
            {"out": "file", "json": "file"}),
    Command("cosim", "co-simulate N engines of generated Verilog in the GPU, DRAM and "
                     "network models", cosim.add_arguments, cosim.cmd,
            {"json": "file", "waves": "dir"}),
    Command("sweep", "co-simulate a grid of configurations on Dask workers (a local cluster, "
                     "or a scheduler's), results in one JSON", sweep.add_arguments, sweep.cmd,
            {"json": "file"}),
    Command("synth", "synthesize the blocks (Yosys generic, ECP5, iCE40) and place and route "
                     "them on an ECP5-85F for Fmax", synth.add_arguments, synth.cmd,
            {"json": "file", "work": "dir"}),
    Command("synth-scale", "synthesize and place and route the blocks and the engine as "
                           "regions, tracker entries, descriptors and address width grow; "
                           "fit the growth law of each figure",
            synth.add_scale_arguments, synth.scale_cmd,
            {"json": "file", "plot": "file", "work": "dir"}),
    Command("synth-levels", "synthesize blocks for the ECP5 without place and route and "
                            "count the logic levels between their registers",
            synth.add_levels_arguments, synth.levels_cmd,
            {"json": "file", "work": "dir"}),
    Command("bitstream", "build the engine for the ULX3S-85F with its registers on the UART",
            board.add_arguments, board.cmd,
            {"out": "dir"}),
    Command("formal", "run the formal proofs (docs/formal.md); `t3hw formal` lists them",
            formal.add_arguments, formal.cmd,
            {"workdir": "dir"}),
    Command("waves", "print the trigger timeline of a co-simulation's waves and render it "
                     "as a PNG", waves.add_arguments, waves.cmd),
)


def _parser():
    parser = _Parser(prog="t3hw", description="T3 track-and-trigger hardware kit")
    parser.add_argument("--version", action="version", version=f"t3hw {_version()}")
    parser.add_argument("--build", metavar="DIR",
                        help="put builds under DIR (default: $T3HW_BUILD, else ./build)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(p)
        p.set_defaults(func=command.cmd, outputs=command.outputs)
    return parser


def _version():
    try:
        return metadata.version("t3hw")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _line(exc):
    """The first non-empty line of an exception's message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def main(argv=None):
    """Parse ``argv`` (default ``sys.argv[1:]``), check the output options, run the
    subcommand, return its status."""
    args = _parser().parse_args(argv)
    where = f"t3hw {args.command}"
    try:
        if args.build:
            paths.output_dir(args.build, "--build")
            os.environ["T3HW_BUILD"] = str(Path(args.build).resolve())
        paths.check_outputs(args, args.outputs)
        return args.func(args) or 0
    except (CliError, ValueError) as exc:
        print(f"{where}: error: {_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:              # a path the command reads or writes
        reason = exc.strerror or _line(exc)
        print(f"{where}: error: " + (f"{exc.filename}: {reason}" if exc.filename else reason),
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{where}: interrupted", file=sys.stderr)
        return 130
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as exc:       # a bug (pyo3 panics are BaseExceptions too)
        if os.environ.get("T3HW_DEBUG"):
            raise
        print(f"{where}: internal error: {type(exc).__name__}: {_line(exc)} (please report; "
              f"rerun with T3HW_DEBUG=1 for the traceback)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
