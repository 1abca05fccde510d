# SPDX-License-Identifier: Apache-2.0
"""``make bench``'s table (:func:`t3hw.tools.bench._table`): each co-simulation beside the
native speed of its own top, and the rows of older runs (measured before the fast top had
a native figure of its own) labelled with the top they measured."""

from t3hw.tools import bench


def _cosim(n, *, fast_native):
    c = {"config": {"gpus": n, "model": "Mega-GPT-2", "sublayer": "OP", "tp": 16,
                    "tokens": 32 * n, "collective": "rs", "policy": "t3_mca"},
         "rtl_cycles": 1000, "model_cycles": 990, "gap": 0.01, "numerics_ok": True,
         "build_s": 10.0, "run_wall_s": 0.5, "replay_wall_s": 0.1,
         "rtl_cycles_per_s": 1600, "events": 7,
         "exact": {"build_s": 5.0, "run_wall_s": 2.0, "rtl_cycles_per_s": 500}}
    if fast_native:
        c.update(native_cycles_per_s=2000, native_cycles=1001, native_wall_s=0.5,
                 native_build_s=3.0, of_native=0.8, run_of_native=0.95)
        c["exact"].update(native_cycles_per_s=4000, native_build_s=4.0, of_native=0.125)
    else:                                   # the old schema: the exact top's figure on top
        c.update(native_cycles_per_s=4000, native_build_s=4.0, of_native=0.4)
    return c


def test_each_mode_beside_its_own_tops_native_speed():
    results = {"machine": "m",
               "tracker": {"verilator_build_s": 1.0, "speedup_vs_amaranth_sim": 8.0,
                           "verilator": {"events_per_s": 10, "cycles_per_s": 20,
                                         "events": 30},
                           "amaranth_sim": {"events_per_s": 1, "cycles_per_s": 2,
                                            "events": 3}},
               "cosim": {"n4": _cosim(4, fast_native=True),
                         "n16": _cosim(16, fast_native=False)}}
    rows = bench._table(results).splitlines()
    fast4 = [r for r in rows if r.startswith("| the same 4-engine fast top")]
    exact4 = [r for r in rows if r.startswith("| the 4-engine system top of the exact mode")]
    assert len(fast4) == 1 and "2,000 cycles/s" in fast4[0]
    assert "fast mode) runs at 80.0% of it, its run alone at 95.0%" in fast4[0]
    assert len(exact4) == 1 and "4,000 cycles/s" in exact4[0]
    assert "(exact mode) runs at 12.5% of it" in exact4[0]
    old16 = [r for r in rows if r.startswith("| the 16-engine system top of the exact mode")]
    assert len(old16) == 1 and "(fast mode) runs at 40.0% of it" in old16[0]
    assert not any(r.startswith("| the same 16-engine fast top") for r in rows)


def test_the_split_run_beside_the_one_process():
    c = _cosim(4, fast_native=True)
    c["split"] = {"parts": 2, "build_s": 30.0, "run_wall_s": 0.5, "replay_wall_s": 0.1,
                  "rtl_cycles_per_s": 3000, "run_cycles_per_s": 3600, "of_native": 1.5}
    rows = bench._cosim_row(c)
    split = [r for r in rows if "split over 2 processes" in r]
    assert len(split) == 1 and "| 3,000 RTL cycles/s (run 0.5 s, 3,600 cycles/s" in split[0]
    assert "150.0% of the one-process fast top's native speed" in split[0]
    assert f"{3000 / c['rtl_cycles_per_s']:.2f}x the one process" in split[0]
    assert not any("split" in r for r in bench._cosim_row(_cosim(4, fast_native=True)))


def test_the_profile_guided_runs_beside_the_plain_builds():
    """The ``pgo`` figures (``make bench``'s profile-guided builds) as three rows, each
    against the plain build's figure of the same run; the medians name their runs."""
    c = _cosim(4, fast_native=True)
    c["speeds"] = [1500, 1600, 1700]
    split = {"parts": 2, "build_s": 40.0, "run_wall_s": 0.4, "replay_wall_s": 0.1,
             "rtl_cycles_per_s": 3200, "run_cycles_per_s": 4000, "of_native": 1.28,
             "speeds": [3100, 3200, 3300]}
    c["pgo"] = {"build_s": 50.0, "run_wall_s": 0.4, "replay_wall_s": 0.1,
                "rtl_cycles_per_s": 2000, "speeds": [1900, 2000, 2100],
                "native_cycles_per_s": 2500, "native_build_s": 60.0, "of_native": 0.8,
                "split": split}
    rows = bench._cosim_row(c)
    fast = [r for r in rows if r.startswith("| co-sim, 4 engines (")]
    assert len(fast) == 1 and "median of 3: 1,500, 1,600, 1,700" in fast[0]
    guided = [r for r in rows if "profile-guided" in r]
    assert len(guided) == 3
    assert "| 2,000 RTL cycles/s" in guided[0] and "1.25x the plain build |" in guided[0]
    assert "median of 3: 1,900, 2,000, 2,100" in guided[0]
    assert "**3,200 RTL cycles/s**" in guided[1] and "median of 3: 3,100, 3,200, 3,300" \
        in guided[1] and "128.0% of the profile-guided one-process top's native" in guided[1]
    assert "2,500 cycles/s" in guided[2] and "1.25x the plain build's |" in guided[2]
    del c["pgo"]
    assert not any("profile-guided" in r for r in bench._cosim_row(c))
