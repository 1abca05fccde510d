# SPDX-License-Identifier: Apache-2.0
"""The register map's SystemRDL export (``rtl/t3hw_regs.rdl``) and what PeakRDL makes of it.

The export is compiled with systemrdl-compiler and compared with
:class:`t3hw.spec.regmap.RegisterMap` register by register (address, fields, offsets, widths,
access, reset values, enums), for the committed file and for a second parameter set. From
the compiled model: PeakRDL-html documentation (into a temporary folder), PeakRDL-cheader's
header (committed as ``rtl/t3hw_regs_peakrdl.h``; compiled with gcc beside the hand-written
header, with static checks that both agree, and PeakRDL's own offset testcase run), and a
PeakRDL-python register model (generated, imported, its reset values read and a staging
group written through it). ``docs/registers.md`` and ``rtl/payloads.md`` are checked against
their sources.
"""

import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from t3hw.spec.layouts import ArbPolicy
from t3hw.spec.params import EngineParams
from t3hw.spec.regmap import Access, RegisterMap
from t3hw.tools import rdl
from t3hw.tools.generate import (PAYLOADS, PEAKRDL_HEADER, HEADER, register_docs,
                                 register_rdl, _peakrdl_header)


ROOT = Path(__file__).resolve().parent.parent
RTL = ROOT / "rtl"
WIDE = EngineParams(tracker_entries=16, tile_width=32, count_width=24, cmd_width=4,
                    counter_width=64, addr_width=64, pitch_width=64, regions=64,
                    device_width=16, rows_width=24, row_bytes_width=32)

_SW = {Access.RO: "r", Access.RW: "rw", Access.W1C: "rw", Access.WO: "w"}


def _manifest_params():
    import json
    return EngineParams(**json.loads((RTL / "manifest.json").read_text())["params"])


@pytest.fixture(scope="module")
def committed():
    """The compiled ``rtl/t3hw_regs.rdl`` and the register map of ``rtl/``'s parameters."""
    return rdl.compile_rdl(RTL / rdl.RDL), RegisterMap(_manifest_params())


def _compare(root, rm):
    regs = list(root.top.registers())
    assert [r.inst_name for r in regs] == [r.name for r in rm.registers]
    for node, reg in zip(regs, rm.registers):
        assert node.absolute_address == reg.addr, reg.name
        assert node.get_property("regwidth") == 32
        assert node.get_property("t3hw_group") == reg.group
        group = rm.groups[reg.group]
        value = rm.reset_value(reg.group)
        fields = list(node.fields())
        assert [(f.inst_name, f.low, f.width) for f in fields] == \
            [(f.name, f.offset, f.width) for f in reg.fields], reg.name
        for fnode, f in zip(fields, reg.fields):
            assert fnode.get_property("sw").name == _SW[reg.access], (reg.name, f.name)
            onwrite = fnode.get_property("onwrite")
            assert (onwrite.name if onwrite else None) == \
                ("woclr" if reg.access == Access.W1C else None), (reg.name, f.name)
            assert rdl.field_access(fnode) == reg.access.value
            reset = fnode.get_property("reset")
            if value is None:
                assert reset is None, (reg.name, f.name)
            else:
                assert reset == (reg.extract(value) >> f.offset) & ((1 << f.width) - 1), \
                    (reg.name, f.name)
            shape = group.layout[f.name].shape
            enc = fnode.get_property("encode")
            if hasattr(shape, "__members__"):
                assert enc is not None and enc.type_name == shape.__name__
                assert {m.name: m.value for m in enc} == {m.name: m.value for m in shape}
            else:
                assert enc is None
            assert fnode.get_property("desc")
        assert node.get_property("desc") == group.doc


def test_committed_rdl_matches_regmap(committed):
    _compare(*committed)


def test_rdl_matches_regmap_wide_params():
    _compare(rdl.compile_rdl(register_rdl(WIDE)), RegisterMap(WIDE))


def test_rdl_reset_of_arbiter_staging(committed):
    root, rm = committed
    policy = root.find_by_path("t3hw_csr.ARB_POLICY.policy")
    assert policy.get_property("reset") == ArbPolicy(rm.params.arbiter_policy).value
    assert root.find_by_path("t3hw_csr.ID.magic").get_property("reset") == 0x54334857


def test_registers_md_from_compiled_rdl(committed):
    params = committed[1].params
    text = (ROOT / "docs" / "registers.md").read_text()
    assert text == register_docs(params)
    assert "SystemRDL" in text.splitlines()[0]
    # Every register appears with its address, every field with its access.
    for reg in committed[1].registers:
        assert f"| `{reg.addr:#05x}` | `{reg.name}` |" in text
    assert "| w1c |" in text and "| wo |" in text and "| rw |" in text


def test_html(committed, tmp_path):
    from peakrdl_html import HTMLExporter
    HTMLExporter().export(committed[0], str(tmp_path / "html"))
    assert (tmp_path / "html" / "index.html").is_file()
    blob = "".join(p.read_text(errors="replace") for p in (tmp_path / "html").rglob("*")
                   if p.is_file() and p.suffix in (".json", ".html", ".js"))
    for name in ("ARB_POLICY", "CSR_ERRORS", "ARBITER_STARVED", "TRACK_RESULT_OP",
                 "DMA_IRQ_ENABLE", "ADDRMAP_CAPTURE_ADDR_LO", "DEVICE_ID"):
        assert name in blob


def test_peakrdl_header_committed_and_deterministic():
    text = register_rdl(_manifest_params())
    assert (RTL / PEAKRDL_HEADER).read_text() == _peakrdl_header(text) == _peakrdl_header(text)
    assert (RTL / PEAKRDL_HEADER).read_text().startswith("/* Generated by `t3hw generate`")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_peakrdl_header_compiles_and_agrees(committed, tmp_path):
    root, rm = committed
    for name in (PEAKRDL_HEADER, HEADER):
        shutil.copy(RTL / name, tmp_path / name)
    checks = []
    for reg in rm.registers:
        group = rm.groups[reg.group]
        value = rm.reset_value(reg.group)
        checks.append(f"offsetof(t3hw_csr_t, {reg.name}) == T3HW_{reg.name}")
        for f in reg.fields:
            ours, theirs = f"T3HW_{reg.name}_{f.name.upper()}", \
                f"T3HW_CSR__{reg.name}__{f.name.upper()}"
            checks += [f"{theirs}_bp == {ours}_SHIFT", f"{theirs}_bw == {ours}_WIDTH",
                       f"{theirs}_bm == {ours}_MASK"]
            if value is not None:
                field_reset = (reg.extract(value) >> f.offset) & ((1 << f.width) - 1)
                checks.append(f"{theirs}_reset == {field_reset:#x}ull")
        del group
    src = ["#include <stddef.h>", "#include <stdio.h>", f'#include "{HEADER}"',
           f'#include "{PEAKRDL_HEADER}"', ""]
    src += [f'_Static_assert({c}, "{c}");' for c in checks]
    src += ["", "int main(void) {",
            '    printf("%zu\\n", sizeof(t3hw_csr_t));', "    return 0;", "}", ""]
    (tmp_path / "agree.c").write_text("\n".join(src))
    exe = tmp_path / "agree"
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                    str(tmp_path / "agree.c")], check=True, cwd=tmp_path)
    size = int(subprocess.run([str(exe)], check=True, capture_output=True,
                              text=True).stdout)
    assert size == rm.registers[-1].addr + 4
    # PeakRDL-cheader's own testcase (struct offsets), built and run.
    from peakrdl_cheader.exporter import CHeaderExporter
    CHeaderExporter().export(root.top, str(tmp_path / "tc.h"), testcase=True)
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", "-o", str(tmp_path / "tc"),
                    str(tmp_path / "tc.h.test.c")], check=True, cwd=tmp_path)
    subprocess.run([str(tmp_path / "tc")], check=True)


def test_peakrdl_python_model(committed, tmp_path):
    from peakrdl_python.exporter import PythonExporter
    root, rm = committed
    PythonExporter().export(root.top, str(tmp_path), skip_test_case_generation=True)
    sys.path.insert(0, str(tmp_path))
    try:
        for mod in [m for m in sys.modules if m == "t3hw_csr" or m.startswith("t3hw_csr.")]:
            del sys.modules[mod]
        reg_model = importlib.import_module("t3hw_csr.reg_model")
        sim_mod = importlib.import_module("t3hw_csr.sim")
        callbacks = importlib.import_module("t3hw_csr.lib")
    finally:
        sys.path.remove(str(tmp_path))
    sim = sim_mod.Simulator(address=0)
    model = reg_model.RegModel(callbacks=callbacks.NormalCallbackSet(
        read_callback=sim.read, write_callback=sim.write))
    # Reset values (the fields' defaults) and a write-read through the model's simulator.
    for reg in rm.registers:
        value = rm.reset_value(reg.group)
        node = getattr(model, reg.name)
        by_name = {fld.inst_name: fld for fld in node.fields}   # (`width` is an attribute)
        for f in reg.fields:
            default = by_name[f.name].default
            expected = (None if value is None
                        else (reg.extract(value) >> f.offset) & ((1 << f.width) - 1))
            assert (default if not hasattr(default, "value") else default.value) == expected, \
                (reg.name, f.name)
        if reg.access == Access.RW:
            node.write(reg.mask)
            assert node.read() == reg.mask, reg.name
    # Writing the staging arbiter configuration by fields through the model gives the words
    # RegisterMap.encode gives.
    written = {}
    rec = reg_model.RegModel(callbacks=callbacks.NormalCallbackSet(
        read_callback=lambda addr, width, accesswidth: written.get(addr, 0),
        write_callback=lambda addr, width, accesswidth, data: written.__setitem__(addr, data)))
    fields = {"policy": ArbPolicy.COMPUTE_FIRST, "threshold": 17, "saturation": 99,
              "window_log2": 9}
    enum_cls = type(rec.ARB_POLICY.policy.read())
    rec.ARB_POLICY.write_fields(policy=enum_cls.COMPUTE_FIRST,
                                **{k: v for k, v in fields.items() if k != "policy"})
    (reg, word), = [(r, w) for r, w in rm.encode("ARB", **fields) if r.name == "ARB_POLICY"]
    assert written[reg.addr] == word


def _verilog_ports(path):
    """``{port: width}`` of the first module of a generated Verilog file."""
    text = path.read_text()
    head = text[text.index("\nmodule "):]
    head = head[:head.index("endmodule")]
    ports = {}
    for mo in re.finditer(r"^\s*(?:input|output)\s+(?:wire\s+|reg\s+)?(?:\[(\d+):0\]\s+)?"
                          r"(\\?\S+?)\s*;", head, re.M):
        ports[mo.group(2)] = int(mo.group(1)) + 1 if mo.group(1) else 1
    return ports


def test_payloads_md_widths_match_verilog():
    text = (RTL / PAYLOADS).read_text()
    assert text.startswith("*Generated by `t3hw generate`")
    seen = 0
    for module, body in re.findall(r"^## `(\w+)`\n(.*?)(?=^## |\Z)", text, re.M | re.S):
        ports = _verilog_ports(RTL / f"{module}.v")
        for port, width, table in re.findall(
                r"^### `(\w+)` \((?:in|out), (\d+) bits\)\n\n(.*?)(?=^### |\Z)", body,
                re.M | re.S):
            assert ports[port] == int(width), (module, port)
            rows = re.findall(r"^\| `[^`]+` \| [\d:]+ \| (\d+) \| (\d+) \|", table, re.M)
            assert rows and sum(int(w) for _, w in rows) <= int(width)
            assert all(int(o) + int(w) <= int(width) for o, w in rows)
            seen += 1
    assert seen >= 20
    assert "| `kind` | 20 | 20 | 1 | `WriteKind`: `STORE` = 0, `UPDATE` = 1 |" in text
