# SPDX-License-Identifier: Apache-2.0
"""Reference model of the tracker (:mod:`t3hw.hw.tracker`).

Two levels, with the RTL's semantics and the RTL's layouts:

* :class:`TrackerModel`: the transaction semantics: arm, disarm, observe a write, get the
  trigger it fires, with the same sticky errors and counters. The performance model and the
  reference engine use it.
* :class:`TrackerCycleModel`: the same state machine with the RTL's timing (five-stage
  pipeline, trigger and ack queues, programming and acks only in cycles with no write, the
  ``hold`` request). The cocotb testbench steps it once per clock and compares every
  output, every cycle.

Field names of errors and counters come from :func:`t3hw.spec.layouts.tracker_errors_layout` and
:func:`t3hw.spec.layouts.tracker_stats_layout`, so they match the RTL's ports bit for bit.
"""

from collections import deque
from dataclasses import dataclass

from t3hw.spec.layouts import (TrackOp, TrackResult, WriteSource, tracker_errors_layout,
                               tracker_stats_layout)
from t3hw.spec.params import EngineParams

from .env import BlockModel


__all__ = ["Trigger", "Entry", "TrackerModel", "TrackerCycleModel", "HOLD_INTERVAL"]

#: Cycles between two ``hold`` requests (:data:`t3hw.hw.tracker.HOLD_INTERVAL`).
HOLD_INTERVAL = 8


@dataclass(frozen=True)
class Trigger:
    """A trigger: the DMA command index and the tile that completed."""
    cmd:  int
    tile: int


@dataclass
class Entry:
    """One armed tracker entry."""
    tag:       int
    threshold: int
    count:     int
    cmd:       int
    rearm:     bool


_SOURCE_STAT = {
    WriteSource.COMPUTE: "writes_compute",
    WriteSource.DMA:     "writes_dma",
    WriteSource.REMOTE:  "writes_remote",
}


class TrackerModel(BlockModel):
    """Transaction-level tracker: a direct-mapped table of :class:`Entry`, and per entry the
    firings whose trigger the DMA has not taken yet.

    Parameters
    ----------
    params : EngineParams, optional
        Table geometry and field widths (default: the paper's).
    auto_take : bool
        The DMA takes every trigger as it fires (no back-pressure): the transaction-level
        users (performance model, reference engine). With False, each firing stays pending
        until :meth:`ack`, as in the RTL.

    Attributes
    ----------
    errors : dict of str to bool
        Sticky error bits, keyed by the RTL's field names.
    stats : dict of str to int
        Counters, keyed by the RTL's field names (wrapping at ``counter_width``).
    pending : dict of int to int
        Firings not yet taken, by table index (absent: none).
    """

    def __init__(self, params: EngineParams = None, *, auto_take=True):
        super().__init__(params, tracker_errors_layout, tracker_stats_layout)
        self.table = {}
        self.pending = {}
        self.kept = {}              # index -> Trigger to send for its pending firings
        self.auto_take = auto_take
        self.events = set()         # error events of the requests since last cleared

    def _err(self, name):
        self.errors[name] = True
        self.events.add(name)

    # -- helpers -------------------------------------------------------------------------
    def _split(self, tile):
        p = self.params
        if not 0 <= tile < (1 << p.tile_width):
            raise ValueError(f"tile must be in [0, {(1 << p.tile_width) - 1}], not {tile!r}")
        return tile & (p.tracker_entries - 1), tile >> p.index_width

    def entry(self, tile):
        """The armed :class:`Entry` of ``tile``, or ``None``."""
        index, tag = self._split(tile)
        e = self.table.get(index)
        return e if e is not None and e.tag == tag else None

    def state(self, tile):
        """The entry of ``tile``'s index as the RTL's ``result`` shows it: ``{valid, rearm,
        pending, threshold, count, cmd}`` (fields of an entry that is neither armed nor
        pending are 0 here; the RTL's are don't-care except ``valid`` and ``pending``)."""
        index, _ = self._split(tile)
        e = self.table.get(index)
        out = {"valid": int(e is not None), "pending": self.pending.get(index, 0)}
        if e is not None:
            out.update(rearm=int(e.rearm), threshold=e.threshold, count=e.count, cmd=e.cmd)
        return out

    # -- requests ------------------------------------------------------------------------
    def arm(self, tile, threshold, cmd, rearm=False):
        """Arm ``tile``. Returns False (and sets an error) if the request is rejected."""
        return self.arm_result(tile, threshold, cmd, rearm) == TrackResult.OK

    def arm_result(self, tile, threshold, cmd, rearm=False):
        """Arm ``tile``; the :class:`TrackResult` verdict."""
        p = self.params
        index, tag = self._split(tile)
        if not 0 <= threshold <= p.max_threshold:
            raise ValueError(f"threshold must be in [0, {p.max_threshold}], not {threshold!r}")
        if not 0 <= cmd < (1 << p.cmd_width):
            raise ValueError(f"cmd must be in [0, {(1 << p.cmd_width) - 1}], not {cmd!r}")
        if threshold == 0:
            self._err("bad_threshold")
            return TrackResult.BAD_THRESHOLD
        if index in self.table or self.pending.get(index):
            self._err("reprogram")
            return TrackResult.BUSY
        self.table[index] = Entry(tag=tag, threshold=threshold, count=0, cmd=cmd,
                                  rearm=bool(rearm))
        return TrackResult.OK

    def disarm(self, tile):
        """Disarm ``tile`` if it is armed; returns whether it was. Its pending firings still
        leave."""
        index, tag = self._split(tile)
        e = self.table.get(index)
        if e is not None and e.tag == tag:
            del self.table[index]
            return True
        return False

    def program(self, op, tile, threshold=0, cmd=0, rearm=0):
        """Apply one programming request as the RTL's ``program`` port carries it; the
        :class:`TrackResult` verdict."""
        op = getattr(op, "value", op)
        if op == TrackOp.ARM.value:
            return self.arm_result(tile, threshold, cmd, rearm)
        if op == TrackOp.DISARM.value:
            return TrackResult.OK if self.disarm(tile) else TrackResult.NOT_ARMED
        if op == TrackOp.READ.value:
            return TrackResult.OK if self.entry(tile) is not None else TrackResult.NOT_ARMED
        self._err("bad_op")
        return TrackResult.BAD_OP

    def answer(self, op, tile, threshold=0, cmd=0, rearm=0):
        """Apply one programming request (:meth:`program`); the fields of the RTL's
        ``result`` for it (:func:`~t3hw.spec.layouts.tracker_result_layout`): the request's
        ``op`` and ``tile``, the verdict ``code`` and the entry's :meth:`state` after it."""
        code = self.program(op, tile, threshold, cmd, rearm)
        return {"op": getattr(op, "value", op), "code": code.value, "tile": tile,
                **self.state(tile)}

    def observe(self, tile, beats=1, kind=0, source=WriteSource.COMPUTE):
        """Count one granted write; return the :class:`Trigger` it fires, or ``None``.

        ``kind`` does not change the count (stores and updates both count); ``source``
        selects the statistics counter. A firing of a re-arm entry with
        ``2**pending_width - 1`` firings pending is lost (``overflow``) and returns None.
        """
        p = self.params
        if not 0 <= beats < (1 << p.beats_width):
            raise ValueError(f"beats must be in [0, {(1 << p.beats_width) - 1}], not {beats!r}")
        self._bump(_SOURCE_STAT[WriteSource(source)])
        e = self.entry(tile)
        if e is None:
            self._err("unprogrammed")
            self._bump("unprogrammed")
            return None
        new = e.count + beats
        if new < e.threshold:
            e.count = new
            return None
        if new > e.threshold:
            self._err("overcount")
        index = tile & (p.tracker_entries - 1)
        if e.rearm:
            e.count = 0
        else:
            del self.table[index]
        if self.pending.get(index, 0) == (1 << p.pending_width) - 1:
            self._err("overflow")
            self._bump("dropped")
            return None
        self._bump("triggers")
        trig = Trigger(cmd=e.cmd, tile=tile)
        if not self.auto_take:
            self.pending[index] = self.pending.get(index, 0) + 1
            self.kept[index] = trig
        return trig

    def ack(self, tile):
        """The DMA took a trigger of ``tile``'s entry: one firing less. Returns the trigger
        to send again if firings remain, else None."""
        index, _ = self._split(tile)
        left = self.pending.get(index, 0) - 1
        if left < 0:
            raise AssertionError(f"ack of tile {tile} with no firing pending")
        if left:
            self.pending[index] = left
            return self.kept[index]
        del self.pending[index]
        return None

    def held(self, cmd):
        """Whether a pending firing names DMA command ``cmd`` (its descriptor must not be
        rewritten: the RTL's ``desc_held``)."""
        return any(self.kept[i].cmd == cmd for i in self.pending)

    def unprogrammed_write(self, source=WriteSource.COMPUTE):
        """A write observed while the table is being cleared after reset."""
        self._bump(_SOURCE_STAT[WriteSource(source)])
        self._err("unprogrammed")
        self._bump("unprogrammed")


class TrackerCycleModel:
    """The tracker with the RTL's cycle timing, stepped once per clock.

    Call :meth:`expected` for the outputs the RTL must show during a cycle, then :meth:`step`
    with the inputs it samples at the end of that cycle.

    Parameters
    ----------
    params : EngineParams, optional
    """

    def __init__(self, params: EngineParams = None):
        self.model = TrackerModel(params, auto_take=False)
        self.params = self.model.params
        self.queue = deque()    # triggers (tokens) for the DMA
        self.acks = deque()     # tiles of the triggers the DMA took
        self.s1 = None          # ("write" | "stale" | "prog" | "ack", fields) or None
        self.s2 = None          # the same, one stage on
        self.s3 = None          # the same, two stages on: the request the RTL updates
        self.s4 = None          # the Trigger S3 pushes, in the queue next cycle
        self.result = None      # the result S3 answered last cycle (shown this cycle)
        self.capture = None     # (tile, cmd) of the last error events
        self.hold = False
        self.hold_wait = 0
        self.sweep_left = 0     # cycles of the reset sweep still to run

    def reset(self):
        """``rst`` was just released: the sweep of the table and of the ``held`` counters
        takes ``max(tracker_entries, 2**cmd_width)`` cycles."""
        self.sweep_left = self.params.sweep_cycles

    @property
    def busy(self):
        """The ``busy`` output during this cycle."""
        return self.sweep_left > 0

    def expected(self, write_valid):
        """Outputs during this cycle: (program_ready, trigger_valid, trigger_payload or None)."""
        head = self.queue[0] if self.queue else None
        return (not write_valid and not self.busy, head is not None, head)

    def step(self, *, write=None, program=None, trigger_ready=False):
        """Advance one clock.

        Parameters
        ----------
        write : dict or None
            Fields of the observed write this cycle (``write.valid``), else None.
        program : dict or None
            Fields of the programming request *offered* this cycle (``program.valid``).
        trigger_ready : bool
            ``trigger.ready`` this cycle.

        Returns
        -------
        (bool, Trigger or None)
            Whether ``program`` was taken, and the trigger transferred on ``trigger`` this
            cycle (valid and ready).
        """
        p, busy = self.params, self.busy
        took = program is not None and write is None and not busy
        # hold: a request waits in a cycle with a write (registered).
        raise_ = (not busy and write is not None and (program is not None or bool(self.acks))
                  and self.hold_wait == 0)
        self.hold = raise_
        self.hold_wait = HOLD_INTERVAL - 1 if raise_ else max(0, self.hold_wait - 1)
        # S0 takes a write, else the programming request, else an ack.
        if write is not None:
            s0 = ("stale" if busy else "write", write)
        elif took:
            s0 = ("prog", program)
        elif not busy and program is None and self.acks:
            s0 = ("ack", {"tile": self.acks.popleft()})
        else:
            s0 = None
        popped = None
        if self.queue and trigger_ready:
            popped = self.queue.popleft()
            self.acks.append(popped.tile)
        if self.s4 is not None:
            self.queue.append(self.s4)
            assert len(self.queue) <= p.tracker_entries, "trigger queue overflow (model)"
        self.s4, self.result = None, None
        if self.s3 is not None:
            self._s3(*self.s3)
        self.s3, self.s2, self.s1 = self.s2, self.s1, s0
        if self.sweep_left:
            self.sweep_left -= 1
        return took, popped

    def _s3(self, what, fields):
        """S3: apply one request to the transaction model; the token to push, the result,
        the capture of its error events."""
        m = self.model
        m.events = set()
        cmd = 0
        if what == "stale":
            m.unprogrammed_write(fields["source"])
        elif what == "write":
            index = fields["tile"] & (self.params.tracker_entries - 1)
            first = not m.pending.get(index)
            e = m.entry(fields["tile"])
            cmd = e.cmd if e is not None else 0
            trig = m.observe(fields["tile"], fields["beats"], fields["kind"], fields["source"])
            if trig is not None and first:
                self.s4 = trig
        elif what == "ack":
            self.s4 = m.ack(fields["tile"])
        else:
            cmd = fields.get("cmd", 0)
            self.result = m.answer(**fields)
        if m.events:
            self.capture = {"tile": fields["tile"], "cmd": cmd}

    def outputs(self):
        """``result`` (a dict of its fields, or None) and ``hold`` during this cycle."""
        return self.result, self.hold

    def desc_held(self, query):
        """``desc_held`` during this cycle for ``desc_query = query``: the reset sweep runs,
        or a pending firing names ``query`` (S3's requests so far applied)."""
        return self.busy or self.model.held(query)
