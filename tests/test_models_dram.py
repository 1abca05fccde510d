# SPDX-License-Identifier: Apache-2.0
"""The NMC DRAM model: functional memory, near-memory update, counters, bandwidth queue."""

import math

import numpy as np
import pytest

from sim_models.dram import TRAFFIC_CLASSES, DramModel
from sim_models.engine_model import Arbiter


def test_update_is_fp16_add_in_memory():
    d = DramModel(size_bytes=4096)
    base = d.alloc("x", (4, 8), np.float16)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 8)).astype(np.float16)
    b = rng.standard_normal((4, 8)).astype(np.float16)
    d.write(base, a, cls="gemm_writes")
    d.update(base, b, cls="rs_writes")
    np.testing.assert_array_equal(d.tensor("x"), a + b)      # one FP16 rounding
    assert d.traffic["gemm_writes"] == a.nbytes
    assert d.traffic["rs_writes"] == b.nbytes                # an update counts once, as a write
    got = d.read(base, a.nbytes, cls="rs_reads").view(np.float16).reshape(4, 8)
    np.testing.assert_array_equal(got, a + b)
    assert d.traffic["rs_reads"] == a.nbytes


def test_fp32_tensor_and_alignment():
    d = DramModel(size_bytes=1024, burst_bytes=64)
    d.alloc("a", (3,), np.float16)
    base = d.alloc("b", (4,), np.float32)
    assert base == 64
    d.update(base, np.ones(4, np.float32), cls="rs_writes")
    np.testing.assert_array_equal(d.tensor("b"), np.ones(4))


@pytest.mark.parametrize("kwargs, match", [
    ({"size_bytes": -1}, "size_bytes"), ({"bandwidth_gbs": 0}, "bandwidth_gbs"),
    ({"latency_cycles": 0}, "latency_cycles"), ({"burst_bytes": 1.5}, "burst_bytes"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DramModel(**kwargs)


def test_bad_accesses():
    d = DramModel(size_bytes=128)
    with pytest.raises(ValueError, match="cls"):
        d.count("other", 1)
    with pytest.raises(ValueError, match="access"):
        d.read(100, 64, cls="rs_reads")
    with pytest.raises(ValueError, match="dtype"):
        d.alloc("i", (4,), np.int32)
    with pytest.raises(ValueError, match="stream"):
        d.request("x", 1, "gemm_reads")


def test_bandwidth_queue_closed_form():
    d = DramModel(bandwidth_gbs=1000.0, freq_ghz=1.4, latency_cycles=350, burst_bytes=256)
    assert d.bytes_per_cycle == pytest.approx(1000 / 1.4)
    total = 10 * d.bytes_per_cycle * 100          # ten steps' worth
    d.request("compute", total, "gemm_reads")
    arb = Arbiter(policy="compute_first")
    steps = 0
    while d.backlog["compute"] > 0:
        c, m = d.step(100, arb)
        assert c <= d.bytes_per_cycle * 100 + 1e-6 and m == 0
        steps += 1
    assert steps == 10                            # bandwidth-limited: bytes / BW
    assert d.busy_cycles == pytest.approx(1000)
    assert d.traffic["gemm_reads"] == int(total)
    # Little's law: a full-rate step leaves bytes/cycle * latency / burst requests in service
    assert d.occupancy == math.ceil(d.bytes_per_cycle * 350 / 256)
    assert d.saturation == pytest.approx(d.bytes_per_cycle * 350 / 256)


def test_classes_are_the_report_order():
    assert TRAFFIC_CLASSES == ("gemm_reads", "gemm_writes", "rs_reads", "rs_writes",
                               "ag_reads", "ag_writes")
