# SPDX-License-Identifier: Apache-2.0
"""The profile-guided build's settings (:mod:`t3hw.tools.pgo`); the build itself is run by
``cocotb_tests/test_cosim.py::test_profile_guided_build_gives_the_same_result``."""

import pytest

from sim_models.cosim import CosimConfig
from t3hw.tools import pgo
from t3hw.verif.simhdl.top import hardware_key


def _vars(args):
    return dict(a.split("=", 1) for a in args)


def test_each_stage_compiles_every_object_with_its_flags_and_no_cache():
    assert pgo.make_args(None) == ()
    gen, use = _vars(pgo.make_args("generate")), _vars(pgo.make_args("use"))
    for v, flag in ((gen, "-fprofile-generate"), (use, "-fprofile-use")):
        assert v["OBJCACHE"] == ""
        for k in ("OPT_FAST", "OPT_SLOW", "OPT_GLOBAL"):
            assert flag in v[k].split() and "-O2" in v[k].split(), (k, v[k])
    assert gen["LDFLAGS"] == "-fprofile-generate" and "LDFLAGS" not in use
    assert "-fprofile-partial-training" in use["OPT_FAST"].split()
    with pytest.raises(ValueError, match=r"stage must be one of \('generate', 'use'\) or "
                                         r"None, not 'train'"):
        pgo.make_args("train")


@pytest.mark.parametrize("gpus,tokens,parts", [(2, 64, 1), (4, 128, 2), (4, 1024, 1),
                                               (8, 2048, 4), (8, 1024, 8)])
def test_training_keeps_the_hardware_and_changes_the_workload(gpus, tokens, parts):
    """The training scenario shares the build (its hardware key), has the fewest tokens
    that do, and runs round-robin, the all-reduce and another seed."""
    cfg = CosimConfig(gpus=gpus, tokens=tokens)
    train = pgo.training_config(cfg, parts)
    assert hardware_key(train, parts) == hardware_key(cfg, parts)
    step = gpus * cfg.tile_m
    assert train.tokens % step == 0 and train.tokens <= tokens
    if train.tokens > step:
        from dataclasses import replace
        fewer = replace(train, tokens=train.tokens - step)
        assert hardware_key(fewer, parts) != hardware_key(cfg, parts)
    assert (train.policy, train.collective, train.seed) == ("round_robin", "allreduce",
                                                             cfg.seed + 1)


def test_training_falls_back_to_the_reduce_scatter_where_the_all_reduce_does_not_fit():
    """T-NLG at 8192 tokens on a whole ring of 16 with the engines of ``t3hw paper --rtl
    --full``: the size that keeps the hardware key is more than the tables hold for the
    all-reduce."""
    from t3hw.tools.paper_rtl import configs
    cfg = configs(full=True, only=[13], policies=("t3_mca",))[0]
    train = pgo.training_config(cfg)
    assert hardware_key(train) == hardware_key(cfg)
    assert (train.policy, train.collective, train.seed) == ("round_robin", "rs", cfg.seed + 1)
    from dataclasses import replace
    with pytest.raises(ValueError, match="tokens must be a multiple"):
        replace(train, collective="allreduce")


def test_one_gpu_tops_of_the_full_table_share_a_build_and_train_small():
    """GPU 0 of each symmetric ring of ``t3hw paper --rtl --full``: every sub-layer of a
    ring size on one build (the write buffer's depth is :data:`WB_DEPTH_ONE_MIN` for
    Mega-GPT-2's 12,288 tiles and T-NLG's 17,152), trained on the ring's fewest tokens."""
    from t3hw.tools.paper_rtl import configs
    from t3hw.verif.simhdl.top import WB_DEPTH_ONE_MIN
    keys = {}
    for cfg in configs(full=True, policies=("t3_mca",)):
        key = hardware_key(cfg, cfg.gpus)
        assert key["wb_depth"] == WB_DEPTH_ONE_MIN
        keys.setdefault(cfg.gpus, key)
        assert key == keys[cfg.gpus], (cfg.model, cfg.tp, cfg.sublayer)
        train = pgo.training_config(cfg, cfg.gpus)
        assert train.tokens == cfg.gpus * cfg.tile_m and train.collective == "allreduce"
    assert sorted(keys) == [8, 16]


def test_a_training_run_that_wrote_no_profile_is_an_error(tmp_path):
    (tmp_path / "Vtop__ALL.o").write_bytes(b"")
    with pytest.raises(RuntimeError, match="the training run wrote no profile in"):
        pgo.record(tmp_path, CosimConfig(gpus=2, tokens=64), 1.0)
    assert not (tmp_path / pgo.MARKER).exists()


def test_clean_keeps_the_counts_for_the_optimised_compile(tmp_path):
    names = ("a.o", "Vtop__pch.h.fast.gch", "Vtop__ALL.a", "a.gcda", "a.cpp", "Vtop.mk")
    for name in names:
        (tmp_path / name).write_bytes(b"")
    pgo.clean(tmp_path, counts=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Vtop.mk", "a.cpp", "a.gcda"]
    pgo.clean(tmp_path, counts=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Vtop.mk", "a.cpp"]


def test_build_compiles_trains_records_and_compiles_again(tmp_path):
    """:func:`pgo.build`: everything old removed, the instrumented compile, the training
    (whose counts the optimised compile keeps), the marker, the optimised compile."""
    exe = tmp_path / "sim"
    for name in ("old.o", "old.gcda", pgo.MARKER, "sim"):
        (tmp_path / name).write_bytes(b"")
    steps = []

    def compile_stage(stage):
        assert not exe.exists() and not list(tmp_path.glob("*.o"))
        steps.append(stage)
        (tmp_path / "a.o").write_bytes(b"")
        exe.write_bytes(b"")
        return stage

    def train():
        assert not (tmp_path / "old.gcda").exists() and not (tmp_path / pgo.MARKER).exists()
        steps.append("train")
        (tmp_path / "a.gcda").write_bytes(b"")

    cfg = CosimConfig(gpus=2, tokens=64)
    assert pgo.build(tmp_path, exe, compile_stage, train, cfg) == "use"
    assert steps == ["generate", "train", "use"]
    import json
    info = json.loads((tmp_path / pgo.MARKER).read_text())
    assert info["counts"] == ["a.gcda"] and info["training"] == cfg.to_dict()
