# SPDX-License-Identifier: Apache-2.0
"""``t3hw arbiter-plot``: the arbiter's RTL under each policy on the same traffic
(:mod:`t3hw.verif.arbiter_scenario`), printed as a table and plotted."""

import sys
from pathlib import Path

from t3hw.verif import arbiter_scenario as scenario
from .errors import CliError


__all__ = ["add_arguments", "cmd"]


def add_arguments(p):
    """The options of ``t3hw arbiter-plot``."""
    p.add_argument("--out", required=True, metavar="PNG", help="the plot to write")
    p.add_argument("--json", metavar="FILE", help="also write the numbers and grants there")
    p.add_argument("--cycles", type=int, default=4000, metavar="N",
                   help="cycles per policy; the traffic scales with it (default 4000)")


def cmd(args):
    """``t3hw arbiter-plot``: run every policy, print the table, write the plot (and JSON)."""
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
