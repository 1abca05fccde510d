# SPDX-License-Identifier: Apache-2.0
"""The native harness of ``make bench`` (:mod:`t3hw.tools.native`): the co-simulation's
system top in a C++ loop with no Python, whose speed is the co-simulation's ceiling."""

import pytest

from sim_models.cosim import CosimConfig
from t3hw.tools import cosim, native
from t3hw.tools.synth import verilog_ports


def test_ports_are_the_system_tops():
    # the harness reads the ports with the timing wrapper's parser
    found = verilog_ports(cosim._system_verilog(2, CosimConfig(gpus=2).params), cosim.MODULE)
    names = {n for _, n, _ in found}
    assert {"clk", "rst", "e0__store__valid", "e1__net_tx__payload"} <= names
    widths = {n: w for _, n, w in found}
    assert widths["clk"] == 1 and widths["e0__bus__w_data"] == 32
    # every port of both engines, each once
    assert len(names) == len(found)
    assert sum(n.startswith("e0__") for n in names) == sum(n.startswith("e1__") for n in names)


def test_main_drives_every_input_but_clock_reset_and_strobes(tmp_path):
    ports = [("input", "clk", 1), ("input", "rst", 1), ("input", "e0__bus__w_stb", 1),
             ("input", "e0__dram__ready", 1), ("input", "e0__net_rx__payload", 77),
             ("output", "e0__dram__payload", 83), ("output", "e0__irq", 1)]
    text = native.main_cpp(ports)
    assert "top->e0___05Fbus___05Fw_stb = 0;" in text            # never a bus access
    assert "top->e0___05Fdram___05Fready = (next() & 7) != 0;" in text
    for word in range(3):                                        # 77 bits: three words
        assert f"top->e0___05Fnet_rx___05Fpayload[{word}]" in text
    assert "top->e0___05Fnet_rx___05Fpayload[3]" not in text
    assert "sum += top->e0___05Fdram___05Fpayload[i]" in text
    assert "sum += (uint64_t)top->e0___05Firq" in text


def test_native_runs_and_its_checksum_follows_the_stimulus(tmp_path):
    exe = native.build(CosimConfig(gpus=2), root=tmp_path)
    a = native.run(exe, cycles=3000, seed=1)
    b = native.run(exe, cycles=3000, seed=2)
    again = native.run(exe, cycles=3000, seed=1)
    assert a["cycles"] == 3000 and a["cycles_per_s"] > 0
    assert a["checksum"] == again["checksum"]                    # deterministic
    assert a["checksum"] != b["checksum"]                        # the outputs moved
    assert native.build(CosimConfig(gpus=2), root=tmp_path) == exe   # cached
    with pytest.raises(ValueError, match="cycles must be at least 1"):
        native.run(exe, cycles=0)
