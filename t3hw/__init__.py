# SPDX-License-Identifier: Apache-2.0
"""t3hw: open RTL for T3-style track-and-trigger communication offload."""

from t3hw.spec.params import DEFAULT, EngineParams


__all__ = ["EngineParams", "DEFAULT"]
__version__ = "0.1.0"
