# SPDX-License-Identifier: Apache-2.0
"""Fast amaranth.sim tests of the tracker against its cycle model (no Verilog, no Verilator)."""

import random

import pytest

from t3hw.verif.stimulus import TrackerTraffic
from sim_models.tracker import Trigger
from t3hw.verif.amsim import run_tracker
from t3hw.verif.tracker_check import hold_past_capacity, read_back_and_verdicts
from t3hw.spec.layouts import TrackOp
from t3hw.spec.params import EngineParams
from t3hw.hw.tracker import Tracker


PARAMS = {
    # Degenerate: no tag bits, 1-bit counts and beats, one-entry queue.
    "minimal": EngineParams(tracker_entries=2, tile_width=1, count_width=1, beats_width=1,
                            cmd_width=1, counter_width=8),
    "tiny":    EngineParams(tracker_entries=4, tile_width=4, count_width=4, beats_width=2,
                            cmd_width=2, counter_width=16),
    "default": EngineParams(),
}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_random_against_model(name, seed):
    rng = random.Random(seed)

    async def body(tb):
        traffic = TrackerTraffic(tb.model, rng, stall=0.1)
        for _ in range(3000):
            write, program, ready = traffic.cycle()
            took, _ = await tb.cycle(write, program, ready)
            if took:
                traffic.accepted()
        await tb.drain()
        assert tb.model.model.stats["triggers"] > 0

    run_tracker(PARAMS[name], body)


def test_back_to_back_same_tile_counts_every_write():
    async def body(tb):
        await tb.cycle(program=dict(op=TrackOp.ARM, tile=7, threshold=12, cmd=3))
        got = []
        for _ in range(12):
            got.append((await tb.cycle(write=dict(tile=7, beats=1, kind=0, source=0)))[1])
        for _ in range(5):                  # the trigger latency
            got.append((await tb.cycle())[1])
        assert [t for t in got if t] == [Trigger(cmd=3, tile=7)]
        assert not any(tb.model.model.errors.values())

    run_tracker(PARAMS["default"], body)


def test_queue_passes_a_trigger_every_cycle():
    """Threshold-1 writes to distinct tiles, every cycle: one trigger per cycle, no loss."""
    params = PARAMS["tiny"]

    async def body(tb):
        for tile in range(4):
            await tb.cycle(program=dict(op=TrackOp.ARM, tile=tile, threshold=1, cmd=tile))
        got = []
        for tile in range(4):
            got.append((await tb.cycle(write=dict(tile=tile, beats=1, kind=0, source=0)))[1])
        for _ in range(5):                  # the trigger latency
            got.append((await tb.cycle())[1])
        assert [t.tile for t in got if t] == [0, 1, 2, 3]
        await tb.drain()
        assert tb.model.model.stats["dropped"] == 0

    run_tracker(params, body)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_hold_past_capacity(name):
    run_tracker(PARAMS[name], hold_past_capacity)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_read_back_and_verdicts(name):
    run_tracker(PARAMS[name], read_back_and_verdicts)


@pytest.mark.parametrize("kwargs, message", [
    (dict(tracker_entries=100), "tracker_entries must be a power of two in [2, 65536], not 100"),
    (dict(tracker_entries=256, tile_width=7), "tile_width must be in [8, 32]"),
    (dict(count_width=0), "count_width must be an integer in [1, 24], not 0"),
    (dict(pending_width=True), "pending_width must be an integer in [1, 16], not True"),
    (dict(beats_width=5, count_width=4), "beats_width must be in [1, 4]"),
])
def test_bad_parameters_raise_with_value_and_range(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        EngineParams(**kwargs)


def test_tracker_rejects_non_params():
    with pytest.raises(TypeError, match="params must be an EngineParams"):
        Tracker({"tracker_entries": 4})
