# SPDX-License-Identifier: Apache-2.0
"""The co-simulation's GEMM alone (:mod:`sim_models.gemm_alone`): every load and store of
the GPU's tiles goes through the DRAM port, at most one per cycle, and near-memory updates
cost the HBM2 DRAM more than plain stores."""

import pytest

from sim_models.collective import Plan
from sim_models.gemm_alone import gemm_alone
from t3hw.verif.cosim_scenarios import small


def test_every_load_and_store_of_the_gpus_tiles_goes_through_the_port():
    cfg = small(4)
    plan = Plan(cfg)
    prod, burst = Plan(cfg).producers[1], cfg.params.burst_bytes
    loads = sum(-(-prod.dispatch(t) // burst) for t in prod.order())
    stores = sum(len(plan.tile_stores(1, t)) for t in prod.order())
    r = gemm_alone(cfg, gpu=1)
    assert (r["loads"], r["stores"]) == (loads, stores)
    assert r["cycles"] >= loads + stores                 # one request per cycle at most


def test_updates_cost_the_hbm_dram_more_than_stores():
    cfg = small(4, memory="hbm")
    plain, upd = gemm_alone(cfg), gemm_alone(cfg, updates=True)
    assert plain["loads"] == upd["loads"] and plain["stores"] == upd["stores"]
    assert upd["cycles"] > plain["cycles"]


def test_a_gpu_outside_the_ring_is_refused():
    with pytest.raises(ValueError, match=r"gpu must be in \[0, 3\], not 4"):
        gemm_alone(small(4), gpu=4)
