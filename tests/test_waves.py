# SPDX-License-Identifier: Apache-2.0
"""Waves of ``t3hw cosim --waves``: an FST without internal names, a ``.gtkw`` that opens
on the first trigger (checked in GTKWave itself, under a virtual display), with relative
paths and enum names, and ``t3hw waves`` reading the dump back.

One small co-simulation (2 GPUs, all-reduce) is built and run once for the module; the
command-line test runs the same traced build (same Verilog) through ``t3hw cosim --waves``,
so the whole file builds one traced system, on one pytest worker. The
GTKWave test also renders the screenshot of ``docs/waves.md``: with
``T3HW_SCREENSHOT=docs/img/gtkwave.png`` it copies it there.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(gpus=2, tp=8, sublayer="FC-2", tokens=64, hidden=128, collective="allreduce")
SYSTEM_PACKAGES = {"gtkwave": "gtkwave", "xvfb-run": "xvfb", "xauth": "xauth",
                   "gs": "ghostscript"}


@pytest.fixture(scope="module")
def waves(tmp_path_factory):
    """``(folder, result)`` of one waves run of the small all-reduce (default format)."""
    from sim_models.cosim import CosimConfig
    from t3hw.tools import cosim
    wdir = tmp_path_factory.mktemp("cosim") / "waves"
    r = cosim.run(CosimConfig(**SMALL), waves_dir=wdir, model=False)
    assert r["numerics_ok"], r["failure"]
    return wdir, r


def _triggers(dump, n):
    """``[(time, gpu, tile)]`` of every trigger transfer in the dump, in time order."""
    from t3hw.tools.waves import SystemDump, system_events
    d = SystemDump(dump)
    return sorted((d.time(c), i, tile) for i, e in enumerate(system_events(dump, n,
                                                                           dump_reader=d))
                  for c, tile, _ in e["triggers"])


def test_fst_by_default_without_internal_names(waves):
    from t3hw.tools.waves import dump_names, gtkw_traces
    wdir, r = waves
    dump = wdir / "system.fst"
    assert Path(r["waves"]["dump"]) == dump.resolve() and not (wdir / "system.vcd").exists()
    assert dump.read_bytes()[:1] == b"\x00"              # FST block type 0 (header), not text
    names = dump_names(dump)
    assert not [v for v in names if "$" in v], "Amaranth's $-numbered nets are traced"
    assert all(v.startswith("t3hw_system.") for v in names)          # no $rootio scope
    traced = gtkw_traces(wdir / "system.gtkw")
    assert set(traced) <= names
    for i in range(SMALL["gpus"]):
        assert f"t3hw_system.e{i}.tracker.trigger__valid" in traced


def test_gtkw_opens_on_the_triggers(waves):
    """The save file names its dump relatively, opens on a window that holds the first
    trigger (its primary marker) and names the next triggers' markers after their GPU,
    collective phase and unit."""
    from t3hw.tools.waves import gtkw_view, trigger_name
    wdir, r = waves
    view = gtkw_view(wdir / "system.gtkw")
    assert view["dumpfile"] == "system.fst"
    trig = _triggers(wdir / "system.fst", SMALL["gpus"])
    assert len(trig) == r["triggers"] > 1
    first = trig[0][0]
    assert view["marker"] == first
    assert view["start"] < first < view["end"]
    assert view["start"] > 0 and view["end"] - view["start"] < first   # zoomed, not from 0
    units = r["units"]["per_chunk"]
    for letter, (t, i, tile) in zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", trig[1:]):
        assert view["named"][letter] == t
        assert view["names"][letter] == "GPU{} {} chunk {} unit {}".format(
            i, *trigger_name(tile, SMALL["gpus"], units))


def test_enum_fields_translated(waves):
    """Every enum-typed field the save file traces names a filter file (relative to the
    save file) whose lines are the enum's members, from ``t3hw.spec.layouts``."""
    from t3hw.spec.layouts import WriteKind, WriteSource
    from t3hw.tools.wave_enums import filter_text
    wdir, _ = waves
    lines = (wdir / "system.gtkw").read_text().splitlines()
    filters = {line.split()[1] for line in lines if line.startswith("^")}
    assert filters >= {"filters/WriteSource.txt", "filters/WriteKind.txt"}
    for e in (WriteSource, WriteKind):
        text = (wdir / "filters" / f"{e.__name__}.txt").read_text()
        assert text == filter_text(e)
        assert {line.split()[1] for line in text.splitlines()} == {m.name for m in e}
    src = next(k for k, line in enumerate(lines) if "tracker.write__payload__source" in line)
    assert lines[src - 1].startswith("^") and "WriteSource" in lines[src - 1]


def test_waves_cli_reads_the_fst(waves):
    wdir, r = waves
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "t3hw.cli", "waves", str(wdir)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert f"{r['triggers']} triggers in {wdir / 'system.fst'}" in p.stdout
    assert " RS chunk 0 unit 0" in p.stdout
    assert (wdir / "timeline.png").stat().st_size > 10_000


def _system_tools():
    """Install GTKWave, Xvfb and Ghostscript with apt-get when missing (as ``make setup``
    does); skip when they are neither installed nor installable."""
    missing = [pkg for exe, pkg in SYSTEM_PACKAGES.items() if not shutil.which(exe)]
    if not missing:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if shutil.which("apt-get") and (not sudo or shutil.which("sudo")):
        cmd = sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing
        if subprocess.run(cmd, capture_output=True).returncode != 0:
            subprocess.run(sudo + ["apt-get", "update", "-qq"], capture_output=True)
            subprocess.run(cmd, capture_output=True)
    still = [pkg for exe, pkg in SYSTEM_PACKAGES.items() if not shutil.which(exe)]
    if still:
        pytest.skip(f"Debian packages {' '.join(still)} are not installed and apt-get could "
                    f"not install them (`make setup` installs them)")


#: Under ``--script`` GTKWave runs the script before it lays its window out, so the wave pane
#: is a few pixels wide: the script records the view's start and the markers the save file
#: set, then widens the view to what the save file's 1600-pixel window shows
#: (:func:`t3hw.tools.waves.gtkw_view`) before printing.
PRINT_TCL = """\
set f [open "{view}" w]
puts $f "start [gtkwave::getWindowStartTime]"
puts $f "marker [gtkwave::getMarker]"
puts $f "A [gtkwave::getNamedMarker A]"
close $f
gtkwave::setZoomRangeTimes {start} {end}
gtkwave::/File/Print_To_File PS {{Letter (8.5" x 11")}} Full {ps}
gtkwave::/File/Quit
"""


def test_gtkwave_screenshot(waves, tmp_path):
    """GTKWave, opened on the save file alone from another folder after the waves folder
    moved, shows a window that holds the first trigger, with the primary marker on it and
    enum names in the traces; the print is the screenshot of ``docs/waves.md``."""
    _system_tools()
    wdir, _ = waves
    moved = tmp_path / "moved"
    shutil.copytree(wdir, moved)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ps, view, png = tmp_path / "gtkwave.ps", tmp_path / "view.txt", tmp_path / "gtkwave.png"
    from t3hw.tools.waves import gtkw_view
    saved = gtkw_view(moved / "system.gtkw")
    (tmp_path / "print.tcl").write_text(PRINT_TCL.format(view=view, ps=ps, start=saved["start"],
                                                         end=saved["end"]))
    p = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1600x900x24", "gtkwave",
                        f"--script={tmp_path / 'print.tcl'}", str(moved / "system.gtkw")],
                       cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert view.is_file(), f"GTKWave did not run the script: {p.stdout[-2000:]}{p.stderr}"
    got = dict(line.split() for line in view.read_text().splitlines())
    first = _triggers(moved / "system.fst", SMALL["gpus"])[0][0]
    assert int(got["start"]) == saved["start"] < first < saved["end"], (got, saved, first)
    assert int(got["marker"]) == first and int(got["A"]) == saved["named"]["A"]
    subprocess.run(["gs", "-q", "-dSAFER", "-dBATCH", "-dNOPAUSE", "-sDEVICE=png16m",
                    "-r100", f"-sOutputFile={png}", "-c", "<</Orientation 3>> setpagedevice",
                    "-f", str(ps)], check=True)
    assert png.stat().st_size > 10_000
    if os.environ.get("T3HW_SCREENSHOT"):
        shutil.copy(png, os.environ["T3HW_SCREENSHOT"])
    from t3hw.spec.layouts import WriteSource
    shown = set(re.findall(r"\(([A-Za-z_]+)\) show", ps.read_text(errors="replace")))
    assert shown & {m.name for m in WriteSource}, "the enum filters were not applied"


def test_cli_waves_and_timeline(tmp_path):
    """``t3hw cosim --waves`` dumps the trigger path of every engine and a .gtkw that names
    only signals of the dump; ``t3hw waves`` prints the triggers it reads back and renders
    the PNG."""
    from t3hw.tools.waves import dump_names, gtkw_traces
    out, wdir = tmp_path / "r.json", tmp_path / "w"
    cmd = [sys.executable, "-m", "t3hw.cli", "cosim", "--gpus", "2", "--tp", "8",
           "--sublayer", "FC-2", "--tokens", "64", "--hidden", "256",
           "--collective", "allreduce", "--json", str(out), "--waves", str(wdir)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["numerics_ok"]
    names = dump_names(wdir / "system.fst")             # FST by default
    traced = gtkw_traces(wdir / "system.gtkw")
    for i in range(2):
        assert f"t3hw_system.e{i}.tracker.trigger__valid" in traced
    assert set(traced) <= names
    p = subprocess.run([sys.executable, "-m", "t3hw.cli", "waves", str(wdir)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"{r['triggers']} triggers" in p.stdout
    assert (wdir / "timeline.png").stat().st_size > 10_000
