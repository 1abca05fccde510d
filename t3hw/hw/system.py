# SPDX-License-Identifier: Apache-2.0
"""The system top: ``n`` engines in one Verilog module, for co-simulation.

Each engine's ports are brought out unchanged under its index: engine ``i``'s ``store``
stream is ``e<i>__store__valid``, ``e<i>__store__payload`` and ``e<i>__store__ready``, its
register bus ``e<i>__bus__addr`` and so on. The engines share the clock and reset and
nothing else: the network, the DRAMs and the GPU cores are the co-simulation's models, which
connect ``e<i>__net_tx`` to ``e<j>__net_rx``.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import Out, connect, flipped

from .engine import Engine
from t3hw.spec.params import EngineParams, check_params


__all__ = ["System", "MAX_ENGINES", "check_engines"]

#: Most engines in one system (a ring of 2**device_width GPUs is the network's limit).
MAX_ENGINES = 64


def check_engines(params, n, owner=None):
    """Raise ``ValueError`` unless ``n`` engines of ``params`` fit one system (the ring's
    device numbers); ``owner``, an elaboratable being built, is then not warned about."""
    top = min(MAX_ENGINES, 1 << params.device_width)
    if not isinstance(n, int) or isinstance(n, bool) or not 2 <= n <= top:
        if owner is not None:
            owner._MustUse__silence = True
        raise ValueError(f"n must be an integer in [2, {top}] (device_width="
                         f"{params.device_width}), not {n!r}")


class System(wiring.Component):
    """``n`` :class:`~t3hw.hw.engine.Engine` instances side by side.

    Parameters
    ----------
    params : EngineParams
        Every engine's parameters; ``n`` must fit ``device_width``.
    n : int
        Engines, in [2, min(64, 2**device_width)].

    Members
    -------
    e0, e1, ... : Out(Engine(params).signature)
        Engine ``i``'s ports, with the engine's directions.
    """

    def __init__(self, params: EngineParams = EngineParams(), *, n=4):
        self._p = check_params(params, self)
        check_engines(params, n, self)
        self._engines = [Engine(params) for _ in range(n)]
        super().__init__({f"e{i}": Out(e.signature) for i, e in enumerate(self._engines)})

    @property
    def params(self):
        return self._p

    @property
    def n(self):
        return len(self._engines)

    def elaborate(self, platform):
        m = Module()
        for i, engine in enumerate(self._engines):
            m.submodules[f"e{i}"] = engine
            connect(m, flipped(getattr(self, f"e{i}")), engine)
        return m
