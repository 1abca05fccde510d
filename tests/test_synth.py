# SPDX-License-Identifier: Apache-2.0
"""``t3hw synth`` end to end on one small block (the tracker at the ``small`` parameter set:
generic, ECP5 with nextpnr, iCE40), its parsers on the real tool outputs of that run, the
timing wrapper's claim that Yosys strips nothing, and the bad-input paths."""

import argparse
import json
import shutil
import subprocess

import pytest

from t3hw.tools import simulate, toolchain
from t3hw.tools import synth
from t3hw.spec.layouts import entry_layout, trigger_layout
from t3hw.spec.params import DEFAULT


BLOCK, SET = "tracker", "small"


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    """One run of the whole flow; returns (results dict, its JSON path, the job's folder)."""
    tmp = tmp_path_factory.mktemp("synth")
    path = tmp / "results.json"
    path.write_text(json.dumps({"blocks": {"arbiter": {"kept": True}}}))
    results = synth.run(path, blocks=[BLOCK], param_sets=[SET], seeds=[1], jobs=2,
                        workdir=tmp / "work", log=None, command="test")
    return results, path, tmp / "work" / synth.entry_name(BLOCK, SET)


def test_results_shape(flow):
    results, path, _ = flow
    assert json.loads(path.read_text()) == results
    entry = results["blocks"]["tracker@small"]
    assert entry["params"] == synth.PARAM_SETS[SET].to_dict()
    assert entry["generic"]["cells"] > 0 and entry["generic"]["ff"] > 0
    ecp5 = entry["ecp5"]
    for key in ("lut4", "ff", "bram", "dsp", "fmax_mhz"):
        assert key in ecp5
    assert ecp5["lut4"] > 0 and ecp5["ff"] > 0 and ecp5["dsp"] == 0
    assert 0 < ecp5["fmax_mhz"] < 1000
    assert ecp5["fmax_seeds"] == {"1": ecp5["fmax_mhz"]}
    # every endpoint of the routed design, from its SDF (t3hw.tools.synth.sta)
    ends = ecp5["failing_endpoints"]
    assert ends["seed"] == 1 and ends["endpoints"] > ecp5["ff"] / 2
    assert sum(b["endpoints"] for b in ends["blocks"]) == ends["failing"]
    # nextpnr failing the target means failing endpoints; meeting it, none worse than the
    # STA's documented pessimism (it takes the larger of each setup/hold pair: about 0.2
    # ns; the tracker at the small set once reached 150.76 MHz with 7 endpoints short by
    # this count).
    if ecp5["fmax_mhz"] < synth.DEFAULT_FREQ_MHZ:
        assert ends["failing"] > 0
    else:
        assert ends["failing"] == 0 or ends["worst_ps"] >= -300
    # the logic levels of the netlist before place and route (t3hw.tools.synth.levels)
    levels = ecp5["logic_levels"]
    assert sum(levels["histogram"].values()) == levels["endpoints"] > ecp5["ff"]
    assert levels["over"] == sum(n for k, n in levels["histogram"].items()
                                 if int(k) > levels["limit"])
    assert entry["ice40"]["lc"] >= max(entry["ice40"]["lut4"], entry["ice40"]["ff"]) > 0
    assert results["tracker_storage_bits"] == synth.tracker_storage_bits(DEFAULT)
    assert results["ecp5"]["speed"] == 6 and results["ecp5"]["device"] == "LFE5U-85F"
    table = synth.markdown_table({"blocks": {"tracker@small": entry}})
    assert "| tracker | small |" in table and f"{ecp5['fmax_mhz']:.1f}" in table
    assert f"| {levels['over']:,} ({levels['max']}) |" in table
    paths = synth.critical_paths_table({"blocks": {"tracker@small": entry}})
    assert paths.count("\n") == 2 and "| tracker | small |" in paths


def test_merge_keeps_other_entries(flow):
    """A run of one block keeps the other entries of an existing file (block order, then
    parameter-set order)."""
    results, _, _ = flow
    assert list(results["blocks"]) == ["tracker@small", "arbiter"]
    assert results["blocks"]["arbiter"] == {"kept": True}


def test_memories_match_the_layouts(flow):
    """The generic run keeps memories as memory cells; their bits are the tracker table,
    the trigger and ack queues, the held counters and their 1-bit copy, as derived from
    the layouts."""
    results, _, _ = flow
    p = synth.PARAM_SETS[SET]
    storage = synth.tracker_storage(p)
    assert storage["table_bits"] == entry_layout(p).size * p.tracker_entries
    assert storage["trigger_queue_bits"] == trigger_layout(p).size * p.tracker_entries
    assert storage["ack_queue_bits"] == p.tile_width * p.tracker_entries
    generic = results["blocks"]["tracker@small"]["generic"]
    assert storage["held_bits"] == p.dma_descriptors * (p.tracker_entries + 1).bit_length()
    assert storage["held_nonzero_bits"] == p.dma_descriptors
    assert generic["memories"] == 5
    # Each queue's memory has ``depth`` entries: the ``depth - 1`` items behind its head
    # register and one always free (written in every cycle, :class:`t3hw.hw.queue.Queue`).
    assert generic["memory_bits"] == (storage["table_bits"] + storage["trigger_queue_bits"]
                                      + storage["ack_queue_bits"] + storage["held_bits"]
                                      + storage["held_nonzero_bits"])


def test_tracker_storage_paper():
    """The figure in docs/tracker.md: 46 bits x 256 entries."""
    assert synth.tracker_storage_bits(DEFAULT) == 11776      # 256 x 46 bits
    assert synth.tracker_storage(DEFAULT)["entry_bits"] == 46


def test_parse_stat_real(flow):
    _, _, job = flow
    text = (job / "ecp5_stat.json").read_text()
    block = synth.parse_stat(text, "t3hw_tracker")
    whole = synth.parse_stat(text)
    assert block["LUT4"] > 0 and block["TRELLIS_FF"] > 0
    assert "$scopeinfo" not in whole and not any(k.startswith("t3hw_") for k in whole)
    # The wrapper adds a flip-flop per input bit and two per output bit, nothing else.
    ports = synth.verilog_ports((job / "t3hw_tracker.v").read_text(), "t3hw_tracker")
    in_bits = sum(w for d, n, w in ports if d == "input" and n != "clk")
    out_bits = sum(w for d, n, w in ports if d == "output")
    assert whole["TRELLIS_FF"] == block["TRELLIS_FF"] + in_bits + 2 * out_bits
    with pytest.raises(ValueError, match="t3hw_nothing"):
        synth.parse_stat(text, "t3hw_nothing")


def test_wrapper_strips_nothing(flow):
    """The block inside the wrapper maps to exactly the cells of the bare block."""
    results, _, job = flow
    script = ("read_verilog t3hw_tracker.v; hierarchy -top t3hw_tracker; "
              f"{synth.ECP5_COLLISIONS}; synth_ecp5 -top t3hw_tracker; "
              "tee -q -o bare_stat.json stat -json")
    exe = toolchain.yowasp("yosys")
    subprocess.run([exe, "-q", "-p", script], cwd=job, check=True, timeout=600)
    bare = synth.parse_stat((job / "bare_stat.json").read_text())
    assert bare == results["blocks"]["tracker@small"]["ecp5"]["by_type"]


def test_parse_nextpnr_report_real(flow):
    results, _, job = flow
    rep = synth.parse_nextpnr_report((job / "nextpnr_seed1.json").read_text())
    assert rep["fmax_mhz"] == results["blocks"]["tracker@small"]["ecp5"]["fmax_mhz"] > 0
    assert rep["target_mhz"] == synth.DEFAULT_FREQ_MHZ
    assert rep["utilization"]["TRELLIS_IO"] == 3            # clk, si, so: the wrapper's pins
    path = rep["critical_path"]
    assert path["delay_ns"] == pytest.approx(1000 / rep["fmax_mhz"], rel=0.02)
    assert path["logic_ns"] > 0 and path["routing_ns"] >= 0
    assert path["from_cell"] and path["to_cell"]
    # The log states the same figure (the last "Max frequency" line is post-route).
    log = (job / "nextpnr_seed1.log").read_text()
    last = [ln for ln in log.splitlines() if "Max frequency for clock" in ln][-1]
    assert f"{rep['fmax_mhz']:.2f} MHz" in last
    # The nets come from the block's Verilog (and, where a net is also a block port, from
    # the timing wrapper's, which the docs table leaves out).
    lines = synth.source_lines(path["sources"], job)
    assert all(ln.startswith(("t3hw_tracker.v:", "wrapper.v:")) for ln in lines)
    assert any(ln.startswith("t3hw_tracker.v:") for ln in lines)


def test_parse_ice40_pack_real(flow):
    results, _, job = flow
    util = synth.parse_utilization((job / "nextpnr_ice40_pack.json").read_text())
    assert util["ICESTORM_LC"] == results["blocks"]["tracker@small"]["ice40"]["lc"]


def test_parse_memories_real(flow):
    _, _, job = flow
    mems = dict((n, (w, d)) for n, w, d in
                synth.parse_memories((job / "generic_mem.json").read_text()))
    p = synth.PARAM_SETS[SET]
    assert mems["entries"] == (entry_layout(p).size, p.tracker_entries)


def test_signal_of():
    assert synth.signal_of("dut.fwd_entry_TRELLIS_FF_Q_32") == "fwd_entry[32]"
    assert synth.signal_of("dut.entries.0.0") == "entries.0.0"
    assert synth.signal_of("dut.thr_LUT4_Z") == "thr"
    assert synth.signal_of("dut.\\$signal_TRELLIS_FF_Q") == "$signal"
    assert synth.signal_of("dut.\\$signal_TRELLIS_FF_Q_3") == "$signal[3]"
    assert synth.signal_of("in_sr_TRELLIS_FF_Q_2") is None
    assert synth.signal_of("$nextpnr_CCU2C_15$CCU2_COMB0") is None


def test_verilog_ports_and_wrapper():
    text = ("module m(a, clk, b, y);\n  input [3:0] a;\n  input clk;\n  input b;\n"
            "  output [1:0] y;\nendmodule\n")
    ports = synth.verilog_ports(text, "m")
    assert ports == [("input", "a", 4), ("input", "clk", 1), ("input", "b", 1),
                     ("output", "y", 2)]
    wrapper, in_bits, out_bits = synth.wrapper_verilog("m", ports)
    assert (in_bits, out_bits) == (5, 2)
    assert ".a(in_sr[3:0])" in wrapper and ".b(in_sr[4:4])" in wrapper
    assert ".clk(clk)" in wrapper and ".y(out[1:0])" in wrapper
    # One output bit: no shift expression with an empty range.
    wrapper, _, _ = synth.wrapper_verilog("m", [("input", "clk", 1), ("output", "y", 1)])
    assert "[-1" not in wrapper and "out_sr <= out_r;" in wrapper
    with pytest.raises(ValueError, match="'n' not found"):
        synth.verilog_ports(text, "n")
    with pytest.raises(ValueError, match="no output"):
        synth.wrapper_verilog("m", [("input", "a", 1)])


@pytest.mark.parametrize("kwargs, message", [
    ({"blocks": ["trackr"]}, "unknown block 'trackr'; blocks are tracker, dma, addrmap, "
                             "arbiter, engine"),
    ({"param_sets": ["huge"]}, "unknown parameter set 'huge'; parameter sets are small, "
                               "default, large"),
    ({"blocks": []}, "no block given"),
    ({"seeds": [1, 1]}, "seeds must be distinct"),
    ({"freq": 0}, r"freq must be a frequency in MHz in \[1, 1000\], not 0"),
    ({"jobs": 0}, r"jobs must be an integer in \[1, 16\], not 0"),
    ({"pnr_timeout": 0}, "pnr_timeout must be a positive number of seconds, not 0"),
])
def test_bad_input(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        synth.run(tmp_path / "r.json", workdir=tmp_path, log=None, **kwargs)
    assert not (tmp_path / "r.json").exists()


def _args(*argv):
    parser = argparse.ArgumentParser()
    synth.add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_bad_block(tmp_path):
    with pytest.raises(ValueError, match="unknown block 'nope'; blocks are tracker"):
        synth.cmd(_args("--json", str(tmp_path / "r.json"), "--blocks", "tracker,nope"))


def test_cli_bad_seed(tmp_path):
    from t3hw.tools.errors import CliError
    with pytest.raises(CliError, match="--seed takes integers"):
        synth.cmd(_args("--json", str(tmp_path / "r.json"), "--seed", "1,x"))


def test_cli_lists(tmp_path):
    args = _args("--json", "r.json", "--blocks", "arbiter", "--blocks", "tracker,dma",
                 "--params", "small,large", "--seed", "4", "--seed", "5,6")
    assert args.blocks == ["arbiter", "tracker,dma"] and args.params == ["small,large"]
    assert args.seed == ["4", "5,6"] and args.freq == synth.DEFAULT_FREQ_MHZ


def test_pnr_timeout_is_recorded(tmp_path):
    """A place and route that does not finish in time is a `null` seed, not an error."""
    entry = synth.synth_block(BLOCK, SET, workdir=tmp_path, seeds=[1], pnr_timeout=0.5)
    ecp5 = entry["ecp5"]
    assert ecp5["fmax_seeds"] == {"1": None} and ecp5["fmax_mhz"] is None
    assert ecp5["pnr_timeout_s"] == 0.5 and ecp5["critical_path"] is None
    assert ecp5["lut4"] > 0 and entry["generic"]["cells"] > 0
    assert "| n/a (-) |" in synth.markdown_table({"blocks": {"tracker@small": entry}})


def test_pnr_report_reused_only_for_the_same_run(flow, tmp_path):
    """Place and route is skipped when the netlist and the arguments are those of the
    report's run, and run again when an argument changes."""
    _, _, job = flow
    shutil.copytree(job, tmp_path / job.name)
    lines = []
    again = synth.synth_block(BLOCK, SET, workdir=tmp_path, seeds=[1], log=lines.append)
    assert any("seed 1" in ln and "report of an earlier run" in ln for ln in lines)
    assert again["ecp5"]["fmax_mhz"] == flow[0]["blocks"]["tracker@small"]["ecp5"]["fmax_mhz"]
    lines.clear()
    other = synth.synth_block(BLOCK, SET, workdir=tmp_path, seeds=[1], freq=100,
                              log=lines.append)
    assert not any("earlier run" in ln for ln in lines)
    assert other["ecp5"]["target_mhz"] == 100


def _ram_read_sinks(netlist, module):
    """For every DP16KD of ``module``: the (cell type, port) of each sink of its used read
    data outputs."""
    cells = netlist["modules"][module]["cells"]
    sinks = synth.net_sinks(cells)
    return [tuple((cells[name]["type"], pin) for name, pin in sinks[bits[0]])
            for cell in cells.values() if cell["type"] == "DP16KD"
            for port, bits in cell["connections"].items()
            if port.startswith("DO") and isinstance(bits[0], int) and bits[0] in sinks]


def test_tracker_table_read_goes_straight_to_registers(tmp_path):
    """At the paper's parameters the tracker's table and its two queues (``head="block"``)
    are block RAM whose read data goes straight into flip-flops (no bypass logic):
    ``t3hw/tools/synth_scripts/ecp5.ys`` declares their read/write collisions don't-care (the
    tracker forwards the table's; a queue never uses a read that meets a write). Without that
    step Yosys puts a LUT after every read data bit."""
    module, source = simulate.generate_for("tracker", DEFAULT, tmp_path)
    exe = toolchain.yowasp("yosys")
    sinks = {}
    for name, step in (("marked", synth.ECP5_COLLISIONS), ("plain", "proc; memory -nomap")):
        script = (f"read_verilog {source.name}; hierarchy -top {module}; {step}; "
                  f"synth_ecp5 -top {module} -json {name}.json")
        subprocess.run([exe, "-q", "-p", script], cwd=tmp_path, check=True, timeout=600)
        sinks[name] = _ram_read_sinks(json.loads((tmp_path / f"{name}.json").read_text()),
                                      module)
    width = (entry_layout(DEFAULT).size + trigger_layout(DEFAULT).size   # table, trigger queue
             + DEFAULT.tile_width)                                         # ack queue
    assert len(sinks["marked"]) == width
    assert set(sinks["marked"]) == {(("TRELLIS_FF", "DI"),)}
    assert len(sinks["plain"]) == width
    assert all(any(t == "LUT4" for t, _ in s) for s in sinks["plain"])
    # ...and every one of those flip-flops moves into the RAMs' output registers.
    netlist = json.loads((tmp_path / "marked.json").read_text())
    absorbed = synth.absorb_ram_output_registers(netlist)
    assert sum(absorbed.values()) == width
    rams = [c for c in netlist["modules"][module]["cells"].values() if c["type"] == "DP16KD"]
    assert rams and all(c["parameters"]["REGMODE_B"] == "OUTREG" for c in rams)
    # The RAMs now drive what the flip-flops drove: the forwarding logic, no flip-flop.
    after = _ram_read_sinks(netlist, module)
    assert len(after) == width and all(t != "TRELLIS_FF" for s in after for t, _ in s)


def _flip_flops(ffs):
    """One TRELLIS_FF per ``{param: value, pin: bits}`` override (clock net 1, no reset,
    always enabled, D on nets 10, 11, ..., Q on nets 20, 21, ...)."""
    cells = {}
    for i, override in enumerate(ffs):
        params = {"CEMUX": "1 ", "CLKMUX": "CLK", "GSR": "DISABLED", "LSRMUX": "LSR",
                  "REGSET": "RESET"}
        conns = {"CLK": [1], "LSR": ["0"], "DI": [10 + i], "Q": [20 + i]}
        for key, value in override.items():
            (conns if isinstance(value, list) else params)[key] = value
        cells[f"ff{i}"] = {"type": "TRELLIS_FF", "parameters": params,
                           "port_directions": {p: "output" if p == "Q" else "input"
                                               for p in conns},
                           "connections": conns}
    return cells


def _ram_netlist(ffs):
    """A netlist of one DP16KD whose read outputs DOB0, DOB1 (nets 10, 11) feed ``ffs``: one
    ``{param: value, pin: bits}`` override per flip-flop (TRELLIS_FF, clock net 1, no reset,
    always enabled, Q on nets 20, 21, ...)."""
    cells = {"ram": {"type": "DP16KD", "parameters": {"REGMODE_A": "NOREG",
                                                      "REGMODE_B": "NOREG",
                                                      "CLKBMUX": "CLKB"},
                     "port_directions": {"CLKB": "input", "OCEA": "input", "OCEB": "input",
                                         "DOB0": "output", "DOB1": "output",
                                         "DOB2": "output"},
                     "connections": {"CLKB": [1], "OCEA": ["0"], "OCEB": ["1"],
                                     "DOB0": [10], "DOB1": [11], "DOB2": [12]}}}
    cells.update(_flip_flops(ffs))
    return {"modules": {"m": {"ports": {}, "cells": cells}}}


def test_absorb_ram_output_registers():
    """The read registers move into the RAM only when that changes nothing: every used read
    output feeds exactly one flip-flop on the read clock, with no reset and one enable."""
    net = _ram_netlist([{}, {}])
    assert synth.absorb_ram_output_registers(net) == {"m.ram": 2}
    ram = net["modules"]["m"]["cells"]["ram"]
    assert set(net["modules"]["m"]["cells"]) == {"ram"}
    assert ram["connections"]["DOB0"] == [20] and ram["connections"]["DOB1"] == [21]
    assert ram["parameters"]["REGMODE_B"] == "OUTREG"
    assert ram["connections"]["OCEA"] == ram["connections"]["OCEB"] == ["1"]
    # One clock enable for all: it becomes the output register's.
    net = _ram_netlist([{"CEMUX": "CE", "CE": [5]}, {"CEMUX": "CE", "CE": [5]}])
    assert synth.absorb_ram_output_registers(net) == {"m.ram": 2}
    assert net["modules"]["m"]["cells"]["ram"]["connections"]["OCEB"] == [5]
    for bad in ({"LSR": [7]},                               # a reset
                {"CLK": [2]},                               # another clock
                {"CLKMUX": "INV"},                          # the other edge
                {"M": [8]},
                {"CEMUX": "CE", "CE": [6]}):                # an enable the other lacks
        net = _ram_netlist([{}, bad])
        assert synth.absorb_ram_output_registers(net) == {}, bad
        assert len(net["modules"]["m"]["cells"]) == 3
    # A read output that also feeds logic keeps its flip-flop (and so does the whole RAM).
    net = _ram_netlist([{}, {}])
    net["modules"]["m"]["cells"]["lut"] = {"type": "LUT4", "parameters": {},
                                           "port_directions": {"A": "input"},
                                           "connections": {"A": [11]}}
    assert synth.absorb_ram_output_registers(net) == {}


def _mult_netlist(ffs, mult_params=None):
    """A netlist of one MULT18X18D whose product outputs P0, P1 (nets 10, 11) feed ``ffs``
    (one ``{param: value, pin: bits}`` override per flip-flop, as :func:`_ram_netlist`);
    P2 (net 12) is unused."""
    pins = {"A0": [3], "B0": [4], "P0": [10], "P1": [11], "P2": [12]}
    cells = {"mult": {"type": "MULT18X18D", "parameters": dict(mult_params or {}),
                      "port_directions": {p: "output" if p.startswith("P") else "input"
                                          for p in pins},
                      "connections": pins}}
    cells.update(_flip_flops(ffs))
    return {"modules": {"m": {"ports": {}, "cells": cells}}}


def test_absorb_mult_output_registers():
    """A product's registers move into the DSP block only when that changes nothing: every
    used product output feeds exactly one flip-flop, all on one clock, with no reset, no
    enable and a reset value of 0, and the block has no register yet."""
    net = _mult_netlist([{}, {}])
    assert synth.absorb_mult_output_registers(net) == {"m.mult": 2}
    mult = net["modules"]["m"]["cells"]["mult"]
    assert set(net["modules"]["m"]["cells"]) == {"mult"}
    con, prm = mult["connections"], mult["parameters"]
    assert con["P0"] == [20] and con["P1"] == [21] and con["P2"] == [12]
    assert prm["REG_OUTPUT_CLK"] == "CLK0" and con["CLK0"] == [1]
    assert con["CE0"] == ["1"] and con["RST0"] == ["0"]
    assert all(mult["port_directions"][p] == "input" for p in ("CLK0", "CE0", "RST0"))
    for bad in ({"LSR": [7]},                               # a reset
                {"CLK": [2]},                               # another clock
                {"CLKMUX": "INV"},                          # the other edge
                {"M": [8]},
                {"CEMUX": "CE", "CE": [6]},                 # an enable
                {"REGSET": "SET"}):                         # starts at 1
        net = _mult_netlist([{}, bad])
        assert synth.absorb_mult_output_registers(net) == {}, bad
        assert len(net["modules"]["m"]["cells"]) == 3
    # A block with a register already, or a product bit that also feeds logic, is left alone.
    net = _mult_netlist([{}, {}], {"REG_INPUTA_CLK": "CLK0"})
    assert synth.absorb_mult_output_registers(net) == {}
    net = _mult_netlist([{}, {}])
    net["modules"]["m"]["cells"]["lut"] = {"type": "LUT4", "parameters": {},
                                           "port_directions": {"A": "input"},
                                           "connections": {"A": [11]}}
    assert synth.absorb_mult_output_registers(net) == {}
