# SPDX-License-Identifier: Apache-2.0
"""The native harnesses of ``make bench`` (:mod:`t3hw.tools.native`): the co-simulation's
tops in a C++ loop with no Python, whose speed is the co-simulation's ceiling: the exact
mode's system top on random inputs, and the fast mode's top replaying a run's inputs."""

import dataclasses
import itertools
import random

import numpy as np
import pytest

from sim_models.cosim import CosimConfig
from t3hw.hw.system import System
from t3hw.tools import cosim, cosim_fast, generate, native
from t3hw.tools.synth import verilog_ports
from t3hw.verif.cosim_scenarios import small


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
    # The co-simulation's top holds the engine once and instantiates it (cosim.ENGINE_MODULE);
    # rtl/t3hw_system.v's generator (System) writes the engines out one module each. Both
    # give the same outputs, cycle for cycle, on the same random inputs.
    text = cosim._system_verilog(2, CosimConfig(gpus=2).params)
    assert text.count(f"module {cosim.ENGINE_MODULE}(") == 1
    assert text.count(f"  {cosim.ENGINE_MODULE} e") == 2
    per_engine = generate._header("system", cosim.MODULE, CosimConfig(gpus=2).params) + \
        generate.convert(System(CosimConfig(gpus=2).params, n=2), cosim.MODULE)
    assert cosim.ENGINE_MODULE not in per_engine
    exe2 = native.build(CosimConfig(gpus=2), root=tmp_path / "system", verilog=per_engine)
    assert native.run(exe2, cycles=3000, seed=1)["checksum"] == a["checksum"]
    assert native.run(exe2, cycles=3000, seed=2)["checksum"] == b["checksum"]


def test_bits_reads_across_words():
    """The harness' input decoding: any field of up to 64 bits, wherever it falls."""
    rng = random.Random(7)
    words = [rng.getrandbits(64) for _ in range(3)]
    value = sum(w << (64 * i) for i, w in enumerate(words))
    for offset, width in ((0, 64), (3, 5), (60, 10), (64, 1), (100, 64), (127, 1), (130, 62)):
        expr = native._bits("w", offset, width).replace("ULL", "")
        got = eval(expr, {"w": words}) & ((1 << 64) - 1)      # C++'s uint64_t arithmetic
        assert got == (value >> offset) & ((1 << width) - 1), (offset, width)


def test_the_fast_top_replays_a_recorded_run(tmp_path):
    """The fast co-simulation's top in a C++ loop, fed the inputs a run recorded, repeats
    that run: the same cycles, tiles, packets, result bytes and store waits per GPU, and a
    log of DRAM serves and packets identical byte for byte. The run hands out tiles while
    it runs (more tiles than compute units), so the replay applies records mid-run; without
    the record that starts the run, nothing runs; a damaged recording is refused."""
    cfg = dataclasses.replace(small(2), tokens=256)
    inputs, log = tmp_path / "inputs.bin", tmp_path / "run.log"
    r = cosim_fast.run(cfg, inputs_path=inputs, log_path=log)
    assert r["numerics_ok"] and r["cycles"]["events"] > 1
    exe = native.build_fast(cfg)
    again = tmp_path / "replay.log"
    x = native.replay_fast(exe, inputs, log_path=again)
    assert native.fast_differences(x, r) == []
    assert x["done"] == 1 and not x["stuck"] and x["cycles"] == r["cycles"]["run"] > 0
    assert again.read_bytes() == log.read_bytes() and log.stat().st_size > 0
    assert native.build_fast(cfg) == exe        # cached

    core = (cosim_fast.build_dir(cfg) / "rtl" / f"{cosim_fast.CORE}.v").read_text()
    latched = [(n, w) for d, n, w in cosim_fast.shell_ports(core) if d == "input"]
    offsets = dict(zip([n for n, _ in latched],
                       itertools.accumulate([64] + [w for _, w in latched])))
    records = np.fromfile(inputs, dtype="<u8").reshape(x["records"], -1)
    assert records.shape[1] == cosim_fast.input_record_words(latched)

    def bit(row, name):
        word, shift = divmod(offsets[name], 64)
        return int(row[word]) >> shift & 1

    start = next(i for i, row in enumerate(records) if bit(row, "run"))
    assert start + 1 < x["applied"] < x["records"]    # tiles handed out during the run; the
    cut = tmp_path / "cut.bin"                        # read-back after it is not replayed
    records[:start].tofile(cut)
    y = native.replay_fast(exe, cut, limit=20000)
    assert y["stuck"] and y["cycles"] == 0 and y["done"] == 0
    assert native.fast_differences(y, r)[0].startswith("stuck")

    for name, data in (("short.bin", records.tobytes()[:-8]),          # a word missing
                       ("order.bin", records[[0, 2, 1]].tobytes())):   # edges out of order
        bad = tmp_path / name
        bad.write_bytes(data)
        with pytest.raises(RuntimeError, match="not a record file|out of order"):
            native.replay_fast(exe, bad)
    with pytest.raises(ValueError, match="exact mode"):
        cosim.run(cfg, mode="exact", model=False, inputs_path=inputs)


@pytest.mark.long
def test_the_profile_guided_harness_repeats_a_recorded_run(tmp_path):
    """The profile-guided native harness (``make bench``'s ``pgo`` figures), trained on the
    inputs the profile-guided top's training run recorded, repeats a run of the plain
    build: the same cycles, tiles, packets, result bytes, store waits and log."""
    import json
    from t3hw.tools import pgo
    cfg = dataclasses.replace(small(2), tokens=256)
    inputs, log = tmp_path / "inputs.bin", tmp_path / "run.log"
    r = cosim_fast.run(cfg, inputs_path=inputs, log_path=log)
    exe = native.build_fast(cfg, pgo=True)
    assert exe != native.build_fast(cfg)
    info = json.loads((exe.parent / pgo.MARKER).read_text())
    assert info["training"]["policy"] == "round_robin" and info["counts"]
    again = tmp_path / "replay.log"
    x = native.replay_fast(exe, inputs, log_path=again)
    assert native.fast_differences(x, r) == []
    assert again.read_bytes() == log.read_bytes() and log.stat().st_size > 0
    assert native.build_fast(cfg, pgo=True) == exe        # cached
