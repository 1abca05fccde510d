# SPDX-License-Identifier: Apache-2.0
"""Fast amaranth.sim tests of the DMA against its reference model (no Verilog, no Verilator).

The stimulus, the scoreboard and the scenarios are the cocotb testbench's
(:mod:`t3hw.verif.dma_env`); only the port access differs.
"""

import random

import pytest

from sim_models.dma import DmaModel, walk
from t3hw.verif import dma_env as dma_model
from t3hw.verif.dma_env import DmaEnv
from t3hw.hw.dma import Dma
from t3hw.verif.amsim import run_env
from t3hw.spec.params import EngineParams


PARAMS = {
    # One outstanding read, one-deep ready queue, bursts of 8 B, small fields (max shape fits).
    "tiny": EngineParams(tracker_entries=4, tile_width=4, cmd_width=2, addr_width=16,
                         device_width=2, dma_ready_depth=1, burst_bytes=8, max_outstanding=1,
                         rows_width=2, row_bytes_width=6, pitch_width=8),
    "mid":  EngineParams(cmd_width=4, addr_width=32, dma_ready_depth=4, burst_bytes=16,
                         max_outstanding=4, rows_width=4, row_bytes_width=8, pitch_width=12),
}


def _simulate(params, body, *, seed=1, **env_args):
    """Run ``body(env, cycle)`` on a fresh :class:`~t3hw.hw.dma.Dma` from reset, after checking
    that the table's reset sweep lasts one cycle per descriptor."""
    async def after_sweep(env, cycle):
        sweep = await dma_model.reset_sweep(env, cycle)
        assert sweep == params.dma_descriptors
        await body(env, cycle)

    return run_env(Dma(params), DmaEnv(params, random.Random(seed), **env_args), after_sweep)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_random_against_model(name, seed):
    """Random descriptors, triggers, errors, back-pressure and latency; every read and packet
    matches the model field by field."""
    env = _simulate(PARAMS[name], dma_model.drain, seed=seed, jobs=120, errors=0.08)
    assert env.triggered >= 120 * 0.9 and env.bursts > 120
    assert env.max_in_flight == PARAMS[name].max_outstanding


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_every_error_bit(name):
    _simulate(PARAMS[name], dma_model.provoke_errors)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_rejects_in_one_cycle_count_twice(name):
    _simulate(PARAMS[name], dma_model.coincident_rejects)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_full_ready_queue_back_pressures_triggers(name):
    _simulate(PARAMS[name], dma_model.full_queue)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_program_goes_before_a_trigger(name):
    """A descriptor write and a trigger of it presented together: the write first."""
    _simulate(PARAMS[name], dma_model.program_first)


def test_back_to_back_descriptors_read_every_cycle():
    got = []

    async def body(env, cycle):
        got.extend(await dma_model.back_to_back(env, cycle))

    _simulate(PARAMS["mid"], body)
    assert len(got) == 3 * 2 * 3


def test_walk_short_last_burst_and_wrap():
    p = PARAMS["tiny"]
    desc = dict(rows=2, row_bytes=20, pitch=0x100, src=0xfff0, dst=0x10)
    assert list(walk(p, desc)) == [
        (0xfff0, 0x10, 8), (0xfff8, 0x18, 8), (0x0000, 0x20, 4),
        (0x00f0, 0x110, 8), (0x00f8, 0x118, 8), (0x0100, 0x120, 4),
    ]


def test_model_rejects_and_counts():
    m = DmaModel(PARAMS["tiny"])
    assert not m.trigger(1) and m.errors["bad_descriptor"] and m.stats["rejected"] == 1
    assert not m.program(1, valid=1, rows=0, row_bytes=4)
    assert m.errors["bad_program"] and 1 not in m.table
    assert m.program(1, valid=1, rows=1, row_bytes=9, src=4, dst=8, device=3, tile=7, op=1)
    assert m.trigger(1)
    first, second = m.next_read(), m.next_read()
    assert (first[0].addr, first[0].bytes, first[0].tag) == (4, 8, 0)
    assert (second[0].addr, second[0].bytes, second[0].tag) == (12, 1, 1)
    assert m.next_read() is None
    assert m.response(0)[0].addr == 8 and not m.errors["bad_response"]
    assert m.response(0)[0].addr == 16 and m.errors["bad_response"]   # expected tag 1


@pytest.mark.parametrize("change, message", [
    (dict(burst_bytes=48), r"burst_bytes must be a power of two in \[1, 4096\], not 48"),
    (dict(max_outstanding=0), r"max_outstanding must be an integer in \[1, 256\], not 0"),
    (dict(dma_ready_depth=0), r"dma_ready_depth must be an integer in \[1, 4096\], not 0"),
    (dict(addr_width=16, pitch_width=17), r"pitch_width must be in \[1, 16\] \(addr_width\)"),
])
def test_dma_params_validated(change, message):
    with pytest.raises(ValueError, match=message):
        EngineParams(**change)


def test_descriptor_table_follows_cmd_width():
    assert EngineParams(cmd_width=5).dma_descriptors == 32
    assert EngineParams(max_outstanding=1).read_tag_width == 1
    assert EngineParams(max_outstanding=9).read_tag_width == 4
