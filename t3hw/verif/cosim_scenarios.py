# SPDX-License-Identifier: Apache-2.0
"""The co-simulation regression's scenario sizes, shared by its tests
(``cocotb_tests/test_cosim.py``), the sweep's test and the documented measurements
(``docs/cosim.md``): small engines and a narrow layer, so that a system top builds in a
minute and a run takes seconds."""

from sim_models.cosim import CosimConfig
from t3hw.spec.params import EngineParams


__all__ = ["REGRESSION_PARAMS", "small"]

#: Engines sized for these runs (64 tracker entries and descriptors, narrower addresses and
#: counters): the same RTL, a smaller system top to build. The co-simulation's own settings
#: (CosimConfig.params) are kept: T3-MCA saturation and window, a trigger queue as deep as
#: the tracker, 64 DMA reads in flight.
REGRESSION_PARAMS = EngineParams(tracker_entries=64, tile_width=8, cmd_width=6, count_width=10,
                                 addr_width=36, device_width=3, counter_width=20,
                                 rows_width=8, row_bytes_width=12, pitch_width=16,
                                 max_outstanding=64, mca_saturation=64, mca_window_log2=12)


def small(gpus, **kw):
    """The regression's scenario on ``gpus`` engines (Mega-GPT-2 FC-2 at TP 8, ``32 gpus``
    tokens, 256 columns, 16-B links of 200 cycles); ``kw`` sets the other fields."""
    return CosimConfig(gpus=gpus, model="Mega-GPT-2", tp=8, sublayer="FC-2", tokens=32 * gpus,
                       hidden=256, link_bytes_per_cycle=16.0, link_latency=200,
                       params=REGRESSION_PARAMS, **kw)
