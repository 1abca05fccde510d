# SPDX-License-Identifier: Apache-2.0
"""The co-simulation testbench's map of combinational paths, against the generated Verilog.

:mod:`t3hw.verif.cosim_tb` reads an engine's outputs at the falling edge, before the inputs
it writes there have settled, unless an input of :data:`~t3hw.verif.cosim_tb.COMBINATIONAL`
changed. That is exact only if the map lists every input in the combinational fan-in of
every output the testbench samples. Yosys derives the fan-in from ``rtl/t3hw_system.v``
(flattened, cut at every flip-flop), for every engine of the system; the test fails when the
RTL gains or loses such a path, so that the map is kept up to date with it.
"""

import re
import shutil
import subprocess
from pathlib import Path

from t3hw.tools import toolchain
from t3hw.verif.cosim_tb import COMBINATIONAL, _Engine

RTL = Path(__file__).resolve().parent.parent / "rtl" / "t3hw_system.v"

#: Flip-flop cells (and memory write ports) the fan-in stops at, after ``proc``.
_STATE = "$dff,$adff,$dffe,$adffe,$sdff,$sdffe,$sdffce,$dffsr,$aldff,$memwr,$memwr_v2"

#: The outputs the testbench samples: its OUT streams' valid and payload, its IN streams'
#: ready.
SAMPLED = [f"{s}__{f}" for s in _Engine.OUT for f in ("valid", "payload")] + \
    [f"{s}__ready" for s in _Engine.IN]


def test_combinational_map_matches_rtl(tmp_path):
    shutil.copy(RTL, tmp_path / "system.v")       # YoWASP reads its working directory
    engines = sorted(set(re.findall(r"\be(\d+)__store__valid\b",
                                    (tmp_path / "system.v").read_text())), key=int)
    assert len(engines) >= 2
    lines = ["read_verilog system.v", "hierarchy -top t3hw_system", "proc", "flatten",
             "opt_clean"]
    for e in engines:
        for out in SAMPLED:
            lines.append(f"tee -q -o cone_e{e}__{out}.txt select -list o:e{e}__{out} "
                         f"%ci*:-{_STATE} i:* %i")
    (tmp_path / "cones.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([toolchain.yowasp("yosys"), "-q", "-s", "cones.ys"], cwd=tmp_path,
                   check=True, timeout=600)
    expected = {out: sorted(inputs) for out, inputs in COMBINATIONAL.items()}
    for e in engines:
        found = {}
        for out in SAMPLED:
            text = (tmp_path / f"cone_e{e}__{out}.txt").read_text()
            inputs = sorted(line.split("/", 1)[1].replace(f"e{e}__", "", 1).replace("__", "_")
                            for line in text.split() if "/" in line)
            foreign = [i for i in inputs if re.match(r"e\d+_", i)]
            assert not foreign, (e, out, foreign)          # no path between engines
            if inputs:
                found[out.replace("__", "_")] = inputs
        assert found == expected, (e, found)
