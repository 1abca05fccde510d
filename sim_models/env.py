# SPDX-License-Identifier: Apache-2.0
"""What every block's reference model shares.

* :class:`BlockModel`: the sticky error bits and wrapping counters of a block, keyed by the
  field names of its ``errors`` and ``stats`` layouts.

The environments that drive a block's streams (:class:`~t3hw.verif.env.StreamEnv`,
:class:`~t3hw.verif.env.Stall`) are in :mod:`t3hw.verif.env`.
"""

from t3hw.spec.layouts import Codec
from t3hw.spec.params import EngineParams


__all__ = ["BlockModel"]


class BlockModel:
    """Sticky errors and counters of a block, as its RTL ``errors`` and ``stats`` ports.

    Parameters
    ----------
    params : EngineParams or None
        The block's parameters (default: the paper's).
    errors_layout, stats_layout : StructLayout
        The block's ``errors`` and ``stats`` layouts.

    Attributes
    ----------
    errors : dict of str to bool
        Sticky error bits, keyed by the RTL's field names.
    stats : dict of str to int
        Counters, keyed by the RTL's field names (wrapping at ``counter_width``).
    """

    def __init__(self, params, errors_layout, stats_layout):
        self.params = params if params is not None else EngineParams()
        self.errors_codec = Codec(errors_layout(self.params))
        self.stats_codec  = Codec(stats_layout(self.params))
        self.errors = {name: False for name in self.errors_codec.names}
        self.stats  = {name: 0 for name in self.stats_codec.names}

    def _bump(self, name, by=1):
        self.stats[name] = (self.stats[name] + by) & ((1 << self.params.counter_width) - 1)

    def error_bits(self):
        """The sticky errors packed as the RTL's ``errors`` port."""
        return self.errors_codec.pack(**{k: int(v) for k, v in self.errors.items()})

    def clear_errors(self, names=None):
        """Clear the named sticky errors (all by default)."""
        for name in (self.errors if names is None else names):
            self.errors[name] = False
