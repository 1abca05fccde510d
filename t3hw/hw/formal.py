# SPDX-License-Identifier: Apache-2.0
"""The formal property library the blocks' specs are written with.

Each block's module carries its own properties: a module-level ``formal_spec(...)`` builds a
*spec top* around the block (small parameters, every input driven by ``AnySeq``, the stream
rules assumed on its input streams, its properties asserted, ``Cover`` statements that show
the interesting events are reachable). Blocks whose properties need internal state publish it
in ``formal_view`` when, and only when, they are elaborated for ``platform="formal"``; the
``t3hw generate`` path elaborates with no platform, so ``rtl/`` has no assertion and does not
change by a byte.

* :class:`Spec`: a spec top whose ``sync`` domain has no reset, so every run starts from the
  registers' initial values (the state right after reset) and is never reset again;
* :func:`drive_inputs`, :func:`stream_rules` and :func:`past`: the building blocks of a spec.

The proofs themselves (which spec, at which depth) and the SymbiYosys runner are
:mod:`t3hw.tools.formal`.
"""

from amaranth import *
from amaranth.asserts import AnySeq
from amaranth.hdl import ValueCastable
from amaranth.lib import wiring


__all__ = ["Spec", "drive_inputs", "stream_rules", "past"]


class Spec(Elaboratable):
    """A spec top: ``body(m, platform)`` fills a module whose ``sync`` domain has no reset.

    The solver starts from the initial value of every register, which is its reset value, so
    each run begins right after a reset. The clock is the spec's only port (:attr:`ports`):
    a clock left undriven would be tied to 0, and Yosys would then freeze every register at
    its initial value, proving every property vacuously.
    """

    def __init__(self, body):
        self._body = body
        self._domain = ClockDomain("sync", reset_less=True)

    @property
    def ports(self):
        return [self._domain.clk]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = self._domain
        self._body(m, platform)
        return m


def _value(value):
    return value.as_value() if isinstance(value, ValueCastable) else Value.cast(value)


def drive_inputs(m, component):
    """Drive every input port of ``component`` (including the ``ready`` of its output
    streams) with ``AnySeq``: the solver chooses each of them freely in every cycle.
    Constant members (the ``ready`` of an ``always_ready`` stream) are skipped."""
    for _path, member, value in component.signature.flatten(component):
        if member.flow != wiring.In:
            continue
        value = _value(value)
        if isinstance(value, Const):
            continue
        m.d.comb += value.eq(AnySeq(len(value)))


def past(m, value, *, name=None):
    """A register holding ``value`` from the previous cycle (0 in the first cycle).

    The register is loaded in a submodule of its own, so it loads every cycle even when
    ``past`` is called inside an ``m.If``."""
    reg = Signal(value.shape(), name=name)
    loader = Module()
    loader.d.sync += reg.eq(value)
    m.submodules += loader
    return reg


def stream_rules(m, stream, check, name):
    """The stream transfer rules on ``stream`` (an :mod:`amaranth.lib.stream` interface):
    once ``valid`` is high and ``ready`` low, the next cycle has ``valid`` high and the same
    ``payload``. ``check`` is ``Assert`` for a stream the block drives, ``Assume`` for one it
    receives. Nothing to check on a stream without ``ready``."""
    if isinstance(_value(stream.ready), Const):
        return
    held = past(m, stream.valid & ~stream.ready, name=f"{name}_held")
    was  = past(m, _value(stream.payload), name=f"{name}_was")
    with m.If(held):
        m.d.comb += [
            check(stream.valid, f"{name}: valid fell before ready"),
            check(_value(stream.payload) == was, f"{name}: payload changed before ready"),
        ]
