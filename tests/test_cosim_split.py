# SPDX-License-Identifier: Apache-2.0
"""The pieces of the fast co-simulation split over processes (:mod:`t3hw.tools.cosim_split`)
that need no simulator: which splits are refused, the shared file's progress and the
"whole ring done" rule, the merge of the parts' results, and the part top's shell. The
split run against the one process is ``cocotb_tests/test_cosim.py``'s
``test_split_over_processes_gives_the_same_result``."""

from dataclasses import replace

import pytest

from t3hw.tools import cosim_fast
from t3hw.tools.cosim_split import merge
from t3hw.verif.exchange import Exchange, quiescent
from t3hw.verif.cosim_scenarios import REGRESSION_PARAMS, small
from t3hw.verif.simhdl.ring import RingHdl
from t3hw.verif.simhdl.top import SPLIT_MIN_LATENCY, check_parts


def test_bad_splits_are_refused_with_the_range():
    for parts in (0, 3, 5, 2.0, True):
        with pytest.raises(ValueError, match=r"parts must be a divisor of the ring size 4 "
                                             r"\(1 to 4\)"):
            check_parts(small(4), parts)
    with pytest.raises(ValueError, match=f"link_latency of at least {SPLIT_MIN_LATENCY}"):
        check_parts(replace(small(4), link_latency=SPLIT_MIN_LATENCY - 1), 2)
    check_parts(replace(small(4), link_latency=SPLIT_MIN_LATENCY), 2)
    with pytest.raises(ValueError, match="inputs_path records the inputs of one process"):
        cosim_fast.run(small(4), parts=2, inputs_path="x.bin")
    with pytest.raises(ValueError, match=r"n must be an integer in \[1, 3\]"):
        RingHdl(REGRESSION_PARAMS, n=4, bytes_per_cycle=16, latency=200, tx_bytes=4096,
                ring=4)


def test_the_shared_file_starts_with_nobody_done_and_marks_a_stop(tmp_path):
    ex = Exchange.create(tmp_path / "x", 3)
    assert ex.size(3) == (tmp_path / "x").stat().st_size
    assert ex.progress() == [(-1, 0, 0, 0, 0)] * 3
    assert not quiescent(ex.progress())
    ex.stop(1)
    assert [p[4] for p in ex.progress()] == [0, 1, 0]
    assert ex.env(2, 700).endswith("|2|3|700|8")
    ex.close()


def test_the_ring_is_done_when_every_part_is_and_every_packet_arrived():
    # (cycle, done, sent, received, stopped); part q sends to part q - 1
    done = [(10, 1, 5, 7, 0), (12, 1, 7, 4, 0), (11, 1, 4, 5, 0)]
    assert quiescent(done)
    assert not quiescent([done[0], (12, 0, 7, 4, 0), done[2]])       # a part not done
    assert not quiescent([done[0], (12, 1, 8, 4, 0), done[2]])       # a packet in flight


def _part(part, gpus, done_since, **kw):
    per = lambda v: [v + g for g in gpus]
    r = {"config": {"gpus": 4}, "mode": "fast", "memory": "fixed", "hbm": None,
         "units": {"per_chunk": 2}, "stuck": False,
         "model_error": {"any": 0, "ring": 0, "ring_cycle": 0, "gpu": per(0), "dram": per(0),
                         "cycle": per(0)},
         "cycles": {"rtl": 100 + part, "programming": 20 - part, "run": done_since + 9,
                    "events": 3, "wakes": 5},
         "sim_wall_s": 1.0 + part, "run_wall_s": 0.5 + part,
         "part": {"part": part, "parts": 2, "done_since": done_since, "late": 0,
                  "others_failed": [], "done": 1}}
    for k in ("triggers", "armed", "packets", "store_wait_cycles", "gemm_cycles",
              "tiles_done", "r_writes", "retired", "errors", "stats"):
        r[k] = per(10 * len(k))
    r.update(kw)
    return r


def test_merge_puts_the_gpus_in_ring_order_and_ends_at_the_last_done():
    a, b = _part(0, [0, 1], 90), _part(1, [2, 3], 95)
    r = merge([a, b])
    assert r["packets"] == [70, 71, 72, 73] and r["model_error"]["gpu"] == [0, 1, 2, 3]
    assert r["cycles"] == {"rtl": 101, "programming": 20, "run": 95, "events": 6, "wakes": 10}
    assert r["run_wall_s"] == 1.5 and [p["part"] for p in r["parts"]] == [0, 1]
    assert not r["model_error"]["any"]
    b["part"]["late"] = 1                        # a packet handed less than a cycle ahead
    assert merge([a, b])["model_error"]["late"] == [1]
    assert merge([a, b])["model_error"]["any"] == 1


def test_a_parts_shell_exchanges_its_packets_and_logs_ring_indices():
    core = cosim_fast.generate(small(4), 2)
    ports = cosim_fast.shell_ports(core)
    names = [name for _, name, _ in ports]
    assert "first" in names and ("output", "xlate", 1) in ports
    assert not any(name.startswith(("xout", "xin", "log")) for name in names)
    text = cosim_fast.shell(core, 2)
    for fn in ("t3hw_x_send", "t3hw_x_recv", "t3hw_x_progress"):
        assert f'import "DPI-C" function' in text and fn in text
    assert "64'(first_q + 1)" in text           # the log names GPU 1 of the part by its ring index
    whole = cosim_fast.shell(cosim_fast.generate(small(4)), 4)
    assert "DPI-C" not in whole and "first_q" not in whole


def test_parts_start_together_or_say_which_never_came(tmp_path):
    ex = Exchange.create(tmp_path / "x", 2)
    with pytest.raises(RuntimeError, match="part 0: the other parts were not ready"):
        ex.start(0, timeout_s=0.05)
    other = Exchange(tmp_path / "x", 2)
    other.start(1, timeout_s=1.0)                # part 0 is ready: part 1 goes at once
    ex.close(), other.close()
