# SPDX-License-Identifier: Apache-2.0
"""``t3hw check-rtl`` and ``t3hw lint``: the two checks ``make test`` runs on ``rtl/`` before
any simulation.

``check-rtl`` regenerates ``rtl/`` from its manifest's parameters
(:func:`t3hw.tools.generate.check`) and fails on any byte of difference, so the committed
Verilog is the generator's and nobody else's. ``lint`` runs ``verilator --lint-only -Wall``
on every file with the kit's waivers (:func:`t3hw.tools.toolchain.lint`).
"""

import sys
from pathlib import Path

from .errors import CliError
from .generate import check
from .toolchain import WAIVERS, lint


__all__ = ["add_check_arguments", "check_cmd", "add_lint_arguments", "lint_cmd"]


def add_check_arguments(parser):
    """The options of ``t3hw check-rtl``."""
    parser.add_argument("--rtl", default="rtl", metavar="DIR")
    parser.add_argument("--docs", metavar="FILE", help="also check the register map document")


def check_cmd(args):
    """``t3hw check-rtl``: one line per differing file; status 1 if any."""
    problems = check(args.rtl, docs=args.docs)
    for line in problems:
        print(line)
    if problems:
        print(f"{args.rtl} does not match the generator: run `make verilog` and commit rtl/",
              file=sys.stderr)
        return 1
    print(f"{args.rtl}: every file matches the generator byte for byte")
    return 0


def add_lint_arguments(parser):
    """The options of ``t3hw lint``."""
    parser.add_argument("--rtl", default="rtl", metavar="DIR")


def lint_cmd(args):
    """``t3hw lint``: Verilator's output and status 1 on any warning."""
    sources = sorted(Path(args.rtl).glob("*.v"))
    if not sources:
        raise CliError(f"no Verilog files in {args.rtl}; run `make verilog` first")
    rc, out = lint(sources)
    if rc:
        print(out)
        print(f"lint failed on {args.rtl}", file=sys.stderr)
        return 1
    print(f"lint clean: {len(sources)} file(s), waivers in {WAIVERS.name}")
    return 0
