# SPDX-License-Identifier: Apache-2.0
"""Profile-guided builds of the fast co-simulation's top (GCC's ``-fprofile-generate`` and
``-fprofile-use``; the Verilator guide's "Compiler Profile-Guided Optimization").

A profile-guided build compiles the Verilated C++ twice: once instrumented, which a short
training run of the same top executes to count its branches and calls, then again with
those counts, which lets GCC lay out the hot paths of the engines' evaluation functions.
It simulates the same hardware cycle for cycle (the C++ is the same; only the compiler's
choices change), 1.17 to 1.38 times as fast on the bench's 4- and 8-engine runs (``make
bench``'s ``pgo`` figures, docs/benchmarks.md). It costs one more compile and the training run,
which is why it is a choice (``t3hw cosim --pgo``, ``cosim_fast.build(cfg, pgo=True)``),
taken by the long runs (``make bench``'s split rows), not by ``make test``.

The training run (:func:`training_config`) is not the scenario asked for: it runs the same
hardware (the same build) at the fewest tokens that keep it, under round-robin arbitration
and the all-reduce, with another seed. The profile describes the hardware model's code
paths, not one workload: trained so or on the measured run itself, the 1,024-token
four-engine run took the same time (4.58 s in both, against 5.43 to 5.86 s without
profile; the native harness of :mod:`.native`, measured by hand on 2026-11-28).
"""

import json
import time
from dataclasses import replace
from pathlib import Path

__all__ = ["STAGES", "MARKER", "make_args", "training_config", "clean", "build", "record"]

#: The build's stages: instrumented (``generate``), then optimised with the counts (``use``).
STAGES = ("generate", "use")

#: The file a finished profile-guided build folder holds (the training run's figures).
MARKER = "pgo.json"

_FLAGS = {
    # one thread per simulator process: no atomic counter updates needed
    "generate": "-O2 -fprofile-generate -fprofile-update=single",
    # code the training run never reached (error paths, the other collective's branches) is
    # compiled as without a profile (-fprofile-partial-training), not for size
    "use": "-O2 -fprofile-use -fprofile-partial-training -Wno-missing-profile",
}


def make_args(stage):
    """``make`` variables for Verilator's makefile at ``stage`` (one of :data:`STAGES`;
    None: no profile, nothing added). Every object is compiled with the stage's flags
    (``OPT_FAST``, ``OPT_SLOW``, ``OPT_GLOBAL``), at the co-simulation's ``-O2``, and without
    ccache (``OBJCACHE=``): the counts are files beside the objects, and the optimised
    compile must read this build's, not a cached object's."""
    if stage is None:
        return ()
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES} or None, not {stage!r}")
    flags = _FLAGS[stage]
    args = [f"OPT_FAST={flags}", f"OPT_SLOW={flags}", f"OPT_GLOBAL={flags}", "OBJCACHE="]
    if stage == "generate":
        args.append("LDFLAGS=-fprofile-generate")        # links GCC's profiling runtime
    return tuple(args)


def training_config(cfg, parts=1):
    """The scenario a profile-guided build of ``cfg``'s hardware (in ``parts`` processes) is
    trained on: the same hardware key (so the same build), the fewest tokens that keep it,
    round-robin arbitration, the all-reduce (both collectives' phases) where the engines'
    tables hold its tracked units at that size (else the reduce-scatter: the paper's 8192
    tokens of T-NLG on 1024 entries), the seed plus one."""
    from t3hw.verif.simhdl.top import hardware_key
    key = hardware_key(cfg, parts)
    step = cfg.gpus * cfg.tile_m
    for tokens in range(step, cfg.tokens + 1, step):
        for collective in ("allreduce", "rs"):
            try:
                train = replace(cfg, tokens=tokens, policy="round_robin",
                                collective=collective, seed=cfg.seed + 1)
            except ValueError:          # the all-reduce's units do not fit the tables
                continue
            break
        if hardware_key(train, parts) == key:
            return train
    raise AssertionError(f"no token count up to {cfg.tokens} keeps the hardware key")


def clean(bdir, *, counts, exe=None):
    """Delete the compiled objects, precompiled headers and archives of the Verilator build
    in ``bdir`` (and, with ``counts``, a training run's counts; the executable ``exe``, if
    given), so that the next ``make`` compiles everything at the next stage's flags
    (``make`` sees the sources unchanged)."""
    bdir = Path(bdir)
    for pattern in ("*.o", "*.gch", "*.a", *(("*.gcda",) if counts else ())):
        for f in bdir.glob(pattern):
            f.unlink()
    if exe is not None:
        Path(exe).unlink(missing_ok=True)


def build(objs, exe, compile, train, scenario):
    """Make the profile-guided build whose objects and counts are in ``objs``: compile at
    ``"generate"`` (``compile(stage)``, one of :data:`STAGES`), ``train()`` the
    instrumented ``exe`` on ``scenario``, :func:`record` it, compile at ``"use"``; returns
    the last compile's value. Starts from nothing (a build stopped half way is redone)."""
    (Path(objs) / MARKER).unlink(missing_ok=True)
    clean(objs, counts=True, exe=exe)
    compile("generate")
    t0 = time.perf_counter()
    train()
    record(objs, scenario, time.perf_counter() - t0)
    clean(objs, counts=False, exe=exe)
    return compile("use")


def record(bdir, train, wall_s):
    """Write :data:`MARKER` in ``bdir``: the build is profile-guided, trained on ``train``
    (a :class:`~sim_models.cosim.CosimConfig`) in ``wall_s`` seconds."""
    counts = sorted(f.name for f in Path(bdir).glob("*.gcda"))
    if not counts:
        raise RuntimeError(f"the training run wrote no profile in {bdir}: did the simulator "
                           f"exit normally?")
    (Path(bdir) / MARKER).write_text(json.dumps(
        {"training": train.to_dict(), "training_wall_s": round(wall_s, 2),
         "counts": counts}, indent=1) + "\n")
