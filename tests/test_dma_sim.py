# SPDX-License-Identifier: Apache-2.0
"""Fast amaranth.sim tests of the DMA against its reference model (no Verilog, no Verilator).

The stimulus, the scoreboard and the scenarios are the cocotb testbench's
(:mod:`t3hw.verif.dma_env`, :mod:`t3hw.verif.dma_scenarios`); only the port access differs.
"""

import random

import pytest

from sim_models.dma import DmaModel, refusal, walk
from t3hw.verif import dma_scenarios as dma_model
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
    print(f"seed={seed}: {env.triggered} descriptors, {env.bursts} packets, "
          f"events {env.events}, stats {env.model.stats}")
    assert env.triggered >= 120 * 0.9 and env.bursts > 120
    assert env.max_in_flight == PARAMS[name].max_outstanding
    # the packet queue full: packets held back hold the walk, not the read returns
    assert env.max_waiting == PARAMS[name].max_outstanding
    assert env.model.stats["aborted"] > 0


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_every_error_bit(name):
    _simulate(PARAMS[name], dma_model.provoke_errors)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_busy_descriptor_is_not_rewritten(name):
    """A rewrite and an invalidation of a descriptor with queued triggers are refused
    (``desc_busy``, counter, capture); the queued triggers run the old descriptor."""
    _simulate(PARAMS[name], dma_model.busy_rewrite)


@pytest.mark.parametrize("fault", ["error", "tag"])
@pytest.mark.parametrize("name", sorted(PARAMS))
def test_bad_return_aborts_its_descriptor(name, fault):
    """An error bit or a wrong tag on a descriptor's second return: its first packet only,
    the next descriptor whole (``read_error`` / ``bad_response``, ``aborted``, capture)."""
    _simulate(PARAMS[name], lambda env, cycle: dma_model.abort_mid_descriptor(env, cycle,
                                                                                fault))


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_full_ready_queue_back_pressures_triggers(name):
    _simulate(PARAMS[name], dma_model.full_queue)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_program_goes_before_a_trigger(name):
    """A descriptor write and a trigger of it presented together: the write first."""
    _simulate(PARAMS[name], dma_model.program_first)


def test_back_to_back_descriptors_read_every_cycle_with_one_gap_between():
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
    assert not m.trigger(1, tile=5) and m.errors["bad_descriptor"] and m.stats["rejected"] == 1
    assert m.capture == {"index": 1, "tile": 5, "addr": 0}
    assert not m.program(1, valid=1, rows=0, row_bytes=4)
    assert m.errors["bad_program"] and 1 not in m.table and m.stats["bad_program"] == 1
    assert m.program(1, valid=1, rows=1, row_bytes=9, src=4, dst=8, device=3, tile=7, op=1)
    assert m.trigger(1)
    assert not m.program(1, valid=0) and m.errors["desc_busy"] and m.stats["desc_busy"] == 1
    first, second = m.next_read(), m.next_read()
    assert (first[0].addr, first[0].bytes, first[0].tag) == (4, 8, 0)
    assert (second[0].addr, second[0].bytes, second[0].tag) == (12, 1, 1)
    assert m.next_read() is None
    assert m.program(1, valid=1, rows=1, row_bytes=9, src=4, dst=8, device=3, tile=7, op=1)
    assert m.response(0)[0].addr == 8 and not m.errors["bad_response"]
    assert m.response(0) is None and m.errors["bad_response"]   # expected tag 1
    assert m.stats["aborted"] == 1 and m.capture == {"index": 1, "tile": 7, "addr": 12}


@pytest.mark.parametrize("desc, reason", [
    (dict(rows=0, row_bytes=1), "bad_program"),
    (dict(rows=2, row_bytes=4, pitch=3), "bad_pitch"),
    (dict(rows=1, row_bytes=4, pitch=0), None),                 # one row never overlaps
    (dict(rows=2, row_bytes=4, pitch=4, src=0xfffb), "bad_range"),   # last byte 0x10002
    (dict(rows=2, row_bytes=4, pitch=4, src=0xfff8), None),     # last byte 0xffff
    (dict(rows=1, row_bytes=2, dst=0xffff), "bad_range"),
    (dict(rows=3, row_bytes=1, pitch=0x80, dst=0xfeff), None),     # last byte 0xffff
])
def test_refusal_reasons(desc, reason):
    assert refusal(PARAMS["tiny"], dict(valid=1, **desc)) == reason
    assert refusal(PARAMS["tiny"], dict(valid=0, **desc)) is None


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


def test_driver_waits_for_a_descriptor_in_use():
    """``Driver.program_descriptor`` on a descriptor with a queued trigger: refused as in
    use, retried until the DMA has started the trigger (here after a few bus reads), which
    runs the old descriptor; with the DMA stuck, a RuntimeError after ``poll_limit`` tries
    and the table unchanged."""
    import asyncio

    from sim_models.csr import ModelBus
    from t3hw.sw.driver import Driver

    p = EngineParams(cmd_width=4)
    old = dict(src=0x1000, rows=2, row_bytes=64, pitch=128, device=1, dst=0x2000, tile=3)
    new = dict(old, tile=4)

    class SlowDma(ModelBus):
        """The DMA starts its queued descriptor after ``start_after`` bus reads."""
        start_after = None

        async def read(self, addr):
            if self.start_after is not None:
                self.start_after -= 1
                if self.start_after == 0:
                    self.targets.dma.next_read()
            return await super().read(addr)

    async def body():
        bus = SlowDma(p)
        dma = bus.targets.dma
        driver = Driver(bus, p, poll_limit=4)
        await driver.check()
        await driver.program_descriptor(5, **old)
        assert dma.trigger(5)
        with pytest.raises(RuntimeError, match=r"descriptor 5 still in use after 4 tries"):
            await driver.program_descriptor(5, **new)
        assert dma.table[5]["tile"] == 3 and dma.stats["desc_busy"] == 4
        bus.start_after = 12
        await driver.program_descriptor(5, **new)
        assert dma.table[5]["tile"] == 4 and 4 < dma.stats["desc_busy"]
        assert dma.bursts_left[0][1].tile == 3          # the trigger runs the old one
        assert not (await driver.errors())["dma"]["desc_busy"]

    asyncio.run(body())
