# SPDX-License-Identifier: Apache-2.0
"""What the Verilator builds expose to cocotb, and what the fast co-simulation's shell samples.

Verilator evaluates the logic that reads a writable public variable in its
input-combinational phase at every time step, so only the inputs may be writable
(``docs/cosim.md``, "The shell and the build"); and the fast shell samples every input at the
falling edge, so that no input reaches the logic directly.
"""

import re

from t3hw.spec.params import EngineParams
from t3hw.tools import cosim_fast, simulate
from t3hw.tools.synth import verilog_ports


def test_ports_vlt_makes_inputs_writable_and_outputs_read_only(tmp_path):
    module, source = simulate.generate_for("tracker", EngineParams(), tmp_path / "rtl")
    ports = verilog_ports(source.read_text(), module)
    lines = simulate.ports_vlt(source, module, tmp_path).read_text().splitlines()
    rules = [re.fullmatch(rf'public_flat_(rw|rd) -module "{module}" -var "(\w+)"', line)
             for line in lines if line.startswith("public")]
    assert all(rules) and len(rules) == len(ports)
    access = {m.group(2): m.group(1) for m in rules}
    assert access == {name: "rw" if d == "input" else "rd" for d, name, _ in ports}
    assert {"rd", "rw"} == set(access.values())


#: A core with the shell's port names: two inputs of each kind the shell sees (reset, a bus
#: strobe, a GPU's tiles) and the outputs it logs.
_CORE = f"""module {cosim_fast.CORE}(clk, rst, run, e0__bus__w_stb, g0__desc, cycle,
  log0__serve_valid, log0__serve_op, log0__serve_source, log0__serve_addr, log0__serve_bytes,
  log0__tx_valid, log0__tx_kind, log0__tx_tile);
  input clk;
  input rst;
  input run;
  input e0__bus__w_stb;
  input [99:0] g0__desc;
  output [39:0] cycle;
  output log0__serve_valid;
  output [1:0] log0__serve_op;
  output [1:0] log0__serve_source;
  output [47:0] log0__serve_addr;
  output [6:0] log0__serve_bytes;
  output log0__tx_valid;
  output log0__tx_kind;
  output [15:0] log0__tx_tile;
endmodule
"""


def test_fast_shell_samples_every_input_at_the_falling_edge():
    text = cosim_fast.shell(_CORE, 1)
    negedge = re.search(r"always @\(negedge clk\) begin\n(.*?)\n  end", text, re.S).group(1)
    inputs = [name for d, name, _ in verilog_ports(_CORE, cosim_fast.CORE)
              if d == "input" and name != "clk"]
    assert inputs == ["rst", "run", "e0__bus__w_stb", "g0__desc"]
    for name in inputs:
        assert f"    {name}_q <= {name};" in negedge.splitlines(), name
        assert f"    .{name}({name}_q)" in text, f"{name} reaches the core unsampled"
    assert "reg [99:0] g0__desc_q = 0;" in text and "reg rst_q = 1;" in text


def test_fast_shell_vlt_keeps_the_clock_and_outputs_read_only(tmp_path):
    # what cosim_fast.build writes for the shell's ports
    ports = [("output", "clk", 1)] + cosim_fast.shell_ports(_CORE)
    text = simulate.write_ports_vlt(cosim_fast.SHELL, ports, tmp_path / "ports.vlt",
                                    "the shell's ports").read_text()
    for name, access in (("clk", "rd"), ("g0__desc", "rw"), ("rst", "rw"), ("cycle", "rd")):
        assert f'public_flat_{access} -module "{cosim_fast.SHELL}" -var "{name}"' in text
