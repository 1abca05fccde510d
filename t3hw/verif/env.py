# SPDX-License-Identifier: Apache-2.0
"""What every block's cycle-level environment shares.

* :class:`StreamEnv`: base of the simulator-agnostic environments that drive a block's
  streams and score its outputs (amaranth.sim and cocotb only move values to the ports).
* :class:`Stall`: back-pressure in bursts.

The reference models' base (:class:`~sim_models.env.BlockModel`) is in :mod:`sim_models.env`.
"""


__all__ = ["StreamEnv", "Stall"]


class StreamEnv:
    """Base of the cycle-level environments: names the ports and moves values to them.

    A subclass lists its input streams (driven here: ``valid`` and ``payload``, its
    ``ready`` sampled), output streams (``ready`` driven, ``valid`` and ``payload`` sampled),
    scalar inputs and sampled flags (and the input streams that are always ready), and
    implements :meth:`inputs` and :meth:`check`.
    Port members are named as in the generated Verilog (``read__valid``); an amaranth.sim
    driver splits the names at ``__``.

    Each cycle a driver calls :meth:`apply` with a setter, settles the design, calls
    :meth:`sample` with a getter, and clocks.
    """

    in_streams   = ()
    out_streams  = ()
    in_flags     = ()
    out_flags    = ()
    #: Streams without a ``ready`` port (``always_ready``): an input is sampled as ready; an
    #: output's ready is not driven (:meth:`inputs` gives True for it).
    always_ready = ()

    def __init__(self):
        self.cycle = 0
        self._held = {}             # output stream -> payload it showed with ready low

    def inputs(self):
        """This cycle's inputs: ``{in_stream: payload int or None, out_stream: ready bool,
        in_flag: int}``."""
        raise NotImplementedError

    def check(self, outs):
        """Score this cycle's outputs ``{in_stream: ready, out_stream: payload or None,
        out_flag: int}`` and advance."""
        raise NotImplementedError

    def apply(self, setter):
        """Drive this cycle's inputs through ``setter(name, int)``."""
        ins = self._ins = self.inputs()
        for name in self.in_streams:
            payload = ins[name]
            setter(f"{name}__valid", int(payload is not None))
            if payload is not None:
                setter(f"{name}__payload", payload)
        for name in self.out_streams:
            if name not in self.always_ready:
                setter(f"{name}__ready", int(ins[name]))
        for name in self.in_flags:
            setter(name, ins[name])

    def sample(self, getter):
        """Read this cycle's outputs through ``getter(name) -> int``, check the stream rules
        on every output stream, and :meth:`check` them."""
        ins, outs = self._ins, {}
        for name in self.in_streams:
            outs[name] = name in self.always_ready or bool(getter(f"{name}__ready"))
        for name in self.out_streams:
            outs[name] = getter(f"{name}__payload") if getter(f"{name}__valid") else None
            if name in self._held:
                assert outs[name] == self._held[name], \
                    f"cycle {self.cycle}: {name} changed from {self._held[name]:#x} to " \
                    f"{outs[name]!r} before it was taken"
                del self._held[name]
            if outs[name] is not None and not ins[name]:
                self._held[name] = outs[name]
        for name in self.out_flags:
            outs[name] = getter(name)
        self.check(outs)
        self.cycle += 1


class Stall:
    """Back-pressure in bursts: ``ready`` low for 1 .. ``longest`` cycles, starting with
    probability ``rate`` per cycle."""

    def __init__(self, rng, rate, longest):
        self.rng, self.rate, self.longest = rng, rate, longest
        self.left = 0
        self.hold = False       # forced low (directed tests)

    def ready(self):
        if self.hold:
            return False
        if self.left:
            self.left -= 1
            return False
        if self.rate and self.rng.random() < self.rate:
            self.left = self.rng.randint(1, self.longest) - 1
            return False
        return True
