# SPDX-License-Identifier: Apache-2.0
"""``t3hw`` never shows a traceback: every mistake is one line that says what to fix, and a
non-zero exit, before any build.

Each bad invocation runs ``python -m t3hw`` in a subprocess, in a fresh folder (the
subprocesses import numpy and amaranth, so each case is its own test and they run in
parallel under ``-n``). For each: the exit status is not 0, stderr is exactly one non-empty
line naming what is wrong, there is no ``Traceback`` anywhere, and no ``build/`` folder was
created (nothing was built). Also: ``--version``, and ``--help`` of every subcommand.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _t3hw(args, cwd, env=None):
    e = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    e.pop("T3HW_DEBUG", None)
    e.pop("T3HW_BUILD", None)
    return subprocess.run([sys.executable, "-m", "t3hw", *args], cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=120)


# -- fixtures of the bad cases: files and folders in the test's folder -----------------------
def _afile(d):
    (d / "afile").write_text("not a folder\n")


def _afolder(d):
    (d / "afolder").mkdir()


def _readonly(d):
    (d / "ro").mkdir()
    (d / "ro").chmod(0o555)


_CFG = {"config": {"gpus": 2, "collective": "rs", "policy": "t3_mca"},
        "units": {"per_chunk": 1}}


def _garbage_dump(d):
    (d / "w").mkdir()
    (d / "w" / "system.vcd").write_text("this is not a waveform\n")
    (d / "w" / "cosim.json").write_text(json.dumps(_CFG))


def _truncated_dump(d):
    (d / "w").mkdir()
    (d / "w" / "system.vcd").write_text("$timescale 1ns $end\n$scope module t3hw_sys")
    (d / "w" / "cosim.json").write_text(json.dumps(_CFG))


def _corrupt_json(d):
    (d / "w").mkdir()
    (d / "w" / "system.vcd").write_text("$timescale 1ns $end\n$scope module t3hw_sys")
    (d / "w" / "cosim.json").write_text('{"config": {"gpus": 2')


ROOT_SKIP = pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                               reason="root writes into a read-only (mode 555) folder")

#: (id, arguments, a word the one-line error must contain, setup or None)
BAD = [
    # co-simulation: the output paths, before a 97 s build
    ("cosim-json-and-waves-in-proc", ["cosim", "--json", "/proc/x.json", "--waves", "/proc/w"],
     "--json", None),
    ("cosim-waves-in-proc", ["cosim", "--json", "x.json", "--waves", "/proc/w"], "--waves",
     None),
    ("cosim-json-is-folder", ["cosim", "--json", "afolder"], "folder", _afolder),
    ("cosim-json-under-a-file", ["cosim", "--json", "afile/x.json"], "afile", _afile),
    ("cosim-waves-is-a-file", ["cosim", "--json", "x.json", "--waves", "afile"], "--waves",
     _afile),
    pytest.param("cosim-json-read-only-folder", ["cosim", "--json", "ro/x.json"], "--json",
                 _readonly, marks=ROOT_SKIP),
    # co-simulation: the size limits, before the build
    ("cosim-tokens-65536", ["cosim", "--tokens", "65536", "--json", "x.json"], "--tokens",
     None),
    ("cosim-tokens-huge", ["cosim", "--tokens", str(2**70), "--json", "x.json"], "--tokens",
     None),
    ("cosim-tokens-not-multiple", ["cosim", "--tokens", "100", "--json", "x.json"],
     "--tokens", None),
    ("cosim-tokens-allreduce", ["cosim", "--tokens", "4096", "--collective", "allreduce",
                                "--json", "x.json"], "2048", None),
    ("cosim-gpus-1", ["cosim", "--gpus", "1", "--json", "x.json"], "--gpus", None),
    ("cosim-gpus-33", ["cosim", "--gpus", "33", "--json", "x.json"], "32", None),
    ("cosim-tp-7", ["cosim", "--tp", "7", "--json", "x.json"], "--tp", None),
    ("cosim-hidden-100", ["cosim", "--hidden", "100", "--json", "x.json"], "--hidden", None),
    ("cosim-hidden-too-wide", ["cosim", "--gpus", "2", "--tokens", "64", "--hidden",
                               "100000000", "--json", "x.json"], "--hidden", None),
    ("cosim-dram-stall-1", ["cosim", "--dram-stall", "1", "--json", "x.json"],
     "--dram-stall", None),
    ("cosim-seed-negative", ["cosim", "--seed", "-1", "--json", "x.json"], "--seed", None),
    ("cosim-net-jitter-negative", ["cosim", "--net-jitter", "-1", "--json", "x.json"],
     "--net-jitter", None),
    ("cosim-link-latency-0", ["cosim", "--link-latency", "0", "--json", "x.json"],
     "--link-latency", None),
    ("sweep-link-latency-0", ["sweep", "--link-latency", "0", "--json", "x.json"],
     "--link-latency", None),
    ("cosim-tokens-not-int", ["cosim", "--tokens", "many", "--json", "x.json"], "--tokens",
     None),
    ("cosim-json-missing", ["cosim"], "--json", None),
    ("cosim-policy-unknown", ["cosim", "--policy", "fifo", "--json", "x.json"], "--policy",
     None),
    ("cosim-memory-unknown", ["cosim", "--memory", "ddr4", "--json", "x.json"], "--memory",
     None),
    # generate: folders and files
    ("generate-out-etc-passwd", ["generate", "--out", "/etc/passwd"], "--out", None),
    ("generate-out-is-a-file", ["generate", "--out", "afile"], "not a folder", _afile),
    ("generate-out-in-proc", ["generate", "--out", "/proc/t3hw-rtl"], "--out", None),
    ("generate-docs-is-folder", ["generate", "--out", "rtl", "--docs", "afolder"], "--docs",
     _afolder),
    pytest.param("generate-out-read-only-folder", ["generate", "--out", "ro/rtl"], "--out",
                 _readonly, marks=ROOT_SKIP),
    ("generate-bad-parameter", ["generate", "--out", "rtl", "--tracker-entries", "3"],
     "tracker_entries", None),
    # other commands
    ("build-is-a-file", ["--build", "afile", "cosim", "--json", "x.json"], "--build", _afile),
    ("bench-outside-a-clone", ["bench", "--json", "b.json"], "clone", None),
    ("paper-json-in-proc", ["paper", "--json", "/proc/p.json"], "--json", None),
    ("paper-plot-is-a-file", ["paper", "--json", "p.json", "--plot", "afile"], "--plot",
     _afile),
    ("arbiter-plot-not-png", ["arbiter-plot", "--out", "x.txt"], "--out", None),
    ("arbiter-plot-out-in-proc", ["arbiter-plot", "--out", "/proc/x.png"], "--out", None),
    ("demo-out-is-a-file", ["demo", "--out", "afile"], "--out", _afile),
    ("synth-json-is-folder", ["synth", "--json", "afolder"], "--json", _afolder),
    ("bitstream-out-in-proc", ["bitstream", "--out", "/proc/ulx3s"], "--out", None),
    ("formal-unknown-proof", ["formal", "no_such_proof"], "no_such_proof", None),
    ("check-rtl-no-folder", ["check-rtl", "--rtl", "nowhere"], "nowhere", None),
    ("lint-no-verilog", ["lint", "--rtl", "afolder"], "afolder", _afolder),
    ("waves-no-folder", ["waves", "nowhere"], "nowhere", None),
    ("waves-garbage-dump", ["waves", "w"], "corrupt", _garbage_dump),
    ("waves-truncated-dump", ["waves", "w"], "corrupt", _truncated_dump),
    ("waves-corrupt-json", ["waves", "w"], "corrupt", _corrupt_json),
    ("unknown-command", ["frobnicate"], "frobnicate", None),
    ("no-command", [], "required", None),
]


def _params():
    for case in BAD:
        if hasattr(case, "marks"):             # already a pytest.param
            yield pytest.param(*case.values, id=case.values[0], marks=case.marks)
        else:
            yield pytest.param(*case, id=case[0])


@pytest.mark.parametrize("name,args,word,setup", list(_params()))
def test_bad_invocation_is_one_line(tmp_path, name, args, word, setup):
    if setup:
        setup(tmp_path)
    r = _t3hw(args, tmp_path)
    lines = [line for line in r.stderr.strip().splitlines()]
    assert r.returncode != 0, (name, r.stdout, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr, r.stderr
    assert len(lines) == 1 and lines[0].strip(), r.stderr
    assert word.lower() in lines[0].lower(), lines[0]
    assert "internal error" not in lines[0], lines[0]
    assert not (tmp_path / "build").exists(), "a build ran"


def test_limits_match_the_plan():
    """``CosimConfig.max_tokens`` is where :class:`Plan` stops fitting the tracker."""
    import dataclasses
    from sim_models.cosim import CosimConfig, Plan
    for kw in ({}, {"collective": "allreduce"}, {"gpus": 2, "hidden": 128, "tokens": 64}):
        cfg = CosimConfig(**kw)
        top, step = cfg.max_tokens(), cfg.gpus * cfg.tile_m
        Plan(dataclasses.replace(cfg, tokens=top))
        over = dataclasses.replace(cfg, tokens=step)
        object.__setattr__(over, "tokens", top + step)   # past the check, into the plan
        with pytest.raises(ValueError):
            Plan(over)
        with pytest.raises(ValueError, match=str(top)):
            dataclasses.replace(cfg, tokens=top + step)


def test_version(tmp_path):
    from importlib import metadata
    r = _t3hw(["--version"], tmp_path)
    assert r.returncode == 0, r.stderr
    try:
        want = metadata.version("t3hw")
    except metadata.PackageNotFoundError:
        want = "unknown"
    assert r.stdout.strip() == f"t3hw {want}"


def test_every_help(tmp_path):
    """``--help`` of ``t3hw`` and of every subcommand exits 0 (one process for all)."""
    code = (
        "import sys, contextlib, io\n"
        "from t3hw.cli import COMMANDS, main\n"
        "bad = []\n"
        "for argv in [['--help']] + [[c.name, '--help'] for c in COMMANDS]:\n"
        "    out = io.StringIO()\n"
        "    try:\n"
        "        with contextlib.redirect_stdout(out):\n"
        "            main(argv)\n"
        "        bad.append((argv, 'returned'))\n"
        "    except SystemExit as e:\n"
        "        if e.code not in (0, None) or 'usage:' not in out.getvalue():\n"
        "            bad.append((argv, e.code))\n"
        "print(len(COMMANDS), bad)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert r.returncode == 0, r.stderr
    n, bad = r.stdout.strip().split(" ", 1)
    assert int(n) >= 12 and bad == "[]", r.stdout


def test_cosim_help_says_the_real_ranges(tmp_path):
    r = _t3hw(["cosim", "--help"], tmp_path)
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "2 .. 32" in text and "4096" in text and "(default: 4)" in text


def test_internal_error_is_one_line(tmp_path):
    """An unexpected exception: one line, status 3; ``T3HW_DEBUG=1`` shows the traceback."""
    code = ("import sys\n"
            "from t3hw import cli\n"
            "from t3hw.tools import paper\n"
            "def boom(args):\n"
            "    raise ZeroDivisionError('boom')\n"
            "cli.COMMANDS = tuple(c._replace(cmd=boom) if c.name == 'paper' else c "
            "for c in cli.COMMANDS)\n"
            "sys.exit(cli.main(['paper', '--json', 'p.json']))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("T3HW_DEBUG", None)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 3
    assert r.stderr.strip() == ("t3hw paper: internal error: ZeroDivisionError: boom (please "
                                "report; rerun with T3HW_DEBUG=1 for the traceback)")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, env=dict(env, T3HW_DEBUG="1"), timeout=120)
    assert r.returncode != 0 and "Traceback" in r.stderr
