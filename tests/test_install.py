# SPDX-License-Identifier: Apache-2.0
"""The installed kit works outside the clone (``make check-install``; marker ``install``).

A fresh virtual environment gets a plain ``pip install`` of the clone (not editable), and
from a folder outside the clone the kit generates Verilog, lints it, co-simulates two
engines with waves and synthesizes the tracker. Each command must find the data files it
needs inside the installed package (lint waivers, trace scope, synthesis scripts) and write
its builds under the working directory (or ``--build DIR``), never into ``site-packages``.

It installs every pinned tool into a new venv and builds a Verilator model, so it takes
minutes and is not part of ``make test``: ``make check-install`` runs it.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.install


def _run(cmd, *, cwd, env=None, timeout=3600):
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    seconds = time.monotonic() - t0
    print(f"$ {' '.join(map(str, cmd))}  ({seconds:.1f} s, exit {proc.returncode})")
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_installed_kit_works_from_any_directory(tmp_path):
    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    t0 = time.monotonic()
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    _run([venv / "bin" / "python", "-m", "pip", "install", "--quiet",
          "--disable-pip-version-check", str(ROOT)], cwd=tmp_path)
    print(f"install: {time.monotonic() - t0:.1f} s")
    site = Path(_run([venv / "bin" / "python", "-c",
                      "import t3hw, pathlib; print(pathlib.Path(t3hw.__file__).parent)"],
                     cwd=work).strip())
    assert not str(site).startswith(str(ROOT)), f"t3hw imported from the clone: {site}"
    before = sorted(p for p in site.rglob("*") if "__pycache__" not in p.parts)

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "T3HW_BUILD")}
    t3hw = venv / "bin" / "t3hw"
    _run([t3hw, "generate", "--out", "rtl"], cwd=work, env=env)
    assert (work / "rtl" / "t3hw_engine.v").is_file()
    out = _run([t3hw, "lint", "--rtl", "rtl"], cwd=work, env=env)
    assert "lint clean" in out
    _run([venv / "bin" / "python", "-m", "t3hw", "cosim", "--gpus", "2", "--tp", "8",
          "--sublayer", "FC-2", "--tokens", "64", "--hidden", "128", "--json", "cosim.json",
          "--waves", "waves"], cwd=work, env=env)
    assert (work / "cosim.json").is_file()
    assert any((work / "waves").glob("*.gtkw"))
    _run([t3hw, "--build", "elsewhere", "synth", "--blocks", "tracker", "--params", "small",
          "--json", "synth.json"], cwd=work, env=env)
    assert (work / "synth.json").is_file()
    assert any((work / "elsewhere").rglob("*.json")), "--build DIR must hold the synthesis"

    assert (work / "build").is_dir(), "builds must go under the working directory"
    after = sorted(p for p in site.rglob("*") if "__pycache__" not in p.parts)
    assert after == before, f"written into the installed package: {set(after) - set(before)}"
    print(f"whole check: {time.monotonic() - t0:.1f} s")
