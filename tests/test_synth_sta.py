# SPDX-License-Identifier: Apache-2.0
"""The static timing over nextpnr's SDF (:mod:`t3hw.tools.synth.sta`), on hand-made SDF text
whose every arrival time is known: the latest path wins, starts are clocked outputs only,
the setup check counts, and failing endpoints group by start and end register."""

from t3hw.tools.synth import sta


def _cell(kind, inst, iopaths=(), checks=()):
    lines = [f'  (CELL', f'    (CELLTYPE "{kind}")', f'    (INSTANCE {inst})',
             '    (DELAY', '      (ABSOLUTE']
    lines += [f'        (IOPATH {a} {z} ({d}:{d}:{d}) ({d}:{d}:{d}))' for a, z, d in iopaths]
    lines += ['      )', '    )']
    if checks:
        lines += ['    (TIMINGCHECK']
        lines += [f'      (SETUPHOLD (posedge {pin}) (posedge CLK) (0:0:0) ({t}:{t}:{t}))'
                  for pin, t in checks]
        lines += ['    )']
    return lines + ['    )']


def _sdf():
    # a_TRELLIS_FF_Q -> lut1 -> lut2 -> b_TRELLIS_FF_Q_3.DI, and a -> lut2 directly (shorter);
    # c (a RAM, CLKA -> DO0) -> b.CE; d -> e with plenty of slack.
    top = ["(DELAYFILE", "  (CELL", '    (CELLTYPE "top")', "    (INSTANCE )", "    (DELAY",
           "      (ABSOLUTE"]
    wires = [("a_TRELLIS_FF_Q/Q", "lut1/A", 1000), ("lut1/Z", "lut2/A", 2000),
             ("a_TRELLIS_FF_Q/Q", "lut2/B", 100), ("lut2/Z", "b_TRELLIS_FF_Q_3/DI", 500),
             ("ram/DO0", "b_TRELLIS_FF_Q_3/CE", 300), ("d_TRELLIS_FF_Q/Q", "e_TRELLIS_FF_Q/DI", 10)]
    top += [f"        (INTERCONNECT {s} {d} ({t}:{t}:{t}) ({t}:{t}:{t}))" for s, d, t in wires]
    top += ["      )", "    )", "    )"]
    cells = (_cell("TRELLIS_FF", "a_TRELLIS_FF_Q", [("CLK", "Q", 500)])
             + _cell("TRELLIS_COMB", "lut1", [("A", "Z", 250)])
             + _cell("TRELLIS_COMB", "lut2", [("A", "Z", 250), ("B", "Z", 240)])
             + _cell("TRELLIS_FF", "b_TRELLIS_FF_Q_3", [("CLK", "Q", 500)],
                     [("DI", 300), ("CE", 150)])
             + _cell("DP16KD", "ram", [("CLKA", "DO0", 900)])
             + _cell("TRELLIS_FF", "d_TRELLIS_FF_Q", [("CLK", "Q", 500)])
             + _cell("TRELLIS_FF", "e_TRELLIS_FF_Q", [("CLK", "Q", 500)], [("DI", 300)]))
    return (top + cells + [")"])


def test_latest_arrival_and_setup_give_each_endpoint_its_slack():
    got = {pin: (slack, start) for slack, pin, start in sta.analyse(_sdf(), 4000)}
    # a.Q 500 + 1000 + lut1 250 + 2000 + lut2 250 + 500 = 4500, + setup 300: slack -800
    # (the direct a -> lut2.B path arrives at 500 + 100 + 240 + 500 = 1340: not the worst)
    assert got["b_TRELLIS_FF_Q_3/DI"] == (-800, "a_TRELLIS_FF_Q/Q")
    # the RAM's clock-to-out starts a path: 900 + 300 + setup 150
    assert got["b_TRELLIS_FF_Q_3/CE"] == (4000 - 1350, "ram/DO0")
    assert got["e_TRELLIS_FF_Q/DI"] == (4000 - 810, "d_TRELLIS_FF_Q/Q")
    # the worst first
    assert sta.analyse(_sdf(), 4000)[0][1] == "b_TRELLIS_FF_Q_3/DI"


def test_summary_groups_failing_endpoints_by_register():
    ends = sta.analyse(_sdf(), 4000)
    s = sta.summary(ends)
    assert (s["endpoints"], s["failing"], s["worst_ps"]) == (3, 1, -800)
    assert s["groups"] == [{"from": "a", "to": "b", "endpoints": 1, "worst_ps": -800}]
    # per block of the endpoint (here the wrapper's level: the register's own name)
    assert s["blocks"] == [{"block": "b", "endpoints": 1, "tns_ps": -800, "worst_ps": -800}]
    # at 700 ps: b's DI (-4100) and CE (700 - 1350) add up, e's DI fails by 110; b first
    assert sta.summary(sta.analyse(_sdf(), 700))["blocks"] == [
        {"block": "b", "endpoints": 2, "tns_ps": -4750, "worst_ps": -4100},
        {"block": "e", "endpoints": 1, "tns_ps": -110, "worst_ps": -110}]
    # at a slower clock nothing fails
    assert sta.summary(sta.analyse(_sdf(), 6000))["failing"] == 0
    assert sta.register_name("dut.arbiter.wait1_TRELLIS_FF_Q_3/Q") == "dut.arbiter.wait1"
    assert sta.register_name("dut.x.y\\$DPRAM_COMB0/A") == "dut.x.y"
    assert sta.register_name("dut.dma.engine.\\$signal$12_TRELLIS_FF_Q_2/Q") == \
        "dut.dma.engine.$signal"
    assert sta.register_name("dut.queue.held$35_TRELLIS_FF_Q_4/Q") == "dut.queue.held"
    assert sta.block_of("dut.arbiter.wait1") == "arbiter"
    assert sta.block_of("dut.slice_store.queue.full") == "slice_store"
    assert sta.block_of("in_sr") == "in_sr" and sta.block_of("dut") == "dut"


def test_worst_path_follows_the_latest_arrival_hop_by_hop():
    got = sta.worst_path(_sdf(), 4000, "b")
    assert got["endpoint"] == "b_TRELLIS_FF_Q_3/DI" and got["slack_ps"] == -800
    # a.Q (clock-to-out 500) -> lut1.A (wire 1000) -> lut1.Z (250) -> lut2.A (2000) -> lut2.Z
    # (250) -> b.DI (500), not the shorter a -> lut2.B; a.Q drives two loads
    assert [(h["pin"], h["delay_ps"], h["arrival_ps"], h["fanout"]) for h in got["hops"]] == [
        ("a_TRELLIS_FF_Q/Q", 500, 500, 2), ("lut1/A", 1000, 1500, 1), ("lut1/Z", 250, 1750, 1),
        ("lut2/A", 2000, 3750, 1), ("lut2/Z", 250, 4000, 1), ("b_TRELLIS_FF_Q_3/DI", 500, 4500, 0)]
    # a register no path reaches, or none of that name
    assert sta.worst_path(_sdf(), 4000, "nothing") is None


def test_a_wire_cap_keeps_the_cells_and_shortens_only_the_longer_wires():
    # a -> lut1 (1000) -> lut2 (2000, capped to 1000) -> b (500): 500 + 1000 + 250 + 1000 +
    # 250 + 500 + setup 300 = 3800, slack 200 at 4000; the other endpoints' wires are shorter
    got = {pin: (slack, start) for slack, pin, start in
           sta.analyse(_sdf(), 4000, wire_cap_ps=1000)}
    assert got["b_TRELLIS_FF_Q_3/DI"] == (200, "a_TRELLIS_FF_Q/Q")
    assert got["b_TRELLIS_FF_Q_3/CE"] == (4000 - 1350, "ram/DO0")
    # a cap under every wire: the path's cells alone plus its 3 wires at 10 each
    assert sta.analyse(_sdf(), 4000, wire_cap_ps=10)[0] == (
        4000 - (500 + 10 + 250 + 10 + 250 + 10 + 300), "b_TRELLIS_FF_Q_3/DI", "a_TRELLIS_FF_Q/Q")
    hops = sta.worst_path(_sdf(), 4000, "b", wire_cap_ps=1000)["hops"]
    assert [h["delay_ps"] for h in hops] == [500, 1000, 250, 1000, 250, 500]
    # no cap: the routed delays
    assert [h["delay_ps"] for h in sta.worst_path(_sdf(), 4000, "b")["hops"]] == [
        500, 1000, 250, 2000, 250, 500]
    # the wires alone, sorted
    assert sta.wire_delays(_sdf()) == [10, 100, 300, 500, 1000, 2000]
