# SPDX-License-Identifier: Apache-2.0
"""The logic levels of a synthesized netlist (:mod:`t3hw.tools.synth.levels`), on hand-made
Yosys JSON whose every depth is known: a LUT4, a carry chain's entry and a LUT RAM's read
are a level each, a multiplexer's data inputs and a carry's ripple are none, the deepest
path wins, and a loop is an error; then on a block's own netlist."""

import json

import pytest

from t3hw.tools.synth import levels
from t3hw.tools.synth.wrapper import DUT


def _cell(kind, **pins):
    """A cell of the JSON: ``pins`` maps a pin to ``("in" | "out", [bits])``."""
    return {"type": kind,
            "port_directions": {p: "input" if d == "in" else "output"
                                for p, (d, _) in pins.items()},
            "connections": {p: bits for p, (_, bits) in pins.items()}}


def _ff(d, q):
    return _cell("TRELLIS_FF", CLK=("in", [1]), DI=("in", [d]), Q=("out", [q]))


def _netlist(cells, ports=None):
    ports = ports or {"clk": {"direction": "input", "bits": [1]}}
    return {"modules": {"blk": {"ports": ports, "cells": cells}}}


def _by_end(netlist):
    return {end: (lv, start) for lv, end, start in levels.analyse(netlist, "blk")}


def test_levels_count_routed_cells_only():
    # a.Q -> lut1 -> lut2 -> mux (data input: dedicated, 0) -> b.DI: 2 levels;
    # a.Q -> lut3 -> mux select (routed, 1) -> b.DI: 2; c.Q -> b.DI directly: 0.
    cells = {
        "a_TRELLIS_FF_Q": _ff(10, 11),
        "lut1": _cell("LUT4", A=("in", [11]), B=("in", ["0"]), Z=("out", [12])),
        "lut2": _cell("LUT4", A=("in", [12]), Z=("out", [13])),
        "lut3": _cell("LUT4", A=("in", [11]), Z=("out", [14])),
        "mux": _cell("PFUMX", ALUT=("in", [13]), BLUT=("in", [11]), C0=("in", [14]),
                     Z=("out", [15])),
        "b_TRELLIS_FF_Q_2": _ff(15, 16),
        "c_TRELLIS_FF_Q": _ff(16, 17),
        "e_TRELLIS_FF_Q": _ff(17, 10),
    }
    got = _by_end(_netlist(cells))
    assert got[f"{DUT}.b_TRELLIS_FF_Q_2/DI"] == (2, f"{DUT}.a_TRELLIS_FF_Q/Q")
    paths = {}
    levels.analyse(_netlist(cells), "blk", paths)
    assert paths[f"{DUT}.b_TRELLIS_FF_Q_2/DI"] == [f"{DUT}.lut1", f"{DUT}.lut2", f"{DUT}.mux"]
    assert paths[f"{DUT}.c_TRELLIS_FF_Q/DI"] == []
    assert got[f"{DUT}.c_TRELLIS_FF_Q/DI"] == (0, f"{DUT}.b_TRELLIS_FF_Q_2/Q")
    assert got[f"{DUT}.a_TRELLIS_FF_Q/DI"] == (0, f"{DUT}.e_TRELLIS_FF_Q/Q")
    # the clock is no endpoint
    assert not any(end.endswith("/CLK") for end in got)


def test_carry_ripple_and_lut_ram():
    # port x -> carry entry (1) -> ripple (0) -> S1 -> LUT RAM read address (1) -> DO -> f.DI:
    # 2 levels from the port; the RAM's write data from the port is an endpoint at 0, and
    # an output port at the carry's sum an endpoint at 1.
    ports = {"clk": {"direction": "input", "bits": [1]},
             "x": {"direction": "input", "bits": [2]},
             "y": {"direction": "output", "bits": [21]}}
    cells = {
        "c0": _cell("CCU2C", A0=("in", [2]), CIN=("in", ["0"]), S0=("out", [21]),
                    COUT=("out", [20])),
        "c1": _cell("CCU2C", A0=("in", ["1"]), CIN=("in", [20]), S1=("out", [22]),
                    COUT=("out", [23])),
        "ram": _cell("TRELLIS_DPR16X4", RAD=("in", [22, 22, 22, 22]), DI=("in", [2]),
                     WCK=("in", [1]), DO=("out", [24])),
        "f_TRELLIS_FF_Q": _ff(24, 25),
    }
    got = _by_end(_netlist(cells, ports))
    assert got[f"{DUT}.f_TRELLIS_FF_Q/DI"] == (2, f"{DUT}/x")
    assert got[f"{DUT}.ram/DI"] == (0, f"{DUT}/x")
    assert got[f"{DUT}/y"] == (1, f"{DUT}/x")
    assert f"{DUT}.ram/WCK" not in got


def test_a_combinational_loop_is_an_error():
    cells = {"l1": _cell("LUT4", A=("in", [3]), Z=("out", [2])),
             "l2": _cell("LUT4", A=("in", [2]), Z=("out", [3]))}
    with pytest.raises(ValueError, match="combinational loop through 2 cells"):
        levels.analyse(_netlist(cells), "blk")
    with pytest.raises(ValueError, match="'nope' is not in the netlist"):
        levels.analyse(_netlist(cells), "nope")


def test_summary_groups_the_deep_endpoints_by_register():
    eps = [(6, f"{DUT}.q.b_TRELLIS_FF_Q_1/DI", f"{DUT}.p.a_TRELLIS_FF_Q/Q"),
           (5, f"{DUT}.q.b_TRELLIS_FF_Q_2/DI", f"{DUT}.p.a_TRELLIS_FF_Q_7/Q"),
           (5, f"{DUT}.r.c_TRELLIS_FF_Q/DI", f"{DUT}/port"),
           (4, f"{DUT}.r.d_TRELLIS_FF_Q/DI", f"{DUT}.p.a_TRELLIS_FF_Q/Q"),
           (0, f"{DUT}.r.e_TRELLIS_FF_Q/DI", f"{DUT}.p.a_TRELLIS_FF_Q/Q")]
    s = levels.summary(eps, limit=4)
    assert (s["endpoints"], s["over"], s["max"]) == (5, 3, 6)
    assert s["histogram"] == {"0": 1, "4": 1, "5": 2, "6": 1}
    assert s["groups"] == [
        {"from": f"{DUT}.p.a", "to": f"{DUT}.q.b", "endpoints": 2, "levels": 6},
        {"from": f"{DUT}/port", "to": f"{DUT}.r.c", "endpoints": 1, "levels": 5}]
    assert s["blocks"] == [{"block": "q", "endpoints": 2, "levels": 6},
                           {"block": "r", "endpoints": 1, "levels": 5}]
    assert levels.summary(eps, limit=6)["over"] == 0


def test_a_blocks_own_netlist(tmp_path):
    """The arbiter at the small set through `t3hw synth-levels`' function (Yosys' ECP5
    synthesis, a few seconds): every endpoint is counted once in the histogram, and the
    block's input ports start paths."""
    from t3hw.tools.synth import logic_levels
    r = logic_levels("arbiter", "small", workdir=tmp_path, limit=3, top=5)
    assert sum(r["histogram"].values()) == r["endpoints"] > r["ff"]
    assert r["over"] == sum(n for k, n in r["histogram"].items() if int(k) > 3)
    assert 0 < r["max"] == max(int(k) for k in r["histogram"])
    data = json.loads((tmp_path / "arbiter@small" / "ecp5.json").read_text())
    starts = {start for _, _, start in levels.analyse(data, "t3hw_arbiter")}
    assert any(s.startswith(f"{DUT}/") for s in starts)
