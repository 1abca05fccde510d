# SPDX-License-Identifier: Apache-2.0
"""The engine loop scenario (:mod:`t3hw.verif.engine_env`) against the reference engine
(:class:`sim_models.engine_model.EngineModel`): the packets the scenario expects the RTL to
send, and the final all-gather copies, are what the reference semantics produce."""

from collections import Counter

import numpy as np
import pytest

from t3hw.verif.engine_env import LoopScenario, reference_run
from t3hw.spec.params import EngineParams


@pytest.mark.parametrize("params, shape", [
    (EngineParams(tracker_entries=32, tile_width=8, count_width=8, cmd_width=5, addr_width=20,
                  pitch_width=16, burst_bytes=16), (8, 4, 2)),
    (EngineParams(), (16, 4, 4)),
])
def test_reference_engine_agrees_with_scenario(params, shape, seed):
    tiles, rows, row_bursts = shape
    sc = LoopScenario(params, np.random.default_rng(seed), tiles=tiles, rows=rows,
                      row_bursts=row_bursts)
    sent, z = reference_run(sc)
    assert Counter(sent) == Counter(sc.expected_packets())
    for chunk, want in sc.final_z().items():
        assert np.array_equal(z[chunk], want)


def test_scenario_rejects_what_does_not_fit():
    with pytest.raises(ValueError, match=r"tiles must be in \[1, 16\], not 17"):
        LoopScenario(EngineParams(tracker_entries=32, tile_width=8, cmd_width=5),
                     np.random.default_rng(0), tiles=17)
