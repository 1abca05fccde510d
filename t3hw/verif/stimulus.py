# SPDX-License-Identifier: Apache-2.0
"""Seeded random traffic for the tracker, shared by the amaranth.sim and cocotb tests.

:class:`TrackerTraffic` produces, cycle by cycle, what a memory controller and a driver
would present to the tracker: bursts of writes to armed tiles (often back-to-back to one
tile), idle cycles, arm / disarm requests held until accepted, trigger back-pressure in
bursts, and a small rate of deliberate errors (writes to unarmed tiles, writes that overshoot
a threshold, re-arming a live entry, threshold 0). It steers by the reference model's state
but never predicts outcomes: scoring is the model's job.
"""


from t3hw.spec.layouts import TrackOp, WriteKind, WriteSource

from .env import Stall


__all__ = ["TrackerTraffic"]


class TrackerTraffic:
    """Random tracker stimulus.

    Parameters
    ----------
    model : sim_models.tracker.TrackerCycleModel
        Read (never written) to aim writes at armed tiles.
    rng : random.Random
        Seeded source of randomness.
    idle : float
        Probability of a cycle with no write, in [0, 1).
    stall : float
        Probability that a back-pressure burst (``trigger.ready`` low for 1..``max_stall``
        cycles) starts in a cycle, in [0, 1).
    errors : float
        Rate of deliberately bad requests, in [0, 1).
    max_stall : int
        Longest back-pressure burst, in cycles.
    """

    def __init__(self, model, rng, *, idle=0.25, stall=0.05, errors=0.01, max_stall=24):
        for name, value in (("idle", idle), ("stall", stall), ("errors", errors)):
            if not 0 <= value < 1:
                raise ValueError(f"{name} must be in [0, 1), not {value!r}")
        if not isinstance(max_stall, int) or max_stall < 1:
            raise ValueError(f"max_stall must be a positive integer, not {max_stall!r}")
        self.model, self.rng = model, rng
        self.p = model.params
        self.idle, self.errors = idle, errors
        self.pending = None        # programming request held until accepted
        self.trigger_stall = Stall(rng, stall, max_stall)
        self.hot = None            # tile of the current back-to-back run
        self.max_beats = (1 << self.p.beats_width) - 1

    def _threshold(self):
        r = self.rng.random()
        if r < 0.3 or self.p.max_threshold == 1:
            return 1
        if r < 0.8:
            return self.rng.randint(2, min(16, self.p.max_threshold))
        if r < 0.98:
            return self.rng.randint(1, min(256, self.p.max_threshold))
        return self.p.max_threshold

    def _new_program(self):
        p, rng, table = self.p, self.rng, self.model.model.table
        armed = list(table.items())
        r = rng.random()
        if r < self.errors * 3 and armed:                   # re-arm a live entry
            index, e = rng.choice(armed)
            tile = (e.tag << p.index_width) | index
            return dict(op=TrackOp.ARM, tile=tile, threshold=self._threshold(),
                        cmd=rng.getrandbits(p.cmd_width), rearm=0)
        if r < self.errors * 4:                             # threshold 0
            return dict(op=TrackOp.ARM, tile=rng.getrandbits(p.tile_width), threshold=0,
                        cmd=0, rearm=0)
        if r < self.errors * 5:                             # unknown operation code
            return dict(op=3, tile=rng.getrandbits(p.tile_width), threshold=0, cmd=0, rearm=0)
        if r < 0.1 and armed:                               # disarm
            index, e = rng.choice(armed)
            return dict(op=TrackOp.DISARM, tile=(e.tag << p.index_width) | index,
                        threshold=0, cmd=0, rearm=0)
        if r < 0.16:                                        # read back (any tile)
            tile = rng.getrandbits(p.tile_width)
            if armed and rng.random() < 0.7:
                index, e = rng.choice(armed)
                tile = (e.tag << p.index_width) | index
            return dict(op=TrackOp.READ, tile=tile, threshold=0, cmd=0, rearm=0)
        free = [i for i in range(p.tracker_entries) if i not in table]
        if not free:
            return None
        index = rng.choice(free)
        tag = rng.getrandbits(p.tag_width) if p.tag_width else 0
        return dict(op=TrackOp.ARM, tile=(tag << p.index_width) | index,
                    threshold=self._threshold(), cmd=rng.getrandbits(p.cmd_width),
                    rearm=int(rng.random() < 0.15))

    def _new_write(self):
        p, rng, table = self.p, self.rng, self.model.model.table
        source = rng.choice(list(WriteSource))
        kind = rng.choice(list(WriteKind))
        if not table or rng.random() < self.errors:
            return dict(tile=rng.getrandbits(p.tile_width), beats=rng.randint(1, self.max_beats),
                        kind=kind, source=source)
        if self.hot is None or (self.hot & (p.tracker_entries - 1)) not in table \
                or rng.random() < 0.3:
            index, e = rng.choice(list(table.items()))
            self.hot = (e.tag << p.index_width) | index
        e = table[self.hot & (p.tracker_entries - 1)]
        left = max(1, e.threshold - e.count)
        if rng.random() < self.errors:
            beats = rng.randint(1, self.max_beats)          # may overshoot
        else:
            beats = rng.randint(1, min(left, self.max_beats))
        return dict(tile=self.hot, beats=beats, kind=kind, source=source)

    def cycle(self):
        """Inputs for one cycle: ``(write or None, program or None, trigger_ready)``.

        ``program`` is the request presented (valid) this cycle; call :meth:`accepted`
        when it was accepted (valid and ready).
        """
        rng = self.rng
        ready = self.trigger_stall.ready()
        if self.pending is None and (rng.random() < 0.08 or not self.model.model.table):
            self.pending = self._new_program()
        # ``hold`` asks for a cycle without a write: give it most of the time (the tracker
        # loses nothing either way; programming and acks just wait longer).
        gap = self.model.hold and rng.random() < 0.9
        write = None if gap or rng.random() < self.idle else self._new_write()
        return write, self.pending, ready

    def accepted(self):
        """The presented programming request was accepted."""
        self.pending = None
