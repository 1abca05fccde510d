# SPDX-License-Identifier: Apache-2.0
"""Reference model of the memory-controller arbiter (:mod:`t3hw.arbiter`)."""

from t3hw.layouts import WINDOW_LOG2_WIDTH, ArbPolicy


__all__ = ["MAX_WINDOW_LOG2", "config_ok"]

#: Largest ``window_log2`` the arbiter accepts (a window of 2**24 cycles).
MAX_WINDOW_LOG2 = 24
assert MAX_WINDOW_LOG2 < 1 << WINDOW_LOG2_WIDTH


def config_ok(cfg):
    """Whether the arbiter accepts the configuration ``cfg`` (a dict of the fields of
    :func:`t3hw.layouts.arbiter_config_layout`); a rejected one sets ``bad_config``."""
    return (cfg["policy"] in {p.value for p in ArbPolicy}
            and cfg["starvation_limit"] >= 1
            and cfg["window_log2"] <= MAX_WINDOW_LOG2
            and (cfg["threshold"] > 0 or cfg["saturation"] > 0))
